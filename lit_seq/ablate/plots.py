"""PNG plots of a grid: the main metric per task and axis, at every test length.

``plots/<task>_<axis>.png``: one group of bars per test set (training length, then the
length-generalisation lengths), one bar per value of the axis, height = mean over the ok runs
with that value (seeds and any other axes pooled), error bar = their std.
"""

import re
from pathlib import Path

import pandas as pd

from lit_seq.ablate.tables import ID_COLUMNS, RUN_COLUMNS, STATUS_COLUMNS, metric_order

PLOTS = "plots"


def plot_axes(runs: pd.DataFrame) -> list[str]:
    """Columns a plot can be drawn over: arch and every grid axis."""
    skip = set(ID_COLUMNS + RUN_COLUMNS + STATUS_COLUMNS) - {"arch"}
    return [c for c in runs.columns if c not in skip and "/" not in c]


def write_plots(out_dir: Path, runs: pd.DataFrame) -> list[Path]:
    """Write one PNG per (task, axis with more than one value); return their paths."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    folder = Path(out_dir) / PLOTS
    written = []
    ok = runs[runs["status"] == "ok"]
    for task, rows in ok.groupby("task", sort=False):
        metric = rows["main_metric"].dropna().iloc[0]
        keys = [c for c in rows.columns if c.endswith(f"/{metric}") and rows[c].notna().any()]
        keys = sorted(keys, key=metric_order)
        for axis in plot_axes(rows):
            values = list(dict.fromkeys(rows[axis].dropna()))
            if len(values) < 2:
                continue
            stats = rows.groupby(axis, sort=False)[keys].agg(["mean", "std"])
            fig, ax = plt.subplots(figsize=(2.6 + 0.5 * len(keys) * len(values), 3.2))
            width = 0.8 / len(values)
            for i, value in enumerate(values):
                means = [stats.loc[value, (k, "mean")] for k in keys]
                stds = [stats.loc[value, (k, "std")] for k in keys]
                xs = [j + (i - (len(values) - 1) / 2) * width for j in range(len(keys))]
                errors = [0.0 if pd.isna(s) else s for s in stds]  # one seed: no bar
                ax.bar(xs, means, width, yerr=errors, capsize=3, label=str(value))
            ax.set_xticks(range(len(keys)), [k.split("/")[0] for k in keys])
            ax.set_ylabel(metric)
            ax.set_title(f"{task}: {metric} by {axis}")
            ax.legend(
                title=axis,
                fontsize=7,
                title_fontsize=7,
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
            )
            fig.tight_layout()
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{task}_{re.sub(r'[^A-Za-z0-9._-]+', '_', axis)}.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    return written
