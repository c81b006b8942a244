"""How the bundle is validated on the device: `validation:`."""

from __future__ import annotations

from typing import Annotated

from checker.manifest.model.core import Block, S

MAX_ARGUMENT = 4096
MAX_ARGUMENTS = 256
MAX_TIMEOUT_S = 86400


class Validation(Block):
    WORDS = S("Validation", "How the bundle is validated on the device.")

    command: Annotated[
        Annotated[str, S(min_length=1, max_length=MAX_ARGUMENT)]
        | Annotated[
            list[str],
            S(min_items=1, max_items=MAX_ARGUMENTS, items=S(max_length=MAX_ARGUMENT)),
        ]
        | None,
        S(
            "Command",
            "The command that validates the bundle on the device. Run only with --run-validation, split into "
            "arguments without a shell, in the bundle folder.",
        ),
    ] = None
    timeout_s: Annotated[
        float,
        S(
            "Timeout",
            "Seconds before the command is stopped (default 600).",
            exclusive_minimum=0,
            maximum=MAX_TIMEOUT_S,
        ),
    ] = 600.0
