"""Every seed's score, per cell: the run-score distribution plot of a task (a strip plot).

``plots/seeds_<task>.png`` draws one point per run at its score (the page's score: past the
training length where the task has it, :func:`~lit_seq.results.best.score_column`), one
column per cell, a short bar at the cell's mean, and the chance level as a dotted line; the
title names the score, the lengths it averages and the chance level
(:func:`~lit_seq.results.scored_on.scored_on`), and the training length N.

Why beside the bars: a mean hides a split. Eight seeds that solve recall and two at chance
average 0.9, and so do ten seeds at 0.9; the bars draw both alike, the points do not
(mixers.md: the transformer solves in 8 of 10 seeds, mamba in none, their means equal).
Within a column the points are spread sideways by seed order, not at random, so the same
runs give the same picture.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from lit_seq.results.best import score_column
from lit_seq.results.plots import PLOTS, plot_axes
from lit_seq.results.scored_on import scored_on

SPREAD = 0.3  # half the width a column's points spread over (columns are 1 apart)


def _cell_labels(rows: pd.DataFrame) -> pd.Series:
    """Each run's column: the values of what varies among the task's runs (arch, axes),
    ``rnn, lr=0.01``-style; the cell name when nothing does."""
    varying = [a for a in plot_axes(rows) if rows[a].nunique(dropna=False) > 1]
    if not varying:
        return rows["cell"].astype(str)
    parts = [
        rows[a].map(lambda v, a=a: "" if pd.isna(v) else (v if a == "arch" else f"{a}={v}"))
        for a in varying
    ]
    return pd.concat(parts, axis=1).apply(lambda r: ", ".join(p for p in r if p), axis=1)


def strip_figure(rows: pd.DataFrame, task: str):
    """The strip plot of ``rows`` (one task's ok, reported runs): a matplotlib Figure (the
    caller closes it); None when no run has the score."""
    import matplotlib.pyplot as plt

    main = rows["main_metric"].dropna()
    score = score_column(rows, main.iloc[0] if len(main) else "acc")
    if score not in rows:
        return None
    values = pd.to_numeric(rows[score], errors="coerce")
    scored, labels = rows[values.notna()], _cell_labels(rows)[values.notna()]
    values = values[values.notna()]
    if scored.empty:
        return None
    order = list(dict.fromkeys(labels))
    fig, ax = plt.subplots(figsize=(max(4.5, 1.0 + 0.55 * len(order)), 3.8))
    for x, label in enumerate(order):
        cell = values[labels == label].loc[scored.loc[labels == label, "seed"].sort_values().index]
        k = len(cell)
        offsets = [0.0] if k == 1 else [SPREAD * (2 * i / (k - 1) - 1) for i in range(k)]
        ax.scatter([x + o for o in offsets], cell, s=14, alpha=0.75, zorder=3)
        mean = cell.mean()
        ax.hlines(mean, x - SPREAD - 0.05, x + SPREAD + 0.05, color="black", linewidth=1)
    chance = pd.to_numeric(scored["chance"], errors="coerce").dropna()
    if len(chance):
        level = chance.iloc[0]
        ax.axhline(level, color="grey", linestyle=":", linewidth=1, label=f"chance {level:.3g}")
        # named on the line's right end, under it: a legend box can hide points at 1.0
        ax.text(
            len(order) - 0.45,
            level,
            f"chance {level:.3g}",
            fontsize=7,
            color="grey",
            ha="right",
            va="top",
        )
    ax.set_xticks(range(len(order)), order, fontsize=7, rotation=30 if len(order) > 4 else 0)
    ax.set_xlim(-0.6, len(order) - 0.4)
    if values.between(0, 1).all():  # a rate: its whole range, so chance sits where it is
        ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel(f"{score}\n(one point per run; bar: mean)", fontsize=8)
    lengths = pd.to_numeric(scored["train_length"], errors="coerce").dropna().unique()
    trained = f"trained at N = {', '.join(str(int(n)) for n in sorted(lengths))}"
    label = scored_on(scored, score)
    title = f"{task}: every run's {score}\n{trained}" + (f"; {label}" if label else "")
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    return fig


def strip_plot(folder: Path, task: str, rows: pd.DataFrame) -> Path | None:
    """Write ``seeds_<task>.png`` of ``rows`` into ``folder``; its path, or None (no score)."""
    import matplotlib.pyplot as plt

    fig = strip_figure(rows, task)
    if fig is None:
        return None
    path = Path(folder) / (re.sub(r"[^A-Za-z0-9._-]+", "_", f"seeds_{task}") + ".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_strip_plots(out_dir: Path, runs: pd.DataFrame) -> list[Path]:
    """One :func:`strip_plot` per task of ``runs`` (its ok runs that a ``select:`` block
    reported), in ``out_dir``/plots; return the paths written."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window

    ok = runs[(runs["status"] == "ok") & runs["selected"].ne(False)]
    written = []
    for task, rows in ok.groupby("task", sort=False):
        # a select: axis is chosen per seed, not a column of its own
        rows = rows.drop(columns=list(set(rows["select_axis"].dropna()) - {""}))
        path = strip_plot(Path(out_dir) / PLOTS, str(task), rows)
        written += [path] if path else []
    return written
