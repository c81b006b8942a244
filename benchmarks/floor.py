"""The floor: the least a comparison can do. One onnxruntime session, every case loaded and run, numpy.allclose.

Usage: python floor.py BUNDLE_FOLDER [--libraries] (reads the bundle.json that material.write_bundle wrote). Exit
0 when every case is close. With --libraries it first loads the libraries `checker verify` checks such a bundle
with (onnx for the graph and the ONNX checker, PyYAML for the manifest, jsonschema_rs for its schema, packaging for
the runtime's version specifier), does nothing with them, and exits without tearing the interpreter down, as the
checker does: no checker that loads them can go below that.
"""

from __future__ import annotations

import json
import os
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


def load_libraries() -> None:
    import jsonschema_rs  # noqa: F401
    import onnx  # noqa: F401
    import packaging.specifiers  # noqa: F401
    import yaml  # noqa: F401


if __name__ == "__main__":
    if "--libraries" not in sys.argv[2:]:
        raise SystemExit(main(Path(sys.argv[1])))
    load_libraries()
    code = main(Path(sys.argv[1]))
    sys.stdout.flush()
    os._exit(code)
