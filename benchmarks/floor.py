"""The floor: the least a comparison can do. One onnxruntime session, every case loaded and run, numpy.allclose.

Usage: python floor.py BUNDLE_FOLDER (reads the bundle.json that material.write_bundle wrote). Exit 0 when every
case is close.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort


def main(root: Path) -> int:
    data = json.loads((root / "bundle.json").read_text())
    so = ort.SessionOptions()  # the manifest's thread counts, as the checker applies them
    for key, value in data["runtime"].get("session_options", {}).items():
        if key.endswith("_num_threads"):
            setattr(so, key, value)
    session = ort.InferenceSession(str(root / data["graph"]["path"]), so, providers=["CPUExecutionProvider"])
    rule = data["comparison"]["rules"][0]
    ok = True
    for case in data["comparison"]["cases"]:
        feed = {name: np.load(root / rel) for name, rel in case["inputs"].items()}
        expected = {name: np.load(root / rel) for name, rel in case["expected"].items()}
        outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed), strict=True))
        for name, want in expected.items():
            ok &= bool(np.allclose(outputs[name], want, rtol=rule["rtol"], atol=rule["atol"]))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
