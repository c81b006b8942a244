"""The input kinds, by the `kind:` a manifest gives: the one table the fidelity and ranges stages look a kind
up in. A new kind is a package beside image/, audio/, text/ and tabular/ with its KIND, and one entry here."""

from __future__ import annotations

from checker.preprocess.audio.kind import KIND as AUDIO
from checker.preprocess.image.kind import KIND as IMAGE
from checker.preprocess.kind import Kind
from checker.preprocess.tabular.kind import KIND as TABULAR
from checker.preprocess.text.kind import KIND as TEXT

KINDS: dict[str, Kind] = {"image": IMAGE, "text": TEXT, "audio": AUDIO, "tabular": TABULAR}

# A derived input is made by its text input's tokenization (its `field`): the text kind rebuilds it.
DERIVED = "derived"
