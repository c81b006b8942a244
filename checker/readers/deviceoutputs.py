"""What a device sends back: a folder its runner wrote from a device kit (`checker device-kit`), read as untrusted.

    outputs/<graph>/<case>/<output>.npy   every graph ("baseline" or a variant's name) on every case
    tensors/<case>/<input>.npy            the application's own preprocessing of each raw input (optional)
    device.json                           the runtime, its version, the backend and the device

Names become file names by `stem` (the kit's kit.json lists each). The folder is walked without following links,
only regular files are read, `.npy` files without pickles and within the tensor bounds; device.json is a JSON
object of at most 64 KiB. What does not fit is an error naming the file, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.readers.tensors import UNREADABLE, TensorFileError, load_npy

if TYPE_CHECKING:
    import numpy as np

OUTPUTS = "outputs"
TENSORS = "tensors"
DEVICE_JSON = "device.json"
MAX_DEVICE_JSON_BYTES = 64 << 10
MAX_ENTRIES = 200_000  # files and folders walked in the folder a device sent back
MAX_WORD_CHARS = 300  # a string of device.json kept in the report
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class DeviceFolderError(ValueError):
    """A device's folder that cannot be read as one; the message says why."""


def stem(name: str) -> str:
    """The file or folder name a graph, case, input or output name is written under: the name itself when it is
    a plain one (letters, digits, '.', '_', '-', not starting with a dot), else a cleaned form with a digest of
    the name, so two names never share one."""
    if _SAFE.match(name) and not name.endswith("."):
        return name
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:64].strip("._-") or "x"
    return f"{cleaned}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def output_path(graph: str, case: str, output: str) -> str:
    return f"{OUTPUTS}/{stem(graph)}/{stem(case)}/{stem(output)}.npy"


def tensor_path(case: str, name: str) -> str:
    return f"{TENSORS}/{stem(case)}/{stem(name)}.npy"


@dataclass
class DeviceFolder:
    """A device's folder, listed once: its regular files by relative path, and what device.json says."""

    root: Path
    files: set[str] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)  # links, devices, FIFOs: named, never read
    device: dict[str, Any] = field(default_factory=dict)

    def load(self, rel: str) -> np.ndarray:
        """A .npy file of the folder, read without pickles within the tensor bounds."""
        if rel not in self.files:
            raise DeviceFolderError(f"{rel} is not in the folder")
        try:
            return load_npy(self.root / rel, rel)
        except TensorFileError as exc:
            raise DeviceFolderError(str(exc)) from None
        except UNREADABLE as exc:
            raise DeviceFolderError(f"{rel} cannot be read as .npy: {exc}") from None


def read_folder(root: Path) -> DeviceFolder:
    """List the folder (no link followed, at most MAX_ENTRIES entries) and read device.json."""
    try:
        top = os.lstat(root)
    except OSError as exc:
        raise DeviceFolderError(f"{root}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(top.st_mode):
        raise DeviceFolderError(f"{root} is not a folder")
    found = DeviceFolder(root)
    count = 0
    pending = [""]
    while pending:
        rel_dir = pending.pop()
        try:
            entries = list(os.scandir(root / rel_dir if rel_dir else root))
        except OSError as exc:
            raise DeviceFolderError(f"{rel_dir or root}: {exc.strerror or exc}") from None
        for entry in entries:
            count += 1
            if count > MAX_ENTRIES:
                raise DeviceFolderError(f"{root} holds more than {MAX_ENTRIES:,} files and folders")
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                pending.append(rel)
            elif stat.S_ISREG(mode):
                found.files.add(rel)
            else:
                found.refused.append(rel)
    found.device = _device_json(found)
    return found


def _device_json(folder: DeviceFolder) -> dict[str, Any]:
    if DEVICE_JSON not in folder.files:
        return {}
    path = folder.root / DEVICE_JSON
    with path.open("rb") as stream:
        data = stream.read(MAX_DEVICE_JSON_BYTES + 1)
    if len(data) > MAX_DEVICE_JSON_BYTES:
        raise DeviceFolderError(f"{DEVICE_JSON} is larger than {MAX_DEVICE_JSON_BYTES >> 10} KiB")
    try:
        parsed = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DeviceFolderError(f"{DEVICE_JSON} is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise DeviceFolderError(f"{DEVICE_JSON} is not a JSON object")
    return {str(k)[:64]: _word(v) for k, v in list(parsed.items())[:64] if _word(v) is not None}


def _word(value: Any) -> str | int | float | bool | None:
    """A value of device.json kept as a short plain value: strings cut, nested values dropped."""
    if isinstance(value, str):
        return value[:MAX_WORD_CHARS]
    if isinstance(value, (bool, int, float)):
        return value
    return None
