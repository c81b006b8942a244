"""What an image block's `config:` and `import:` name, read from the bundle: the one place image preprocessing
reads a file before parsing (spec.py parses what this returns and reads none)."""

from __future__ import annotations

from pathlib import Path

from checker.bundle.paths import BundlePathError, resolve_inside
from checker.manifest.model import image as m
from checker.preprocess.errors import PreprocessError
from checker.preprocess.image.hf_config import HfImageConfig, map_config, read_config
from checker.preprocess.image.importers import Imported, hf_origin, read_traced
from checker.preprocess.image.origins import Origin
from checker.preprocess.image.shorthand import spec_steps
from checker.preprocess.image.spec import SHORTHAND_FIELDS, ImageBlock, parse_block


def read_block(prep: m.Image, root: Path) -> ImageBlock:
    """The typed block with the file it names read from the bundle at `root` (the schema keeps `steps`,
    `import` and the shorthand fields apart)."""
    if prep.import_ is not None:
        imported = import_steps(prep.import_, root)
        return ImageBlock(prep, imported=imported.steps, origins=imported.origins)
    if prep.config is not None and prep.steps is None:
        config = read_hf_config(prep.config, root)
        return ImageBlock(prep, config=config, origins=_config_origins(prep, config))
    return ImageBlock(prep)


def _config_origins(prep: m.Image, config: HfImageConfig) -> tuple[Origin | None, ...] | None:
    """The config's keys behind each step, for explanations in its words; None when the manifest overrides
    any of its fields (a step may then be the manifest's, not the config's) or the block does not parse."""
    if any(getattr(prep, k) is not None for k in SHORTHAND_FIELDS):
        return None
    try:
        steps = spec_steps(parse_block(ImageBlock(prep, config=config)))
    except PreprocessError:
        return None  # parsing the block again reports it
    assert prep.config is not None
    return tuple(hf_origin(step, prep.config) for step in steps)


def import_steps(imported: m.Import, root: Path) -> Imported:
    """The steps `preprocessing.import` names: {format, path} with the path inside the bundle."""
    return read_traced(imported.format, _inside(root, imported.path), imported.path)


def read_hf_config(rel: str, root: Path) -> HfImageConfig:
    """The manifest fields the preprocessor_config.json at `rel` amounts to."""
    return map_config(read_config(_inside(root, rel), rel), rel)


def _inside(root: Path, rel: str) -> Path:
    try:
        return resolve_inside(root, rel)
    except BundlePathError as e:
        raise PreprocessError(str(e)) from e
