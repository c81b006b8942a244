"""`--attest OUT`: each bundle's verdict written as a signed attestation that records the key a verdict store
files it under, and, with `--reuse STORE`, each bundle that ran added to the store.

A reused bundle's line in OUT is the stored attestation itself (signed when its verdict was judged), so OUT
always holds every bundle. A verdict that says more about this run than about the bundle is never stored: a
run that stopped on a bug in the checker, or a `--runtime` that could not be installed here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from checker import findings as F
from checker.context import Options
from checker.reports.model import Report
from checker.signing.attest import (
    Circumstances,
    document_line,
    sign_statements,
    statements,
    write_documents,
)
from checker.signing.dsse import EnvelopeSigner
from checker.signing.keyless import KeylessSigner
from checker.store.entries import Store
from checker.store.key import Machine, key_of, key_parts
from checker.store.run import Outcome

# Findings of this run's circumstances or of a comparison with a base report, not of the bundle alone.
NOT_STORED = (F.INTERNAL_ERROR, F.RUNTIME_INSTALL, F.RULES_LOOSENED)


def attest(
    report: Report,
    options: Options,
    signer: EnvelopeSigner | KeylessSigner,
    out: Path,
    outcomes: Sequence[Outcome] | None = None,
) -> list[str]:
    """Write OUT (one line per bundle, in the report's order, shards left out); with a store, add the bundles
    that ran. Returns the store entries added."""
    data = report.to_dict()
    # A shard's verdict is not the bundle's (the merged report's is): it is neither attested nor stored.
    data["bundles"] = [b for b in data.get("bundles") or [] if b.get("shard") is None]
    bundles = list(data["bundles"])
    found = [o for o in outcomes or [] if o.report.shard is None]
    stored = {i: o.document for i, o in enumerate(found) if o.document is not None}
    machine = Machine.here()
    known = [None if i in stored else _circumstances(b, machine, options) for i, b in enumerate(bundles)]
    fresh = [i for i in range(len(bundles)) if i not in stored]
    contents = statements(data, known)
    signed = dict(zip(fresh, sign_statements([contents[i] for i in fresh], signer)))
    documents = [stored[i] if i in stored else signed[i] for i in range(len(bundles))]
    write_documents(documents, out)
    if options.reuse is None:
        return []
    store = Store.open(options.reuse)
    added = []
    for i in fresh:
        circumstances = known[i]
        reuse = circumstances.reuse if circumstances is not None else None
        if reuse is None or not storable(bundles[i]):
            continue
        digest = str(bundles[i]["digest"]).removeprefix("sha256:")
        added.append(store.add(digest, str(reuse["key"]), document_line(documents[i])).name)
    store.prune()
    return added


def _circumstances(bundle: Mapping[str, Any], machine: Machine, options: Options) -> Circumstances:
    digest = bundle.get("digest")
    if not isinstance(digest, str) or not digest:
        return Circumstances(machine.cpu_class)
    parts = key_parts(digest, machine, options)
    return Circumstances(machine.cpu_class, {"key": key_of(parts), "parts": parts})


def storable(bundle: Mapping[str, Any]) -> bool:
    """Whether a bundle's verdict may be stored: a whole bundle judged here, to the end, by what it is."""
    if bundle.get("reused") is not None or bundle.get("shard") is not None or not bundle.get("digest"):
        return False
    findings = bundle.get("findings") or []
    return not any(isinstance(f, Mapping) and f.get("id") in NOT_STORED for f in findings)
