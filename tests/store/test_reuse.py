"""`checker verify PATH... --reuse STORE`: a bundle whose key has a trusted entry is not run again, its verdict
(pass or fail) reused and said so; every other bundle runs and, with --attest, is added. The store is untrusted:
an entry signed by another key, about another digest, filed under another key, or that does not parse is never
reused, and a warning names it; a run with other options (--strict added) finds nothing to reuse and says so."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from signkit import KeyFiles, key_pair
from zookit import change, release, zoo

from checker.context import Options
from checker.release.lock import lock
from checker.reports.files import validate
from checker.reports.model import Report
from checker.signing.attest import sign_statement
from checker.signing.dsse import EnvelopeSigner
from checker.store.entries import ENTRY

Cli = Callable[..., tuple[int, str, str]]
FAST = ("--gain-budget", "0")  # no paired timing: what is reused or run is the same, sooner


@pytest.fixture
def keys(tmp_path: Path) -> KeyFiles:
    return key_pair(tmp_path / "keys")


def run(cli: Cli, bundles: list[Path], store: Path, keys: KeyFiles, *more: Any, attest: bool = True) -> dict[str, Any]:
    out = store.parent / f"report-{len(list(store.parent.glob('report-*')))}.json"
    signing = ["--attest", store.parent / "a.intoto.jsonl", "--attest-key", keys.private] if attest else []
    code, _, err = cli(
        "verify", *bundles, "--reuse", store, "--trusted-key", keys.public, *signing, *FAST, *more,
        "--format", "json", "-o", out,
    )  # fmt: skip
    assert code in (0, 1), err
    report = json.loads(out.read_text())
    validate(report, out)
    return dict(report)


def reused(report: dict[str, Any]) -> list[bool]:
    return [b.get("reused") is not None for b in report["bundles"]]


def found(report: dict[str, Any], fid: str) -> list[dict[str, Any]]:
    return [f for b in report["bundles"] for f in b["findings"] if f["id"] == fid]


def entries(store: Path) -> list[Path]:
    return sorted(p for p in store.iterdir() if ENTRY.match(p.name))


def test_a_changed_bundle_runs_and_the_rest_are_reused(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    bundles, store = zoo(tmp_path / "zoo", 4), tmp_path / "store"
    first = run(cli, bundles, store, keys)
    assert reused(first) == [False] * 4 and first["status"] == "pass"
    assert len(entries(store)) == 4
    change(bundles[2])
    second = run(cli, bundles, store, keys)
    assert reused(second) == [True, True, False, True]
    assert [b["status"] for b in second["bundles"]] == ["pass"] * 4
    # The reused bundles say so, with the verdict's date, signer and figures; the changed one ran.
    line = found(second, "store.reused")[0]
    assert line["severity"] == "info" and line["message"].startswith(f"reused: verdict of {first['created_at']}")
    assert "signed by the key release.pub" in line["message"] and "3 comparisons passed" in line["message"]
    record = second["bundles"][0]["reused"]
    assert record["result"] == "PASSED" and record["verified_at"] == first["created_at"]
    assert [c["status"] for c in record["comparisons"]] == ["pass", "pass", "pass"]
    assert second["bundles"][0]["comparisons"] == [] and second["bundles"][2]["comparisons"]
    assert second["bundles"][0]["pieces"] == first["bundles"][0]["pieces"]  # judged again here: cheap
    assert len(entries(store)) == 5  # the changed bundle's verdict is added beside its old one
    # The attestation file holds every bundle, the reused ones as they were stored.
    lines = (tmp_path / "a.intoto.jsonl").read_text().splitlines()
    assert len(lines) == 4
    stored = {p.read_text().strip() for p in entries(store)}
    assert lines[0] in stored and lines[2] in stored
    third = run(cli, bundles, store, keys, attest=False)
    assert reused(third) == [True] * 4
    assert Report.from_dict(third).to_dict() == third  # the reused record reads back as itself


def test_a_failed_verdict_is_reused_as_a_failure(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    bundle = release(tmp_path / "zoo" / "m", "m")
    logits = bundle / "cases" / "meadow" / "logits.npy"
    np.save(logits, np.load(logits) + 1.0)  # a reference the graph does not reproduce, on any CPU
    assert lock(bundle).ok
    store = tmp_path / "store"
    assert run(cli, [bundle], store, keys)["status"] == "fail"
    again = run(cli, [bundle], store, keys)
    assert reused(again) == [True] and again["status"] == "fail"
    [line] = found(again, "store.reused")
    assert line["severity"] == "error" and "(failed;" in line["message"]
    assert "comparison.rule" in line["message"]


def _signed_line(keys: KeyFiles, statement: dict[str, Any]) -> str:
    return json.dumps(sign_statement(statement, EnvelopeSigner(keys.private)), sort_keys=True) + "\n"


def _statement(entry: Path) -> dict[str, Any]:
    return dict(json.loads(base64.b64decode(json.loads(entry.read_text())["payload"])))


def test_an_untrusted_entry_is_never_reused_and_a_warning_names_it(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    a, b = zoo(tmp_path / "zoo", 2)
    store = tmp_path / "store"
    run(cli, [a, b], store, keys)
    [entry_b] = [p for p in entries(store) if p.name.startswith(_digest(b))]
    [entry_a] = [p for p in entries(store) if p != entry_b]
    good_b = entry_b.read_text()

    def refused_with(text: str | None, link: Path | None = None) -> str:
        entry_b.unlink()
        if link is not None:
            entry_b.symlink_to(link)
        else:
            entry_b.write_text(text or "")
        report = run(cli, [a, b], store, keys, attest=False)
        assert reused(report) == [True, False] and report["bundles"][1]["comparisons"]  # b ran again
        [warning] = found(report, "store.refused")
        assert warning["severity"] == "warning" and entry_b.name in warning["message"]
        return str(warning["message"])

    stranger = key_pair(tmp_path / "stranger", "stranger")
    assert "not an attestation signed by the key release.pub" in refused_with(_signed_line_for(stranger, good_b))
    assert "its subject is another digest" in refused_with(entry_a.read_text())  # a's verdict under b's name
    strict_parts = _statement_of(good_b)
    strict_parts["predicate"]["reuse"]["parts"]["options"]["strict"] = True  # filed as b's non-strict key
    assert "not the key it is filed under" in refused_with(_signed_line(keys, strict_parts))
    assert "not an attestation signed" in refused_with("{not json\n")
    assert "holds 2 lines" in refused_with(good_b + good_b)
    outside = tmp_path / "outside.jsonl"
    outside.write_text(good_b)
    assert "a link is never followed" in refused_with(None, link=outside)
    assert "bytes; an entry is at most" in refused_with("x" * ((1 << 20) + 1))
    entry_b.unlink()
    entry_b.write_text(good_b)
    assert reused(run(cli, [a, b], store, keys, attest=False)) == [True, True]


def _statement_of(line: str) -> dict[str, Any]:
    return dict(json.loads(base64.b64decode(json.loads(line)["payload"])))


def _signed_line_for(signer: KeyFiles, line: str) -> str:
    return _signed_line(signer, _statement_of(line))


def _digest(bundle: Path) -> str:
    from checker.bundle.opening import open_bundle
    from checker.store.identity import identify

    with open_bundle(bundle) as opened:
        identity = identify(opened)
    assert identity is not None
    return identity.digest.removeprefix("sha256:")


def test_a_run_with_other_options_reuses_nothing_and_says_what_differs(
    cli: Cli, keys: KeyFiles, tmp_path: Path
) -> None:
    [bundle] = zoo(tmp_path / "zoo", 1)
    store = tmp_path / "store"
    run(cli, [bundle], store, keys)
    strict = run(cli, [bundle], store, keys, "--strict")
    assert reused(strict) == [False]
    [note] = found(strict, "store.not_reused")
    assert note["severity"] == "info" and "options.strict: false -> true" in note["message"]
    assert reused(run(cli, [bundle], store, keys, "--strict", attest=False)) == [True]  # its own verdict, stored
    assert reused(run(cli, [bundle], store, keys, attest=False)) == [True]  # and the lenient one is still there


def test_a_pass_with_a_check_not_run_is_never_reused_under_strict(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    bundle = release(tmp_path / "zoo" / "m", "m")
    manifest = bundle / "bundle.yaml"
    text = manifest.read_text().replace(
        "execution_providers: [CPUExecutionProvider]",
        "execution_providers: [OpenVINOExecutionProvider, CPUExecutionProvider]\n  fallback: forbid",
    )
    manifest.write_text(text)
    assert lock(bundle).ok
    store = tmp_path / "store"
    lenient = run(cli, [bundle], store, keys)
    assert lenient["status"] == "pass" and lenient["bundles"][0]["not_run"]
    strict = run(cli, [bundle], store, keys, "--strict")
    assert reused(strict) == [False] and strict["status"] == "fail"  # judged again, and --strict fails it
    # A forged pass filed under the strict key, with the check not run, is refused though it is signed.
    [strict_entry] = [p for p in entries(store) if _statement(p)["predicate"]["strict"]]
    statement = _statement(strict_entry)
    assert statement["predicate"]["verificationResult"] == "FAILED"
    statement["predicate"]["verificationResult"] = "PASSED"
    strict_entry.write_text(_signed_line(keys, statement))
    again = run(cli, [bundle], store, keys, "--strict", attest=False)
    assert reused(again) == [False] and again["status"] == "fail"
    assert "--strict fails" in found(again, "store.refused")[0]["message"]


def test_reused_verdicts_are_the_same_side_by_side(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    bundles, store = zoo(tmp_path / "zoo", 3), tmp_path / "store"
    run(cli, bundles, store, keys, "--jobs", "1")
    change(bundles[1])
    one = run(cli, bundles, store, keys, "--jobs", "1", attest=False)
    two = run(cli, bundles, store, keys, "--jobs", "2", attest=False)
    assert reused(one) == reused(two) == [True, False, True]

    def verdicts(report: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
        return [(b["path"], b["status"], sorted(f["id"] for f in b["findings"])) for b in report["bundles"]]

    assert verdicts(one) == verdicts(two)


def reused_without_stages(bundles: list[Path], store: Path, keys: KeyFiles) -> str:
    """`checker verify --reuse` in a process of its own, which must exit 0 having loaded neither onnxruntime nor
    the stages; what it printed."""
    script = (
        "import sys\n"
        "from checker.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(code, 'onnxruntime' in sys.modules, 'checker.verify' in sys.modules)\n"
    )
    trusted = ["--reuse", str(store), "--trusted-key", str(keys.public)]
    args = ["verify", *map(str, bundles), *trusted, "--jobs", "1", *FAST]
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    assert done.stdout.splitlines()[-1] == "0 False False", done.stderr
    return done.stdout


def test_a_reused_zoo_never_loads_onnxruntime(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    bundles, store = zoo(tmp_path / "zoo", 2), tmp_path / "store"
    run(cli, bundles, store, keys)
    assert reused_without_stages(bundles, store, keys).count("reused: verdict of") == 2


def test_reuse_options_are_checked_before_any_work(cli: Cli, example: Path, keys: KeyFiles, tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, _, err = cli("verify", example, "--reuse", store)
    assert code == 2 and "--trusted-key" in err
    trusted = ["--reuse", store, "--trusted-key", keys.public]
    code, _, err = cli("verify", example, *trusted, "--shard", "1/2")
    assert code == 2 and "--shard" in err
    code, _, err = cli("verify", example, *trusted, "--device-outputs", tmp_path)
    assert code == 2 and "--device-outputs" in err
    code, _, err = cli("verify", example, *trusted, "--runtime", "newest")
    assert code == 2 and "name its version" in err
    code, _, err = cli("verify", example, *trusted, "--run-validation")  # the command may read anything
    assert code == 2 and "--reuse with --run-validation" in err and not store.exists()
    (tmp_path / "file").write_text("")
    code, _, err = cli("verify", example, "--reuse", tmp_path / "file", "--trusted-key", keys.public)
    assert code == 2 and "not a folder" in err
    code, _, err = cli("verify", example, *trusted, "--compare-to", tmp_path / "file")
    assert code == 2 and "--compare-to with --reuse" in err


def _quick(bundle: Path, store: Path, keys: KeyFiles) -> Any:
    """The look-up that does not parse the manifest, alone."""
    from checker.bundle.opening import open_bundle
    from checker.context import Trust
    from checker.signing.attest import StatementChecker
    from checker.store.entries import Store
    from checker.store.key import Keys, Machine
    from checker.store.lookup import quick_look_up

    options, checker = Options(gain_budget_s=0.0), StatementChecker(Trust(keys.public))
    with open_bundle(bundle) as opened:
        return quick_look_up(bundle, opened, options, Keys.of(Machine.here(), options), Store.open(store), checker)


def test_the_quick_look_up_holds_the_bundle_to_the_judged_digest(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    a, b, c = zoo(tmp_path / "zoo", 3)
    store = tmp_path / "store"
    run(cli, [a, b, c], store, keys)
    found = _quick(a, store, keys)
    assert found is not None and found.report.reused is not None and found.report.reused.result == "PASSED"
    assert found.report.name == "m00" and found.report.pieces == {p: True for p in found.report.pieces}
    # A case tensor changed, and its line in bundle.sha256 with it: the listed lines no longer hash to the
    # judged digest, and the full look-up (which parses the manifest) finds no verdict of the bundle's digest.
    logits = b / "cases" / "meadow" / "logits.npy"
    old = hashlib.sha256(logits.read_bytes()).hexdigest()
    np.save(logits, np.load(logits) * 1.001)
    new = hashlib.sha256(logits.read_bytes()).hexdigest()
    (b / "bundle.sha256").write_text((b / "bundle.sha256").read_text().replace(old, new))
    assert _quick(b, store, keys) is None
    # A manifest edited in a comment only: its text is not the judged one, so the quick look-up declines and
    # the full one, whose digest is of the data, reuses the verdict.
    with (c / "bundle.yaml").open("a") as manifest:
        manifest.write("# reviewed\n")
    assert _quick(c, store, keys) is None
    report = run(cli, [a, b, c], store, keys, attest=False)
    assert reused(report) == [True, False, True]
    assert report["bundles"][1]["status"] == "fail"  # b ran: its release.digest no longer matches its files


def test_every_format_says_which_verdicts_were_reused(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    bundles, store = zoo(tmp_path / "zoo", 3), tmp_path / "store"
    first = run(cli, bundles, store, keys)
    change(bundles[2])
    trusted = ["--reuse", store, "--trusted-key", keys.public, *FAST]
    stamp = first["created_at"]

    code, text, _ = cli("verify", *bundles, *trusted)
    assert code == 0 and "3 of 3 bundles pass" in text and "2 reused from the verdict store, 1 verified" in text
    lines = text.splitlines()
    reused_lines = [line for line in lines if f"reused: verdict of {stamp}, signed by the key release.pub" in line]
    assert [line.split()[1] for line in reused_lines] == ["m00", "m01"]  # one line each, after the one that ran
    assert lines.index(reused_lines[0]) > next(i for i, line in enumerate(lines) if "m02 1.0.1" in line)

    code, markdown, _ = cli("verify", *bundles, *trusted, "--format", "markdown")
    assert code == 0
    ran, fold = markdown.index("m02 1.0.1"), markdown.index("♻️ 2 bundles not run again")
    assert ran < fold  # what ran and changed first, the reused ones folded after it
    assert "signed by the key release.pub, reused</summary>" in markdown
    assert markdown.count(f"reused: verdict of {stamp} (passed;") == 2

    code, junit, _ = cli("verify", *bundles, *trusted, "--format", "junit")
    suites = {s.get("name"): s for s in ET.fromstring(junit.split("\n", 1)[1])}
    reused_prop = [p.get("value") for p in suites["m00"].iter("property") if p.get("name") == "reused"]
    assert reused_prop and reused_prop[0].startswith(f"reused: verdict of {stamp}")
    cases = [c for c in suites["m00"].iter("testcase") if c.get("classname") == "m00.reused"]
    assert sorted(c.get("name").split(" (")[0] for c in cases) == ["baseline vs reference", "int8 vs baseline",
                                                                     "int8 vs reference"]  # fmt: skip
    assert not any(c.find("failure") is not None for c in cases)
    assert not [c for c in suites["m02"].iter("testcase") if c.get("classname") == "m02.reused"]


def test_the_bundles_the_store_has_nothing_of_are_looked_up_first_and_the_guess_decides_nothing(
    cli: Cli, keys: KeyFiles, tmp_path: Path
) -> None:
    from checker.store.entries import Store
    from checker.store.key import Keys, Machine
    from checker.store.lookup import listed, unstored

    a, b, c = zoo(tmp_path / "zoo", 3)
    store = tmp_path / "store"
    run(cli, [a, b, c], store, keys)
    run_keys = Keys.of(Machine.here(), Options(gain_budget_s=0.0))

    def guesses() -> list[bool]:
        opened = Store.open(store)
        found = [listed(p, run_keys) for p in (a, b, c)]
        assert all(f is not None for f in found)
        return [unstored(f, opened) for f in found if f is not None]

    assert guesses() == [False, False, False]
    change(b)
    assert guesses() == [False, True, False]
    report = run(cli, [a, b, c], store, keys)  # b looked up and handed on first; the reports keep their order
    assert reused(report) == [True, False, True]
    assert [x["path"] for x in report["bundles"]] == [str(a), str(b), str(c)]
    import onnxruntime

    assert report["environment"]["onnxruntime"] == onnxruntime.__version__  # as the run that loaded it read it
    # The guess decides nothing. A file changed without a new lock leaves the list, so the guess, as judged:
    # the look-up hashes the files and finds no verdict of their digest, and the bundle runs. A list whose line
    # no longer matches its file makes the guess wrong the other way, and the stored verdict is not reused
    # either: it was judged with the list that matched (the run says the list is stale).
    (a / "labels.txt").write_text((a / "labels.txt").read_text() + "extra\n")
    text = (c / "bundle.sha256").read_text()
    line = next(x for x in text.splitlines() if x.endswith(".onnx"))
    (c / "bundle.sha256").write_text(text.replace(line, "0" * 64 + line[64:]))
    assert guesses() == [False, False, True]
    report = run(cli, [a, b, c], store, keys, attest=False)
    assert reused(report) == [False, True, False]
    assert report["bundles"][0]["status"] == report["bundles"][2]["status"] == "fail"
    [said] = found(report, "store.not_reused")
    assert "bundle.sha256 changed" in said["message"]


def test_look_ups_a_worker_does_judge_as_this_process_does(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    """A worker free of runs looks up a share of the bundles (store/run.py): in a real worker process, with the
    store, key and lists this process handed it, it reuses, refuses and runs exactly as this process would."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from checker.context import Trust
    from checker.signing.attest import StatementChecker
    from checker.store.entries import Store
    from checker.store.key import Keys, Machine
    from checker.store.lookup import listed, look_up
    from checker.store.run import _looked_up_there
    from checker.workers import start_method

    a, b, c = zoo(tmp_path / "zoo", 3)
    store = tmp_path / "store"
    run(cli, [a, b, c], store, keys)
    [entry_b] = [p for p in entries(store) if p.name.startswith(_digest(b))]
    entry_b.write_text(_signed_line_for(key_pair(tmp_path / "stranger", "stranger"), entry_b.read_text()))
    change(c)  # no verdict of it: the worker that finds it runs it
    options = Options(gain_budget_s=0.0, reuse=store, reuse_trust=Trust(keys.public))
    run_keys, opened, paths = Keys.of(Machine.here(), options), Store.open(store), [a, b, c]
    lists = [listed(p, run_keys) for p in paths]
    checker = StatementChecker(Trust(keys.public))
    here = [look_up(p, options, run_keys, opened, checker, found) for p, found in zip(paths, lists)]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context(start_method())) as pool:
        there = pool.submit(_looked_up_there, paths, lists, run_keys, opened, options).result()
    assert [o.report.path for o in there] == [str(p) for p in paths]
    assert [o.report.reused is not None for o in there] == [True, False, False]
    assert here[0].report is not None and there[0].report.to_dict() == here[0].report.to_dict()
    assert there[0].document == here[0].document and there[0].parts == here[0].parts
    [refused] = [f for f in there[1].report.findings if f.id == "store.refused"]
    assert [refused.message] == [f.message for f in here[1].findings] and "not an attestation signed" in refused.message
    assert there[1].report.comparisons and there[2].report.comparisons  # both ran, in the worker
    assert there[2].report.version == "1.0.1" and there[2].environment is not None
    assert [o.parts for o in there[1:]] == [x.parts for x in here[1:]]


def test_the_quick_look_up_reads_no_file_through_a_link_that_leaves_the_bundle(
    cli: Cli, keys: KeyFiles, tmp_path: Path
) -> None:
    """The quick look-up finds a bundle's plain files by listing its folders; a name that is not one of them (a
    link) is resolved one folder at a time, and a link leaving the bundle is never read, even to a file of the
    very bytes judged: the run that follows says bundle.path, as a first run would."""
    a, b, c = zoo(tmp_path / "zoo", 3)
    inside = c / "labels.copy"
    inside.write_bytes((c / "labels.txt").read_bytes())
    (c / "labels.txt").unlink()
    (c / "labels.txt").symlink_to("labels.copy")  # a link inside the bundle, judged so: followed, as a run does
    store = tmp_path / "store"
    run(cli, [a, b, c], store, keys)
    outside = tmp_path / "outside"
    outside.mkdir()
    labels = outside / "labels.txt"
    labels.write_bytes((a / "labels.txt").read_bytes())
    (a / "labels.txt").unlink()
    (a / "labels.txt").symlink_to(labels)  # a file's link, leaving the bundle
    cases = outside / "cases"
    (b / "cases").rename(cases)
    (b / "cases").symlink_to(cases)  # a folder's link, leaving it
    assert _quick(a, store, keys) is None and _quick(b, store, keys) is None
    quick = _quick(c, store, keys)
    assert quick is not None and quick.report.reused is not None
    report = run(cli, [a, b, c], store, keys, attest=False)
    assert reused(report)[:2] == [False, False]
    paths = found(report, "bundle.path")
    assert {x["path"] for x in report["bundles"][:2]} == {str(a), str(b)}
    assert len(paths) >= 2 and all("leaves the bundle" in f["message"] for f in paths)


def test_a_list_that_is_no_plain_file_is_not_read_for_the_guess(tmp_path: Path) -> None:
    """`bundle.sha256` read for the guess of which bundles run: a link, a FIFO (whose read would never end) or a
    list over the bound gives no guess (the bundle's own look-up and run then say what is wrong)."""
    from checker.readers import digestlist
    from checker.readers.digestlist import DIGEST_LIST, list_bytes

    bundle = release(tmp_path / "b", "b")
    text = (bundle / DIGEST_LIST).read_bytes()
    assert list_bytes(bundle) == text
    (tmp_path / "elsewhere").write_bytes(text)
    (bundle / DIGEST_LIST).unlink()
    (bundle / DIGEST_LIST).symlink_to(tmp_path / "elsewhere")
    assert list_bytes(bundle) is None
    (bundle / DIGEST_LIST).unlink()
    os.mkfifo(bundle / DIGEST_LIST)
    assert list_bytes(bundle) is None
    (bundle / DIGEST_LIST).unlink()
    (bundle / DIGEST_LIST).write_bytes(text)
    bound = digestlist.MAX_LIST_BYTES
    try:
        digestlist.MAX_LIST_BYTES = len(text) - 1
        assert list_bytes(bundle) is None
    finally:
        digestlist.MAX_LIST_BYTES = bound
    assert list_bytes(bundle) == text


def test_a_listed_text_gives_the_files_lock_listed(tmp_path: Path) -> None:
    """The quick look-up reads a list's file lines, `<sha256>  <path>`, the lines of manifest fields left out,
    and the text's own SHA-256 as its digest; a text that is not UTF-8 gives no files."""
    from checker.readers.digestlist import read_digest_list
    from checker.store.key import Keys, Machine
    from checker.store.lookup import Listed, listed

    bundle = release(tmp_path / "b", "b")
    found = listed(bundle, Keys.of(Machine.here(), Options()))
    assert found is not None and found.digest == "sha256:" + hashlib.sha256(found.text).hexdigest()
    declared = read_digest_list(bundle)
    assert declared is not None and not declared.problems
    from checker.readers.digest import bundle_digest

    assert found.digest == bundle_digest({name: d for name, (d, _) in declared.digests.items()})
    wanted = sorted((name, d) for name, (d, _) in declared.digests.items() if not name.startswith("manifest:"))
    files = found.files()
    assert files is not None and len(files) == len(wanted) > 10
    assert Listed(b"\xff" + found.text, found.digest, found.parts, found.key).files() is None
    # A checkout that wrote the list with Windows line ends: the same lines, the same digest.
    (bundle / "bundle.sha256").write_bytes(found.text.replace(b"\n", b"\r\n"))
    again = listed(bundle, Keys.of(Machine.here(), Options()))
    assert again is not None and again.digest == found.digest and again.files() == files


def test_a_verdict_is_reused_only_for_the_folder_it_judged(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    """The digest leaves out what the stages also read: the list, release.digest, the files nobody names, the
    folders and links of the tree, and bundle.sig. A copy of the judged folder reuses its verdict; a copy with
    any of them changed runs (and its own findings say what the stored verdict would have hidden)."""
    import shutil

    [judged] = zoo(tmp_path / "zoo", 1)
    store = tmp_path / "store"
    first = run(cli, [judged], store, keys)
    [entry] = entries(store)
    assert _statement(entry)["predicate"]["folder"] == first["bundles"][0]["folder"]

    def copy(name: str) -> Path:
        return Path(shutil.copytree(judged, tmp_path / "copies" / name, symlinks=True))

    same = copy("same")
    stray = copy("stray")
    (stray / "notes.txt").write_text("not named\n")
    stale = copy("stale")
    listed = (stale / "bundle.sha256").read_text()
    (stale / "bundle.sha256").write_text(("1" if listed[0] == "0" else "0") + listed[1:])
    declared = copy("declared")
    manifest = (declared / "bundle.yaml").read_text()
    digest = first["bundles"][0]["digest"]
    (declared / "bundle.yaml").write_text(manifest.replace(digest, "sha256:" + "0" * 64, 1))
    signed = copy("signed")
    (signed / "bundle.sig").write_text("{}\n")
    linked = copy("linked")  # a named file made a link to the very bytes: the digest is the same
    (linked / "labels.copy").write_bytes((linked / "labels.txt").read_bytes())
    (linked / "labels.txt").unlink()
    (linked / "labels.txt").symlink_to("labels.copy")
    folder = copy("folder")
    (folder / "empty").mkdir()  # a folder a test-data glob could match
    assert _quick(same, store, keys) is not None
    changed = [stray, stale, declared, signed, linked, folder]
    assert [_quick(b, store, keys) for b in changed] == [None] * len(changed)
    report = run(cli, [same, *changed], store, keys, attest=False)
    assert reused(report) == [True] + [False] * len(changed)
    said = [f["message"] for f in found(report, "store.not_reused")]
    assert len(said) == len(changed)
    other = "the folder's other entries (files not named, folders, links) changed"
    assert other in said[0] and "bundle.sha256 changed" in said[1] and "release.digest changed" in said[2]
    assert all(other in said[i] for i in (3, 4, 5))
    ran = report["bundles"]
    assert [f["id"] for f in ran[1]["findings"] if f["severity"] == "warning"] == ["bundle.unlisted"]
    assert ran[2]["status"] == ran[3]["status"] == "fail"  # the stale list, the stale release.digest
    assert any(f["id"] == "signature.stale" for f in ran[4]["findings"])


def test_a_signature_that_is_no_file_neither_stops_the_run_nor_is_read(
    cli: Cli, keys: KeyFiles, tmp_path: Path
) -> None:
    """bundle.sig as a FIFO (whose read would never end) or a link out of the bundle: the folder's state records
    what it is, never reads it, and the run ends and says why."""
    [bundle] = zoo(tmp_path / "zoo", 1)
    os.mkfifo(bundle / "bundle.sig")
    store = tmp_path / "store"
    first = run(cli, [bundle], store, keys)
    assert first["bundles"][0]["folder"]["count"] >= 3
    assert any(f["id"] == "signature.stale" for f in first["bundles"][0]["findings"])
    assert reused(run(cli, [bundle], store, keys, attest=False)) == [True]  # the same folder, the same verdict
    (bundle / "bundle.sig").unlink()
    secret = tmp_path / "secret"
    secret.write_text("not the bundle's\n")
    (bundle / "bundle.sig").symlink_to(secret)
    from checker.checks.folder import folder_state

    state = folder_state(bundle, "bundle.yaml", [], None, trusted=True)
    secret.write_text("another secret\n")  # what lies outside the bundle is never read, even signed
    assert state is not None and folder_state(bundle, "bundle.yaml", [], None, trusted=True) == state


def test_an_entry_that_records_no_folder_is_not_reused(cli: Cli, keys: KeyFiles, tmp_path: Path) -> None:
    [bundle] = zoo(tmp_path / "zoo", 1)
    store = tmp_path / "store"
    run(cli, [bundle], store, keys)
    [entry] = entries(store)
    statement = _statement(entry)
    del statement["predicate"]["folder"]
    entry.write_text(_signed_line(keys, statement) + "\n")
    report = run(cli, [bundle], store, keys, attest=False)
    assert reused(report) == [False]
    [said] = found(report, "store.not_reused")
    assert "the verdict records no state of the bundle folder" in said["message"]


def test_the_folder_state_follows_what_the_files_and_signature_stages_read(tmp_path: Path) -> None:
    from functools import partial

    from checker.checks.folder import folder_state

    [bundle] = zoo(tmp_path / "zoo", 1)
    named = {line[66:] for line in (bundle / "bundle.sha256").read_text().splitlines() if "manifest:" not in line}
    state = partial(folder_state, bundle, "bundle.yaml", named, None)
    before = state(trusted=False)
    assert before is not None and before["list"] is not None and before["count"] >= 2  # the manifest, the list
    assert state(trusted=True) == before  # nothing is signed: the contents of what is not named are not read
    (bundle / "notes.txt").write_text("a\n")
    names = state(trusted=False)
    assert names is not None and names["count"] == before["count"] + 1 and names["others"] != before["others"]
    (bundle / "notes.txt").write_text("b\n")  # an unlisted file is a warning by its name
    assert state(trusted=False) == names
    (bundle / "bundle.sig").write_text("{}\n")
    signed, required = state(trusted=False), state(trusted=True)
    (bundle / "notes.txt").write_text("c\n")  # only a required signature reads every file
    assert state(trusted=False) == signed and state(trusted=True) != required
    (bundle / "bundle.sig").write_text("{ }\n")  # the stale signature check reads the signature
    assert state(trusted=False) != signed
    manifest = bundle / "bundle.yaml"
    manifest.write_text(manifest.read_text() + "# signed text\n")  # and the manifest's text
    assert state(trusted=False) != signed
    assert folder_state(bundle, "bundle.yaml", named, "sha256:" + "0" * 64, trusted=False) != state(trusted=False)
    listed = bundle / "bundle.sha256"
    text = listed.read_bytes()
    (bundle / "bundle.sig").unlink()
    listed.write_bytes(text.replace(b"\n", b"\r\n"))  # the same lines as the files stage reads them
    crlf = state(trusted=False)
    listed.write_bytes(text)
    lf = state(trusted=False)
    assert crlf is not None and lf is not None and crlf == lf
    listed.write_bytes(text + text[:10])
    assert state(trusted=False) != lf
    listed.unlink()
    listed.symlink_to(tmp_path / "elsewhere")
    assert state(trusted=False) is None  # no plain file: not known exactly, never reused


def test_the_folder_state_sees_through_links_and_into_git_named_folders(tmp_path: Path) -> None:
    """What a stage reads through a link, or inside a folder whose name starts with .git, is in the state: a
    link's target and what is there; through a signed manifest's link, the text."""
    from checker.checks.folder import folder_state

    [bundle] = zoo(tmp_path / "zoo", 1)
    named = {line[66:] for line in (bundle / "bundle.sha256").read_text().splitlines() if "manifest:" not in line}

    def state() -> dict[str, Any] | None:
        return folder_state(bundle, "bundle.yaml", named, None, trusted=False)

    (bundle / ".gitdata").mkdir()
    before = state()
    (bundle / ".gitdata" / "alias").symlink_to("/etc/passwd")  # a test-data link can lead here
    assert state() != before
    (bundle / ".git").mkdir()  # the repository's own: every commit changes it, no stage reads it
    linked = state()
    (bundle / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert state() == linked
    (bundle / "bundle.sig").symlink_to(tmp_path / "outside.sig")  # a link leaving the bundle, to nothing yet
    dangling = state()
    (tmp_path / "outside.sig").write_text("{}\n")  # now there is something there (never read)
    assert state() != dangling
    (bundle / "bundle.sig").unlink()
    (bundle / "bundle.sig").write_text("{}\n")  # signed: the manifest's text counts, through a link too
    (bundle / ".gitmeta").mkdir()
    (bundle / "bundle.yaml").rename(bundle / ".gitmeta" / "bundle.yaml")
    (bundle / "bundle.yaml").symlink_to(".gitmeta/bundle.yaml")
    signed = state()
    with (bundle / ".gitmeta" / "bundle.yaml").open("a") as manifest:
        manifest.write("# edited\n")
    assert signed is not None and state() != signed


def _threads(options: Options) -> int | None:
    return options.intra_op_threads


def test_a_worker_of_a_store_run_has_the_cores_of_a_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's look-ups beside the workers take a millisecond a bundle: a bundle that runs has the cores
    the workers share, not one less (a large graph on one core less took a fifth longer)."""
    from checker import workers
    from checker.store.run import _Runs

    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(workers, "available_memory", lambda: 64 << 30)
    one, two = tmp_path / "one", tmp_path / "two"
    for expected, threads in (([one], 8), ([one, two], 4)):
        runs = _Runs(expected, Options(jobs=2))
        try:
            assert runs._submit(one, _threads).result() == threads
        finally:
            runs.close()
        assert runs.workers == len(expected)


def test_a_bundle_that_runs_after_its_look_up_reads_each_named_file_for_its_digest_once(
    keys: KeyFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look-up hashes the bundle's named files to find its digest; its run judges them as hashed there (a
    graph of gigabytes read once, not twice), and the verdict is filed under the digest it was looked up by."""
    from checker.context import Trust
    from checker.readers import digest
    from checker.store.run import verify_reusing

    read: list[str] = []
    hash_file = digest.sha256_file

    def counted(path: Path) -> str:
        read.append(os.path.realpath(path))
        return hash_file(path)

    [bundle] = zoo(tmp_path / "zoo", 1)
    monkeypatch.setattr(digest, "sha256_file", counted)
    options = Options(gain_budget_s=0.0, reuse=tmp_path / "store", reuse_trust=Trust(keys.public))
    (tmp_path / "store").mkdir()
    [outcome] = verify_reusing([str(bundle)], options).outcomes
    assert outcome.document is None and outcome.report.status() == "pass"  # nothing stored: it ran
    assert outcome.parts is not None and outcome.report.digest == outcome.parts["digest"]
    assert len(read) == len(set(read))  # no file read twice for its digest
    assert {os.path.realpath(bundle / n) for n in ("model.onnx", "model.int8.onnx", "labels.txt")} <= set(read)
