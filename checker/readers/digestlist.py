"""The digest list beside the manifest: `bundle.sha256`, one `<sha256>  <path>` line per named file.

`checker lock` writes it; its lines are exactly those the bundle digest hashes, so `release.digest` is the
SHA-256 of this file. It lets `checker verify` name the file that changed (a case tensor, a raw input, an ONNX
test-data file) without a digest field per file in the manifest, which keeps a manifest of many cases short.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from checker.bundle.paths import regular_size

DIGEST_LIST = "bundle.sha256"
MAX_LIST_BYTES = 64 << 20  # 100 bytes a line: over half a million files
_LINE = re.compile(r"^([0-9a-f]{64}) [ *](\S.*)$", re.MULTILINE)


@dataclass
class DigestList:
    """What the list declares: path -> (sha256, line), and the lines it could not read."""

    digests: dict[str, tuple[str, int]] = field(default_factory=dict)
    problems: list[tuple[str, int | None]] = field(default_factory=list)


def list_text(file_digests: Mapping[str, str]) -> str:
    """The list's text: the lines of the bundle digest, sorted by path (as `sha256sum` writes them)."""
    return "".join(f"{file_digests[rel]}  {rel}\n" for rel in sorted(file_digests))


def read_digest_list(root: Path) -> DigestList | None:
    """The list beside the manifest, or None when there is none."""
    path = root / DIGEST_LIST
    if not path.exists() and not path.is_symlink():
        return None
    out = DigestList()
    try:
        size = regular_size(path)
        if path.is_symlink():
            raise OSError("a link; the digest list must be a plain file")
        if size > MAX_LIST_BYTES:
            out.problems.append((f"{DIGEST_LIST} is {size} bytes; at most {MAX_LIST_BYTES}", None))
            return out
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.problems.append((f"{DIGEST_LIST} cannot be read ({exc})", None))
        return out
    lines = text.splitlines()
    # Every line read by one scan of the whole text where every line is well formed (a verdict store reads the
    # lists of hundreds of bundles); a line per match, since no separator is left inside a line.
    found_all = _LINE.findall("\n".join(lines))
    if len(found_all) == len(lines):
        out.digests = {path: (digest, number) for number, (digest, path) in enumerate(found_all, start=1)}
        return out
    for number, line in enumerate(lines, start=1):
        found = _LINE.match(line)
        if found is None:
            out.problems.append((f"{DIGEST_LIST} line {number} is not '<sha256>  <path>'", number))
            continue
        out.digests[found.group(2)] = (found.group(1), number)
    return out


def list_bytes(root: Path) -> bytes | None:
    """The list's bytes as `checker lock` wrote them, or None where there is none to read: no list, a link, not
    a plain file, over MAX_LIST_BYTES, unreadable (read_digest_list says which)."""
    path = os.path.join(root, DIGEST_LIST)  # noqa: PTH118 (a verdict store reads hundreds: no Path made of each)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)  # never a link or a FIFO
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):  # where O_NOFOLLOW is unknown
            return None
        with os.fdopen(os.open(path, flags), "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_LIST_BYTES:
                return None
            data = file.read(MAX_LIST_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_LIST_BYTES else None
