"""Trim GitHub's published REST description to the operations the GitHub client uses.

The tests validate every request the client sends against GitHub's own OpenAPI description (the
`@octokit/openapi` npm package). The full description is ~10 MB; this keeps the operations below
and every component they reference, for api.github.com and one GitHub Enterprise Server release.

    python scripts/trim_openapi.py                 # runs `npm pack @octokit/openapi@VERSION` in a temp dir
    python scripts/trim_openapi.py path/to/package # an unpacked package (the folder holding generated/)

Writes tests/fixtures/github/openapi/<plan>.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PACKAGE = "@octokit/openapi"
VERSION = "23.0.2"
PLANS = ("api.github.com", "ghes-3.19")
OPERATIONS = {
    "/user": ["get"],
    "/repos/{owner}/{repo}/issues/{issue_number}/comments": ["get", "post"],
    "/repos/{owner}/{repo}/issues/comments/{comment_id}": ["patch", "delete"],
    "/repos/{owner}/{repo}/pulls/{pull_number}": ["get"],
    "/repos/{owner}/{repo}/pulls": ["get"],
    "/repos/{owner}/{repo}/commits/{commit_sha}/pulls": ["get"],
}
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "github" / "openapi"


def lookup(spec: dict[str, Any], ref: str) -> Any:
    node: Any = spec
    for part in ref.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def collect_refs(spec: dict[str, Any], node: Any, seen: set[str]) -> None:
    """Every `$ref` reachable from `node`, followed transitively."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value not in seen:
                seen.add(value)
                collect_refs(spec, lookup(spec, value), seen)
            else:
                collect_refs(spec, value, seen)
    elif isinstance(node, list):
        for item in node:
            collect_refs(spec, item, seen)


def trim(spec: dict[str, Any]) -> dict[str, Any]:
    paths = {p: {m: spec["paths"][p][m] for m in methods} for p, methods in OPERATIONS.items()}
    # Path-level parameters apply to every method of the path.
    for p, item in paths.items():
        if "parameters" in spec["paths"][p]:
            item["parameters"] = spec["paths"][p]["parameters"]
    seen: set[str] = set()
    collect_refs(spec, paths, seen)
    components: dict[str, dict[str, Any]] = {}
    for ref in sorted(seen):
        _, _, kind, name = ref.split("/", 3)
        components.setdefault(kind, {})[name] = lookup(spec, ref)
    return {
        "openapi": spec["openapi"],
        "info": {**spec["info"], "x-trimmed": f"{PACKAGE}@{VERSION} by scripts/trim_openapi.py"},
        "servers": spec["servers"],
        "paths": paths,
        "components": components,
    }


def main() -> int:
    from npm_package import package_folder  # beside this script; imported here so tests can load trim()

    with package_folder(PACKAGE, VERSION, __doc__) as package:
        OUT.mkdir(parents=True, exist_ok=True)
        for plan in PLANS:
            spec = json.loads((package / "generated" / f"{plan}.json").read_text(encoding="utf-8"))
            text = json.dumps(trim(spec), indent=1, sort_keys=True) + "\n"
            (OUT / f"{plan}.json").write_text(text, encoding="utf-8")
            print(f"wrote {OUT / f'{plan}.json'} ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
