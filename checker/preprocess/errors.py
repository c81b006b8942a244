"""Why a raw input could not be turned into a tensor."""

from __future__ import annotations

from checker.errors import Error


class PreprocessError(Error):
    """The declared preprocessing or the raw file is unusable (a bundle problem)."""


class CannotReproduce(PreprocessError):
    """The declared preprocessing is valid, but this checker cannot reproduce it here."""


class MissingExtra(CannotReproduce):
    """An optional dependency (Pillow, tokenizers) is not installed."""

    def __init__(self, extra: str, package: str) -> None:
        super().__init__(
            f"{package} is not installed, so {extra} inputs cannot be rebuilt from raw files; "
            f"install it with: pip install 'onnx-release-checker[{extra}]'"
        )
        self.extra = extra
        self.package = package


class MissingLibrary(CannotReproduce):
    """A library a step names (OpenCV, torchvision) is not installed: never replaced by another one."""

    def __init__(self, extra: str, package: str, use: str) -> None:
        super().__init__(
            f"{package} is not installed here, so the checker cannot reproduce {use}; "
            f"install it with: pip install 'onnx-release-checker[{extra}]'"
        )
        self.extra = extra
        self.package = package
