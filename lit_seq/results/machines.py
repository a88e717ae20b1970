"""Whether a cell's seeds ran where the same seed gives the same digits.

A run's digits follow its CPU (vendor and model: another kernel sums in another order), its
torch build and kernel level, its thread count and its precision (docs/grids.md, "What moves
a run's digits"). A cell whose seeds differ in any of these mixes machines: its mean is
still a mean over seeds, but a per-seed value may not be what the same seed gives on the
others' machine, so its tables flag it. Worked example: seeds 0-4 with ``torch_threads`` 1
and seeds 5-9 with 2 -> ``torch_threads 1 (5), 2 (5)``.
"""

import pandas as pd

# the record fields (lit_seq.record.ENVIRONMENT_FIELDS) that can move a seed's digits
DIGIT_FIELDS = ["device_name", "cpu_capability", "torch_version", "torch_threads", "precision"]


def _text(value) -> str:
    """``1`` for a thread count read back from a table as ``1.0``; text as it is."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def mixed_machines(runs: pd.DataFrame) -> str:
    """Each :data:`DIGIT_FIELDS` field on which ``runs`` differ, with its values and how
    many runs have each (``"torch_threads 1 (5), 2 (5)"``); "" when they all agree (a field a
    record does not know, from before it was recorded, counts as no difference)."""
    parts = []
    for field in DIGIT_FIELDS:
        if field not in runs:
            continue
        counts = runs[field].dropna().map(_text).value_counts(sort=False)
        if len(counts) > 1:
            values = ", ".join(f"{value} ({n})" for value, n in sorted(counts.items()))
            parts.append(f"{field} {values}")
    return "; ".join(parts)
