"""What every part of the grid driver shares: its error type and how values are spelled.

Kept free of torch and Lightning so ``python -m lit_seq.report`` starts fast.
"""

import json


class BadGrid(ValueError):
    """A problem with a grid spec or its output folder, shown as one line (exit code 2)."""


def format_value(value: object) -> str:
    """``value`` as LightningCLI reads it on the command line (YAML), and as tables show it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)
