"""A results page's own tables, written from the grid's aggregate: cells chosen by the page.

A page (docs/results/README.md) shows cells of several blocks side by side: a task's
architectures, a task's encodings. Its tables file says which, and ``lit_seq.report DIR
--tables FILE`` writes them to ``DIR/tables.md``, so the page's numbers come from one
command rather than by hand. The file is a YAML list of tables::

    - title: Architecture at N and past it
      columns: [at N, past N]
      rows:      # a label, the cell (named as lit_seq.compare names one), a metric a column
        - [echo / rnn, 'recurrent_echo rnn', test/acc, range_ood/acc_ood]
        - [echo / transformer, 'echo_pos sinusoidal', test/acc, '-']

A table may add ``best_rate: <metric>``: one more column, Zoology's protocol beside ours,
the best rate's ``metric`` recomputed from our runs seed by seed
(:mod:`lit_seq.results.best_rate`), next to the columns' selected-rate means.

Each entry shows ``mean [95% bootstrap interval]; successes/n [Wilson interval]``
(:func:`tables.summary_cell`) and, after the columns, the rate the cell chose and whether it
sits at an end of its sweep, and what its seeds' machines differ in when some row's do
(``machines differ``, :mod:`lit_seq.results.machines`); ``-`` leaves an entry empty.
"""

import math
from pathlib import Path

import pandas as pd
import yaml

from lit_seq.results.best_rate import best_rate_text
from lit_seq.results.compare import find_cell
from lit_seq.results.markdown import markdown_table
from lit_seq.results.scored_on import scored_on
from lit_seq.results.stats import under_covers_note
from lit_seq.results.tables import MIXED, summary_cell

TABLE_KEYS = ("title", "columns", "rows")
OPTIONAL_KEYS = ("best_rate",)  # a metric: Zoology's best-rate column (best_rate.py)
EMPTY = "-"


def _chosen(row: pd.Series) -> str:
    """The rate a selecting cell chose ("lr=0.01 by mean ..." -> "0.01"), flagged at an end;
    a rate the grid sets as an axis value, "0.01 (set, not selected)"; else "shipped"."""
    selected = row.get("selected")
    if not isinstance(selected, str) or not selected.startswith("lr="):
        try:
            rate = float(row.get("lr"))
        except (TypeError, ValueError):  # no lr axis, or one whose value is "selected"
            return "shipped"
        return "shipped" if math.isnan(rate) else f"{rate:g} (set, not selected)"
    rate = selected.split()[0].removeprefix("lr=")
    edge = row.get("select_edge")
    return f"{rate} ({edge} of its sweep)" if isinstance(edge, str) and edge else rate


def _mixed(row: pd.Series) -> str:
    """The cell's ``mixed_machines`` ("" when its seeds agree, or an older aggregate)."""
    value = row.get("mixed_machines")
    return value if isinstance(value, str) else ""


def read_tables(path: Path, aggregate: pd.DataFrame) -> list[dict]:
    """The tables at ``path``, each row's cell resolved and metrics checked against
    ``aggregate``. ValueError (one line: the file, the table, the row, the problem)."""
    entries = yaml.safe_load(Path(path).read_text()) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: a tables file is a list of {{title, columns, rows}}")
    cells = list(aggregate["cell"])
    tables = []
    for i, entry in enumerate(entries):
        where = f"{path}: table {i + 1}"
        if not isinstance(entry, dict) or not set(TABLE_KEYS) <= set(entry) <= {
            *TABLE_KEYS,
            *OPTIONAL_KEYS,
        }:
            raise ValueError(
                f"{where}: keys must be exactly {list(TABLE_KEYS)}, and optionally "
                f"{list(OPTIONAL_KEYS)}, got {entry!r}"
            )
        best_rate = entry.get("best_rate")
        if best_rate is not None and f"{best_rate}_mean" not in aggregate.columns:
            raise ValueError(
                f"{where}: best_rate: no metric {best_rate!r} in this grid's aggregate"
            )
        columns = [str(c) for c in entry["columns"]]
        rows = []
        for j, row in enumerate(entry["rows"]):
            at = f"{where}, row {j + 1}"
            if not isinstance(row, list) or len(row) != 2 + len(columns):
                raise ValueError(
                    f"{at}: a row is [label, cell, one metric per column ({len(columns)})], "
                    f"got {row!r}"
                )
            label, words, *metrics = (str(v) for v in row)
            try:
                cell = find_cell(cells, words)
            except ValueError as err:
                raise ValueError(f"{at}: {str(err).splitlines()[0]}") from None
            for metric in metrics:
                if metric != EMPTY and f"{metric}_mean" not in aggregate.columns:
                    raise ValueError(f"{at}: no metric {metric!r} in this grid's aggregate")
            rows.append((label, cell, metrics))
        tables.append(
            {"title": str(entry["title"]), "columns": columns, "rows": rows, "best_rate": best_rate}
        )
    return tables


def _scored_on(table: dict, by_cell: pd.DataFrame) -> str:
    """``Scored on: past N: lengths 12-40 every 2, chance 0.5.`` per column (what its
    entries average over and their chance, from the cells' aggregate; "" if unknown)."""
    notes = []
    for i, column in enumerate(table["columns"]):
        labels = []
        for _, cell, metrics in table["rows"]:
            if metrics[i] != EMPTY:
                label = scored_on(by_cell.loc[[cell]], metrics[i])
                labels += [label] if label else []
        if labels:
            notes.append(f"{column}: {'; '.join(dict.fromkeys(labels))}")
    return f"Scored on: {' | '.join(notes)}.\n\n" if notes else ""


def tables_markdown(
    tables: list[dict], aggregate: pd.DataFrame, runs: pd.DataFrame | None = None
) -> str:
    """Every table of :func:`read_tables` as Markdown, headed by its title; ``runs`` (the
    runs table, selection runs included) for a table with a ``best_rate`` column."""
    by_cell = aggregate.set_index("cell")
    parts = []
    for table in tables:
        best_rate = table.get("best_rate")
        if best_rate and runs is None:
            raise ValueError(f"table {table['title']!r}: best_rate needs the runs table")
        mixed = [_mixed(by_cell.loc[cell]) for _, cell, _ in table["rows"]]
        peer = [f"Zoology's protocol: best rate's {best_rate}, per seed"] if best_rate else []
        header = ["", *table["columns"], *peer, "n", "rate chosen"]
        header += [MIXED] if any(mixed) else []
        body = []
        for (label, cell, metrics), flag in zip(table["rows"], mixed, strict=True):
            row = by_cell.loc[cell]
            entries = [
                EMPTY if m == EMPTY else summary_cell(row, m, per_seed=False) for m in metrics
            ]
            entries += [best_rate_text(runs, cell, best_rate)] if best_rate else []
            body.append(
                [label, *entries, str(row["n"]), _chosen(row), *([flag] if any(mixed) else [])]
            )
        parts.append(
            f"### {table['title']}\n\n" + _scored_on(table, by_cell) + markdown_table(header, body)
        )
    shown = [by_cell.loc[cell, "n"] for table in tables for _, cell, _ in table["rows"]]
    return "\n".join(parts) + under_covers_note(shown)
