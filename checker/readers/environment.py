"""The versions a verdict depends on, recorded so it can be reproduced."""

from __future__ import annotations

import platform
from importlib import metadata

from checker import __version__

PACKAGES = ("onnx", "onnxruntime", "numpy")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, str]:
    env = {"checker": __version__, "python": platform.python_version()}
    env.update({p: _version(p) for p in PACKAGES})
    env["platform"] = f"{platform.system()} {platform.machine()}"
    env["machine"] = platform.machine()
    return env
