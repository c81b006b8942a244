"""action.yml, run step by step as the runner runs a composite action, against a loopback GitHub.

The runner's part is played here: each `run:` step gets the environment the runner sets (the
step's `env:` with its expressions evaluated, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files of its
own), runs under `bash --noprofile --norc -eo pipefail`, and its outputs become the action's. A step's
`if:` is evaluated as GitHub does for the expressions action.yml uses, with the `github`, `strategy`,
`inputs`, `steps` and `runner` contexts. actions/cache really saves and restores, into a store that
several jobs (runners) share, as one cache scope does. The setup-python step is replaced by the Python
running these tests, and the install step by a wrapper around it, made unless a restored environment
is already there (as the real step skips the install for a cached environment).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fakegithub import TOKEN, FakeGitHub
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[2]
ACTION: dict[str, Any] = YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_TOKENS = re.compile(r"\s*('[^']*'|&&|\|\||!=|==|!|\(|\)|,|[A-Za-z_][\w.-]*)")
_OPERATORS = {"&&": "and", "||": "or", "!": "not", "==": "==", "!=": "!=", "(": "(", ")": ")", ",": ","}


@dataclass
class Run:
    code: int
    outputs: dict[str, str]
    stdout: str = ""
    stderr: str = ""
    summary: str = ""
    files: list[str] = field(default_factory=list)  # everything the steps wrote, for the token check
    skipped: list[str] = field(default_factory=list)  # the ids of steps whose `if:` was false


@dataclass
class Cache:
    """One cache scope: entries by key, each a copy of the folder saved; what was restored and saved."""

    root: Path
    restored: list[str] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)

    def entry(self, key: str) -> Path:
        return self.root / re.sub(r"[^\w.-]", "_", key)

    def restore(self, key: str, path: Path, prefixes: list[str] | None = None) -> bool:
        """The entry of `key`, else (as restore-keys) the latest saved whose key starts with a prefix."""
        found = key if self.entry(key).is_dir() else None
        for prefix in prefixes or []:
            if found is None:
                found = next((k for k in reversed(self.saved) if k.startswith(prefix)), None)
        if found is None:
            return False
        shutil.copytree(self.entry(found), path, dirs_exist_ok=True, symlinks=True)
        self.restored.append(found)
        return found == key

    def save(self, key: str, path: Path) -> None:
        if not self.entry(key).exists() and path.is_dir():  # a key once saved is never overwritten
            shutil.copytree(path, self.entry(key), symlinks=True)
            self.saved.append(key)


def read_outputs(text: str) -> dict[str, str]:
    values, lines, i = {}, text.split("\n"), 0
    while i < len(lines) - 1:
        name, _, delimiter = lines[i].partition("<<")
        end = lines.index(delimiter, i + 1)
        values[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return values


class Runner:
    """Plays GitHub's runner for the composite action in action.yml."""

    def __init__(self, tmp: Path, github: FakeGitHub, event: Path, cache: Cache | None = None) -> None:
        self.workspace = tmp / "workspace"
        self.temp = tmp / "runner-temp"
        self.workspace.mkdir(parents=True)
        self.temp.mkdir(parents=True)
        self.github, self.event = github, event
        self.cache = cache or Cache(tmp / "cache")
        self.runs = 0
        # The install step's stand-in: this test's Python, where the checker is installed (editable).
        self.python = self.temp / "onnx-release-checker" / "bin" / "python"
        self.extra_env: dict[str, str] = {}
        self.strategy = {"job-index": "0", "job-total": "1"}  # a job outside a matrix is its one leg

    def environment(self, run_id: int) -> dict[str, str]:
        return {
            "PATH": os.environ["PATH"],
            "HOME": str(self.temp),
            "PYTHONPATH": str(ROOT),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_ACTION_PATH": str(ROOT),
            "GITHUB_API_URL": self.github.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_REPOSITORY": "octo-org/octo-repo",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(self.event),
            "GITHUB_SHA": "f" * 40,  # the merge commit a pull_request run checks out
            "GITHUB_REF": "refs/pull/2/merge",
            "GITHUB_RUN_ID": str(run_id),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp),
            "RUNNER_OS": "Linux",
            "GITHUB_WORKFLOW": "Release check",
            "GITHUB_JOB": "check",
            "GITHUB_ACTION": "__octo-org_onnx-release-checker",
            **self.extra_env,
        }

    def run(self, **inputs: str) -> Run:
        self.runs += 1
        values = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        values.update({k.replace("_", "-"): v for k, v in inputs.items()})
        runner = {"temp": str(self.temp), "os": "Linux", "arch": "X64"}
        env = self.environment(100 + self.runs)
        github = {"event_name": env["GITHUB_EVENT_NAME"], "ref": env["GITHUB_REF"], "sha": env["GITHUB_SHA"],
                  "run_id": env["GITHUB_RUN_ID"]}  # fmt: skip
        context: dict[str, Any] = {"steps": {}, "runner": runner, "github": github, "strategy": self.strategy}
        context["inputs"] = {k: self.evaluate(v, context) for k, v in values.items()}
        result = Run(0, {})
        for step in ACTION["runs"]["steps"]:
            if "if" in step and not self.condition(str(step["if"]), context):
                context["steps"][step.get("id") or f"skipped-{len(result.skipped)}"] = {"outputs": {}}
                result.skipped.append(str(step.get("id") or step.get("name")))
                continue
            if not self.play(step, context, result):
                break
        result.outputs = {k: self.evaluate(v["value"], context) for k, v in ACTION["outputs"].items()}
        return result

    def play(self, step: dict[str, Any], context: dict[str, Any], result: Run) -> bool:
        uses = str(step.get("uses", ""))
        if uses.startswith("actions/cache"):
            outputs = self.use_cache(uses, step.get("with", {}), context)
            context["steps"][step.get("id") or uses] = {"outputs": outputs}
            return True
        if uses:  # actions/setup-python: this Python stands in
            context["steps"][step["id"]] = {"outputs": {"python-path": sys.executable}}
            return True
        if step.get("id") == "install":  # stands in: a wrapper, unless a restored environment has one
            self.install()
            context["steps"]["install"] = {"outputs": {"python": str(self.python)}}
            return True
        n = self.runs * 10 + len(context["steps"])
        files = {"GITHUB_OUTPUT": self.temp / f"output-{n}", "GITHUB_STEP_SUMMARY": self.temp / f"summary-{n}"}
        for path in files.values():
            path.write_text("", encoding="utf-8")
        env = {**self.environment(100 + self.runs), **{k: str(p) for k, p in files.items()}}
        env.update({k: self.evaluate(str(v), context) for k, v in step.get("env", {}).items()})
        script = self.temp / f"step-{n}.sh"
        script.write_text(step["run"], encoding="utf-8")
        where = self.evaluate(step["working-directory"], context) if "working-directory" in step else self.workspace
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        context["steps"][step["id"]] = {"outputs": read_outputs(files["GITHUB_OUTPUT"].read_text(encoding="utf-8"))}
        result.code, result.stdout, result.stderr = done.returncode, result.stdout + done.stdout, done.stderr
        result.summary += files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8")
        result.files += [p.read_text(encoding="utf-8") for p in files.values()]
        return done.returncode == 0

    def install(self) -> None:
        if self.python.is_file():  # restored from the cache: the real step, too, only checks its lock stamp
            return
        self.python.parent.mkdir(parents=True, exist_ok=True)
        self.python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
        self.python.chmod(self.python.stat().st_mode | stat.S_IEXEC)

    def use_cache(self, uses: str, given: dict[str, Any], context: dict[str, Any]) -> dict[str, str]:
        """actions/cache/restore and /save; actions/cache restores (its save at the job's end is not played)."""
        key = self.evaluate(str(given["key"]), context)
        named = [p.strip() for p in self.evaluate(str(given["path"]), context).split("\n") if p.strip()]
        paths = [self.workspace / Path(p).expanduser() for p in named]  # a relative path is the workspace's
        if uses.startswith("actions/cache/save@"):
            for path in paths:
                self.cache.save(key, path)
            return {}
        prefixes = [self.evaluate(p, context) for p in str(given.get("restore-keys", "")).split("\n") if p.strip()]
        hit = all(self.cache.restore(key, path, prefixes) for path in paths[:1])
        return {"cache-hit": "true" if hit else "false"}

    def evaluate(self, text: str, context: dict[str, Any]) -> str:
        """The expressions action.yml uses; any other fails the test, to be added here knowingly."""
        return EXPRESSION.sub(lambda match: self.lookup(match.group(1), context), text)

    def lookup(self, expression: str, context: dict[str, Any]) -> str:
        if expression == "github.token":
            return TOKEN
        if expression.startswith("hashFiles("):
            raise AssertionError("hashFiles reads the workspace only: not for the action's own files")
        head, _, rest = expression.partition(".")
        node: Any = context.get(head)
        for key in rest.split("."):
            if not isinstance(node, dict):
                raise AssertionError(f"unsupported expression {expression!r}")
            node = node.get(key, "")
        if not isinstance(node, str):
            raise AssertionError(f"unsupported expression {expression!r}")
        return node

    def condition(self, text: str, context: dict[str, Any]) -> bool:
        """A step's `if:`: strings, contexts, ==, !=, !, &&, || and startsWith, as GitHub compares (ignoring case)."""
        expression = EXPRESSION.sub(lambda m: m.group(1), text).strip()
        tokens = _TOKENS.findall(expression)
        assert not _TOKENS.sub("", expression).strip(), f"unsupported condition {expression!r}"
        python = []
        for token in tokens:
            if token in _OPERATORS:
                python.append(_OPERATORS[token])
            elif token.startswith("'"):
                python.append(repr(token[1:-1].lower()))
            elif token == "startsWith":
                python.append("starts")
            else:
                python.append(repr(self.lookup(token, context).lower()))
        allowed = {"__builtins__": {}, "starts": str.startswith}
        return bool(eval(" ".join(python), allowed))  # the tokens: quoted literals and operators only
