"""Where a grid's hours went: its records' seconds by phase, in total and by cell.

:func:`phase_table` reads each record's ``phase_seconds`` (wall seconds by phase of the fit:
``lit_seq.fit.phases``) and ``wall_seconds`` (the whole run, as its worker timed it); one
row per cell and a first row ``all``. A run trained in a pack of K (``pack_size``) counts
1/K of the pack's wall seconds, its share of the worker's time (its phases are its share
already). ``rest`` is what no phase covers (the worker's set-up of the run, W&B, the
record's write); ``cpu`` the CPU seconds of the phases. Records made before phases were
kept count in ``wall`` and ``no_phases`` but in no phase, and the Markdown says how many.

Worked example: two runs of one cell, wall 10 s and 6 s, phases {build 2, train 5,
range_eval 2} and {build 1, train 3, range_eval 1} -> wall 16, build 3, train 8,
range_eval 3, rest 2; range_eval is 3 / 16 = 19% of the wall.
A row none of whose runs kept phases prints "-" for them (not 0).
"""

from __future__ import annotations

import pandas as pd

from lit_seq.record import PHASES, RunRecord
from lit_seq.results.markdown import markdown_table

HOURS_COLUMNS = ["cell", "runs", "no_phases", "wall", "timed_wall", *PHASES, "rest", "cpu"]


def _row(cell: str, records: list[RunRecord]) -> dict:
    share = [1 / max(r.pack_size, 1) for r in records]
    timed = [(r, k) for r, k in zip(records, share, strict=True) if r.phase_seconds]
    row = {"cell": cell, "runs": len(records), "no_phases": len(records) - len(timed)}
    row["wall"] = sum((r.wall_seconds or 0.0) * k for r, k in zip(records, share, strict=True))
    for phase in PHASES:
        row[phase] = sum(r.phase_seconds.get(phase, 0.0) for r, _ in timed)
    row["timed_wall"] = sum((r.wall_seconds or 0.0) * k for r, k in timed)
    row["rest"] = row["timed_wall"] - sum(row[phase] for phase in PHASES)
    row["cpu"] = sum(sum(r.phase_cpu_seconds.values()) for r, _ in timed)
    return row


def phase_table(records: list[RunRecord]) -> pd.DataFrame:
    """``all``, then one row per cell in grid order: seconds by phase (module docstring)."""
    records = sorted(records, key=lambda r: (r.index, r.run_id))
    cells: dict[str, list[RunRecord]] = {}
    for record in records:
        cells.setdefault(record.cell or record.run_id, []).append(record)
    rows = [_row("all", records), *(_row(c, members) for c, members in cells.items())]
    return pd.DataFrame(rows, columns=HOURS_COLUMNS).round(3)


def _hours(seconds: float, wall: float) -> str:
    share = f" ({seconds / wall:.0%})" if wall > 0 else ""
    return f"{seconds / 3600:.2f} h{share}" if seconds >= 360 else f"{seconds:.1f} s{share}"


def phase_markdown(table: pd.DataFrame) -> str:
    """The table in Markdown: each phase's seconds (or hours) and its share of the wall of
    the runs that kept phases; "-" in a row none of whose runs kept them."""
    header = ["cell", "runs", "wall", *PHASES, "rest", "CPU"]
    body = []
    for _, row in table.iterrows():
        timed = row["no_phases"] < row["runs"]
        cells = [row["cell"], str(row["runs"]), _hours(row["wall"], 0)]
        cells += [_hours(row[c], row["timed_wall"]) if timed else "-" for c in [*PHASES, "rest"]]
        body.append([*cells, _hours(row["cpu"], 0) if timed else "-"])
    text = "### Where the hours went, by phase\n\n" + markdown_table(header, body)
    missing = int(table.iloc[0]["no_phases"]) if len(table) else 0
    if missing:
        text += (
            f"\n{missing} of {int(table.iloc[0]['runs'])} records were made before runs kept "
            "their phases: their wall seconds are in `wall` but in no phase or `rest`, and the "
            "shares are of the wall of the runs that kept them.\n"
        )
    return text
