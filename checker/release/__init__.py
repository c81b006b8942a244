"""Release tooling: start a bundle from a graph (`checker init`), store comparison cases (`checker case add`,
`save_case` for export scripts), and pack one identified release (`checker pack`).

An export script saves each case right after running the original model, before converting it:

    from checker.release import save_case

    logits = model(pixel_values)
    save_case("release/", "meadow", inputs={"pixel_values": pixel_values}, expected={"logits": logits},
              reference="PyTorch 2.5.1 eager, float32, x86_64", tags=["ordinary"])
"""

from __future__ import annotations

from checker.release.api import save_case

__all__ = ["save_case"]
