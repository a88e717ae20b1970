"""Delétang et al. 2023's Table 2 in its own layout: 15 tasks x 6 models, ours beside theirs.

``lit_seq.results.paper`` writes one line per row a grid ran (``paper.csv``); a page that
draws its rows from several grids (the main grid, its budget checks, a CPU grid of the rows
a CPU can decide) lays them out here, one grid per row, the first that ran it:

- :func:`combine` keeps, per (task, arch), the line of the first table that has it, with the
  name of the grid it came from;
- :func:`layout_markdown` prints the paper's grid (tasks down, by level; their model order
  across), each cell ``ours (max over runs) / theirs`` and its two verdicts (by the maximum
  over runs; in every seed), "not run" where no grid given ran the row;
- :func:`thesis` decides the paper's thesis (its abstract: only networks with a stack or a
  tape generalise on the context-free and context-sensitive tasks) by the pages' rule, from
  the rows alone: a row that fits N in no run is ranked against nothing.
"""

from __future__ import annotations

import pandas as pd

from lit_seq.results.markdown import markdown_table
from lit_seq.results.paper import MEMORY_ARCHS, NON_REGULAR, REGULAR, SOLVED

LEVELS = {"R": REGULAR, "DCF": NON_REGULAR[:4], "CS": NON_REGULAR[4:]}
ARCHS = ("rnn", "stack_rnn", "ndstack_rnn", "tape_rnn", "transformer", "lstm")  # their order
OTHER_ARCHS = tuple(a for a in ARCHS if a not in MEMORY_ARCHS)


def combine(tables: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """The lines of ``(grid name, paper.csv table)`` pairs, one per (task, arch): the first
    grid's that has it; column ``grid`` names it."""
    seen, lines = set(), []
    for name, table in tables:
        for _, line in table.iterrows():
            key = (line["task"], line["arch"])
            if key not in seen:
                seen.add(key)
                lines.append({**line.to_dict(), "grid": name})
    return pd.DataFrame(lines)


def _num(value) -> str:
    return "-" if value is None or pd.isna(value) else f"{float(value):.1f}"


def _theirs(line) -> str:
    if not pd.isna(line["paper"]):
        return _num(line["paper"])
    solved = line["paper_solved"]
    if pd.isna(solved) or solved == "":
        return "no anchor"
    return "solved (text)" if str(solved) == "True" else "unsolved (text)"


def _cell(line) -> str:
    if line is None:
        return "not run"
    every = line.get("verdict_every_seed")
    every = every if isinstance(every, str) and every else "no reported seed"
    return f"{_num(line['max'])} / {_theirs(line)}<br>{line['verdict']}; {every}"


def layout_markdown(rows: pd.DataFrame) -> str:
    """The paper's grid of ``rows`` (a :func:`combine` table): one line per task."""
    index = {(r["task"], r["arch"]): r for _, r in rows.iterrows()}
    body = [
        [level, task, *(_cell(index.get((task, arch))) for arch in ARCHS)]
        for level, tasks in LEVELS.items()
        for task in tasks
    ]
    return markdown_table(["level", "task", *ARCHS], body)


def _side(rows: pd.DataFrame, archs: tuple[str, ...]) -> tuple[int, int, int]:
    """(rows run, rows that fit N, rows solved: fit N and max over runs >= 90) of ``archs``
    on the non-regular tasks."""
    mine = rows[rows["arch"].isin(archs) & rows["task"].isin(NON_REGULAR)]
    fits = mine[pd.to_numeric(mine["fits"], errors="coerce").fillna(SOLVED) >= SOLVED]
    solved = fits[pd.to_numeric(fits["max"], errors="coerce") >= SOLVED]
    return len(mine), len(fits), len(solved)


def thesis(rows: pd.DataFrame) -> dict:
    """The thesis row: memory models against RNN / LSTM / Transformer on the DCF and CS tasks.

    ``agree``: a memory row is solved and no other row that fits N is; ``disagree``: a row of
    the others is solved (fits N and >= 90 past it), or memory rows fit N and none is solved;
    ``inconclusive`` otherwise, and whenever a side has no row that fits N (ranked against
    nothing)."""
    memory, other = _side(rows, MEMORY_ARCHS), _side(rows, OTHER_ARCHS)
    if not memory[1] or not other[1]:
        verdict = "inconclusive"
    elif other[2] or not memory[2]:
        verdict = "disagree"
    else:
        verdict = "agree"
    return {"memory": memory, "other": other, "verdict": verdict}


def thesis_markdown(rows: pd.DataFrame) -> str:
    """:func:`thesis` as one table row per side and the verdict."""
    result = thesis(rows)
    body = [
        [side, *result[key]]
        for side, key in (
            ("stack / ndstack / tape RNN", "memory"),
            ("RNN / LSTM / Transformer", "other"),
        )
    ]
    header = ["DCF + CS tasks", "rows run", "rows that fit N", "rows solved (fit N, max >= 90)"]
    return markdown_table(header, body) + f"\n\nThesis (pages' rule): **{result['verdict']}**"
