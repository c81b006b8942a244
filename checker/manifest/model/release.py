"""What is released, and the graph it ships: `release:` and `graph:`."""

from __future__ import annotations

from typing import Annotated, Any

from checker.manifest.model.common import BundlePath, Sha256
from checker.manifest.model.core import Block, S

MAX_EXTERNAL_FILES = 4096
MAX_RELEASE_FILES = 4096


class Release(Block):
    WORDS = S("Release", "What is being released.")

    name: Annotated[
        str,
        S(
            "Name",
            "The release's name: lower case letters, digits, '.', '_' and '-'.",
            pattern="^[a-z0-9][a-z0-9._-]*$",
            max_length=128,
        ),
    ]
    version: Annotated[
        str, S("Version", "The release's version (a string; quote it in YAML).", min_length=1, max_length=64)
    ]
    description: Annotated[str | None, S("Description", "Free text.", max_length=4096)] = None
    license: Annotated[str | None, S("License", "An SPDX identifier.", max_length=128)] = None
    files: Annotated[
        list[BundlePath] | None,
        S(
            "Other files",
            "Files the release ships beside what the other fields name (a README, a licence text, the model "
            "folder's configs): named, so each is in the bundle digest and none is bundle.unlisted. Not judged.",
            max_items=MAX_RELEASE_FILES,
            unique_items=True,
        ),
    ] = None
    digest: Annotated[
        str | None,
        S(
            "Bundle digest",
            "sha256: + the SHA-256 of the sorted '<sha256>  <name>' lines of every named file and every manifest "
            "field but this one (bundle.sha256 holds them); written by `checker lock`.",
            pattern="^sha256:[0-9a-f]{64}$",
        ),
    ] = None


class ExternalFile(Block):
    WORDS = S("External data file", "One file of external tensor data.")

    path: BundlePath
    sha256: Sha256 | None = None


class Producer(Block):
    WORDS = S("Producer", "How the graph was exported (a warning when absent).")

    tool: Annotated[str, S("Tool", "The exporter, e.g. torch.onnx, tf2onnx.", min_length=1)]
    version: Annotated[str | None, S("Tool version", "The exporter's version.", min_length=1)] = None
    settings: Annotated[dict[str, Any] | None, S("Export settings", "The export settings, free-form (e.g. opset).")] = (
        None
    )


class Graph(Block):
    WORDS = S("Graph", "The baseline graph: the unquantized export.")

    path: Annotated[BundlePath | None, S("Graph file", "The .onnx file, relative to the manifest.")] = None
    sha256: Sha256 | None = None
    external_data: Annotated[
        list[ExternalFile] | None,
        S(
            "External weights",
            "Every file the graph's external-data tensors reference, with digests. Required exactly when the "
            "graph stores tensors externally.",
            max_items=MAX_EXTERNAL_FILES,
        ),
    ] = None
    producer: Producer | None = None
