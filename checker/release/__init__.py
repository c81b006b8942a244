"""Release tooling: start a bundle from a graph (`checker init`), store comparison cases (`checker case add`,
`save_case` for export scripts), record a quantized or float16 graph as a variant with measured rules (`checker
variant add`), and pack one identified release (`checker pack`).

An export script saves each case right after running the original model, before converting it:

    from checker.release import save_case

    logits = model(pixel_values)
    save_case("release/", "meadow", inputs={"pixel_values": pixel_values}, expected={"logits": logits},
              reference="PyTorch 2.5.1 eager, float32, x86_64", tags=["ordinary"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from checker.release.api import save_case

__all__ = ["save_case"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the CLI imports this package's commands, and `checker --version` needs none of it.
    if name == "save_case":
        from checker.release.api import save_case

        return save_case
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
