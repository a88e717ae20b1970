"""PNG plots of a grid: the main metric per task and axis, at every test length.

Each plot is one group of bars per test set (training length, then the length-generalisation
lengths) and one bar per value of what it varies; height = mean over the ok runs, error bar =
their std over seeds.

A plot varies one thing and holds the rest still, so that it compares like with like:

- ``plots/<task>_<axis>.png`` varies ``axis``; every other axis of the task is held at its
  first value in grid order (the title says which), so a ``pos_mode`` plot of a grid that
  also varies ``residual`` shows the residual runs only. Runs of blocks that do not set an
  axis use their config's value for it and are kept.
- ``plots/<task>_<a>_x_<b>.png`` crosses two axes over the runs that set both (when each
  takes several values there, in at most :data:`MAX_PAIR_BARS` combinations), the rest
  held as above: interactions such as residual x depth.
"""

import itertools
import re
from pathlib import Path

import pandas as pd

from lit_seq.results.tables import ID_COLUMNS, RUN_COLUMNS, STATUS_COLUMNS, metric_order

PLOTS = "plots"
MAX_PAIR_BARS = 8


def plot_axes(runs: pd.DataFrame) -> list[str]:
    """Columns a plot can be drawn over: arch and every grid axis."""
    skip = set(ID_COLUMNS + RUN_COLUMNS + STATUS_COLUMNS) - {"arch"}
    return [c for c in runs.columns if c not in skip and "/" not in c]


def _values(rows: pd.DataFrame, axis: str) -> list:
    return list(dict.fromkeys(rows[axis].dropna()))


def held_slice(rows: pd.DataFrame, varied: list[str]) -> tuple[pd.DataFrame, dict]:
    """The runs that set every ``varied`` axis, with every other axis at its first value.

    A run whose block does not set an axis (empty cell) matches any held value of it.
    Returns (those runs, {held axis: value} for the axes that had more than one value).
    """
    rows = rows.dropna(subset=varied)
    held = {}
    for axis in plot_axes(rows):
        values = _values(rows, axis)
        if axis in varied or len(values) < 2:
            continue
        held[axis] = values[0]
        rows = rows[rows[axis].isna() | (rows[axis] == values[0])]
    return rows, held


def _bar_plot(path: Path, rows: pd.DataFrame, varied: list[str], metric: str, title: str):
    import matplotlib.pyplot as plt

    keys = [c for c in rows.columns if c.endswith(f"/{metric}") and rows[c].notna().any()]
    keys = sorted(keys, key=metric_order)
    labels = rows[varied].astype(str).agg(", ".join, axis=1)
    order = list(dict.fromkeys(labels))
    stats = rows.groupby(labels, sort=False)[keys].agg(["mean", "std"])
    fig, ax = plt.subplots(figsize=(3.2 + 0.45 * len(keys) * len(order), 3.2))
    width = 0.8 / len(order)
    for i, label in enumerate(order):
        means = [stats.loc[label, (k, "mean")] for k in keys]
        stds = [stats.loc[label, (k, "std")] for k in keys]
        xs = [j + (i - (len(order) - 1) / 2) * width for j in range(len(keys))]
        errors = [0.0 if pd.isna(s) else s for s in stds]  # one seed: no bar
        ax.bar(xs, means, width, yerr=errors, capsize=3, label=label)
    ax.set_xticks(range(len(keys)), [k.split("/")[0] for k in keys])
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=8)
    legend_title = ", ".join(varied)
    ax.legend(
        title=legend_title, fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1)
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _title(task: str, metric: str, varied: list[str], held: dict) -> str:
    title = f"{task}: {metric} by {' x '.join(varied)}"
    if held:
        title += "\n(" + ", ".join(f"{k}={v}" for k, v in held.items()) + ")"
    return title


def _file_name(task: str, varied: list[str]) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{task}_{'_x_'.join(varied)}") + ".png"


def write_plots(out_dir: Path, runs: pd.DataFrame) -> list[Path]:
    """Write the single-axis and axis-pair plots of every task; return their paths."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window

    folder = Path(out_dir) / PLOTS
    written = []
    ok = runs[runs["status"] == "ok"]
    for task, rows in ok.groupby("task", sort=False):
        metric = rows["main_metric"].dropna().iloc[0]
        axes = [a for a in plot_axes(rows) if len(_values(rows, a)) > 1]
        plans = [[a] for a in axes]
        for a, b in itertools.combinations(axes, 2):
            both = rows.dropna(subset=[a, b])
            combos = len(both[[a, b]].drop_duplicates())
            if len(_values(both, a)) > 1 and len(_values(both, b)) > 1 and combos <= MAX_PAIR_BARS:
                plans.append([a, b])
        for varied in plans:
            chosen, held = held_slice(rows, varied)
            if chosen.empty:
                continue
            path = folder / _file_name(task, varied)
            _bar_plot(path, chosen, varied, metric, _title(task, metric, varied, held))
            written.append(path)
    return written
