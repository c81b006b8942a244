"""What an image block's `config:` and `import:` name, read from the bundle: the one place image preprocessing
reads a file before parsing (spec.py parses what this returns and reads none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker.bundle.paths import BundlePathError, resolve_inside
from checker.preprocess import fields as f
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.hf_config import HfImageConfig, map_config, read_config
from checker.preprocess.image.importers import FORMATS, Imported, hf_origin, read_traced
from checker.preprocess.image.origins import Origin
from checker.preprocess.image.shorthand import spec_steps
from checker.preprocess.image.spec import SHORTHAND_FIELDS, ImageBlock, parse_block


def read_block(prep: dict[str, Any], root: Path) -> ImageBlock:
    """`prep` with the file it names read from the bundle at `root`. A block that mixes `steps`, `import`
    and the shorthand fields reads nothing: parsing refuses it first."""
    mixed = "steps" in prep or any(k in prep for k in (*SHORTHAND_FIELDS, "config"))
    if "import" in prep and not mixed:
        imported = import_steps(prep["import"], root)
        return ImageBlock(prep, imported=imported.steps, origins=imported.origins)
    if "config" in prep and "steps" not in prep and "import" not in prep:
        config = read_hf_config(prep["config"], root)
        return ImageBlock(prep, config=config, origins=_config_origins(prep, config))
    return ImageBlock(prep)


def _config_origins(prep: dict[str, Any], config: HfImageConfig) -> tuple[Origin | None, ...] | None:
    """The config's keys behind each step, for explanations in its words; None when the manifest overrides
    any of its fields (a step may then be the manifest's, not the config's) or the block does not parse."""
    if any(k not in ("kind", "config", "tolerance") for k in prep):
        return None
    try:
        steps = spec_steps(parse_block(ImageBlock(prep, config=config)))
    except PreprocessError:
        return None  # parsing the block again reports it
    return tuple(hf_origin(step, str(prep["config"])) for step in steps)


def import_steps(value: Any, root: Path) -> Imported:
    """The steps `preprocessing.import` names: {format, path} with the path inside the bundle."""
    where = "preprocessing.import"
    d = f.mapping(value, where)
    fmt = f.choice(d, "format", FORMATS, "", where)
    rel = d.get("path")
    if not isinstance(rel, str) or not rel:
        raise PreprocessError(f"{where}.path is {rel!r}; expected a bundle path")
    return read_traced(fmt, _inside(root, rel), rel)


def read_hf_config(rel: Any, root: Path) -> HfImageConfig:
    """The manifest fields the preprocessor_config.json at `rel` amounts to."""
    if not isinstance(rel, str):
        raise PreprocessError(f"preprocessing.config is {rel!r}; expected a bundle path")
    return map_config(read_config(_inside(root, rel), rel), rel)


def _inside(root: Path, rel: str) -> Path:
    try:
        return resolve_inside(root, rel)
    except BundlePathError as e:
        raise PreprocessError(str(e)) from e
