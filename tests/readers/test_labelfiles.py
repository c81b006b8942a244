"""Label mappings from text, JSON and graph metadata, parsed without eval."""

from __future__ import annotations

import pytest

from checker.readers.labelfiles import LabelError, from_text, from_value


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("cat\ndog\n", ["cat", "dog"]),
        ("cat\ndog", ["cat", "dog"]),
        ("cat\r\ndog\r\n", ["cat", "dog"]),
        ('["cat", "dog"]', ["cat", "dog"]),
        ('{"1": "dog", "0": "cat"}', ["cat", "dog"]),
        ("{0: 'cat', 1: 'dog', 2: 'fox'}", ["cat", "dog", "fox"]),
        ("['cat', 'dog']", ["cat", "dog"]),
    ],
)
def test_label_forms(text: str, labels: list[str]) -> None:
    assert from_text(text, "labels") == labels


def test_a_text_file_is_one_label_per_line_whatever_the_lines_look_like(tmp_path: object) -> None:
    from pathlib import Path

    from checker.readers.labelfiles import from_file

    path = Path(str(tmp_path)) / "labels.txt"
    path.write_text('[background]\n{person}\n["a", "b"]\n')
    assert from_file(path, "labels.txt") == ["[background]", "{person}", '["a", "b"]']


def test_python_literal_is_not_evaluated() -> None:
    with pytest.raises(LabelError):
        from_text("{0: __import__('os').system('touch /tmp/pwned')}", "metadata")


def test_mapping_with_gaps_is_refused() -> None:
    with pytest.raises(LabelError, match="without gaps"):
        from_value({"0": "cat", "2": "dog"}, "labels.json")


def test_metadata_labels_counted_against_the_graph(tmp_path: object) -> None:
    import onnx
    from bundlekit import linear_model, manifest, write_bundle

    from checker.context import Options
    from checker.verify import verify_bundle

    model = linear_model()
    onnx.helper.set_model_props(model, {"names": "{0: 'a', 1: 'b'}"})
    data = manifest()
    data["outputs"][0].update(meaning="logits", labels={"metadata_key": "names"})
    root = write_bundle(tmp_path / "b", model, data)  # type: ignore[operator]
    report = verify_bundle(root, Options())
    found = [f for f in report.findings if f.id == "labels.count"]
    assert found and "2 labels" in found[0].message and "3 entries" in found[0].message
