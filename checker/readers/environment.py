"""The versions a verdict depends on, recorded so it can be reproduced."""

from __future__ import annotations

import platform
import sys

from checker import __version__

PACKAGES = ("onnx", "onnxruntime", "numpy")


def installed_version(package: str) -> str | None:
    """A package's version: the imported module's own when it is loaded (importlib.metadata costs a small
    run a noticeable share of its time), else the installed distribution's; None when it is not installed."""
    module = sys.modules.get(package)
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        return version
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _version(package: str) -> str:
    return installed_version(package) or "not installed"


def environment() -> dict[str, str]:
    env = {"checker": __version__, "python": platform.python_version()}
    env.update({p: _version(p) for p in PACKAGES})
    env["platform"] = f"{platform.system()} {platform.machine()}"
    env["machine"] = platform.machine()
    return env
