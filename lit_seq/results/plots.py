"""PNG plots of a grid: the main metric per task and axis, at every test length.

Each plot is one group of bars per test set, labelled by its length (the training length,
then the length-generalisation lengths, scored on the positions past training, ``acc_ood``,
where the task has it) and one bar per value of what it varies; height = mean over the ok
runs, error bar = the 95% bootstrap interval of that mean over seeds, the tables' interval
(none for a single seed: the title says which); the y axis names the metrics drawn (the
main metric, and ``acc_ood`` past training where bars show it), the legend gives n and a
dotted line the chance level. Runs a ``select:`` block did not keep are left out.

``plots/curve_<task>_<axis>.png`` (grids run with ``range_eval``) draws accuracy against
length per value of the axis: the mean over seeds, the band from the worst to the best seed,
the training length as a dashed line and the chance level as a dotted one.

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

from lit_seq.record import RunRecord
from lit_seq.results.stats import LEVEL, bootstrap_interval
from lit_seq.results.tables import NOT_AXES, summary_keys

PLOTS = "plots"
MAX_PAIR_BARS = 8
ERROR_BARS = f"error bars: {LEVEL:.0%} bootstrap interval of the mean over seeds"


def plot_axes(runs: pd.DataFrame) -> list[str]:
    """Columns a plot can be drawn over: arch and every grid axis."""
    skip = set(NOT_AXES) - {"arch"}
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


def _length_label(key: str, rows: pd.DataFrame) -> str:
    """``test_len40/acc_ood`` -> ``40 (acc_ood)``; ``test/acc`` -> ``10 (train)``."""
    prefix, metric = key.split("/")
    length = re.fullmatch(r"test_len(\d+)", prefix)
    if length:
        return f"{length.group(1)}" + (" (ood)" if metric == "acc_ood" else "")
    train = rows["train_length"].dropna() if "train_length" in rows else []
    return f"{int(train.iloc[0])} (train)" if len(train) else "train length"


def _chance(rows: pd.DataFrame) -> float | None:
    chance = rows["chance"].dropna() if "chance" in rows else []
    return float(chance.iloc[0]) if len(chance) else None


def _y_label(keys: list[str], metric: str) -> str:
    """What the bars' heights are: ``acc``, or ``acc (train length) / acc_ood (past it)``
    when the bars past the training length show ``acc_ood``."""
    drawn = list(dict.fromkeys(k.split("/")[1] for k in keys))
    if drawn == ["acc_ood"] or "acc_ood" not in drawn:
        return ", ".join(drawn) or metric
    others = [m for m in drawn if m != "acc_ood"]
    return f"{', '.join(others)} (train length) / acc_ood (past it)"


def bar_figure(rows: pd.DataFrame, varied: list[str], metric: str, title: str):
    """The bar chart of ``rows`` by ``varied``: a matplotlib Figure (the caller closes it)."""
    import matplotlib.pyplot as plt

    # the test sets the summary shows (summary_keys reads an aggregate's <metric>_mean)
    shaped = rows.rename(columns={k: f"{k}_mean" for k in rows.columns if "/" in k})
    keys = summary_keys(shaped, metric)
    labels = rows[varied].astype(str).agg(", ".join, axis=1)
    order = list(dict.fromkeys(labels))
    fig, ax = plt.subplots(figsize=(3.2 + 0.45 * len(keys) * len(order), 3.4))
    width = 0.8 / len(order)
    any_errors = False
    for i, label in enumerate(order):
        group = rows[labels == label]
        # the tables' interval (lit_seq.results.stats), so a bar and its table row agree
        intervals = [bootstrap_interval(list(group[k].dropna())) for k in keys]
        means = [iv.mean for iv in intervals]
        low = [0.0 if pd.isna(iv.low) else iv.mean - iv.low for iv in intervals]
        high = [0.0 if pd.isna(iv.high) else iv.high - iv.mean for iv in intervals]
        counts = [iv.n for iv in intervals]
        xs = [j + (i - (len(order) - 1) / 2) * width for j in range(len(keys))]
        errors = None if max(counts) < 2 else [low, high]  # (2, K): below and above
        any_errors = any_errors or errors is not None
        ax.bar(
            xs,
            means,
            width,
            yerr=errors,
            capsize=3 if errors else 0,
            label=f"{label} (n={max(counts)})",
        )
    chance = _chance(rows)
    if chance is not None:
        ax.axhline(chance, color="grey", linestyle=":", linewidth=1, label=f"chance {chance:g}")
    ax.set_xticks(range(len(keys)), [_length_label(k, rows) for k in keys], fontsize=7)
    ax.set_xlabel("test length")
    ax.set_ylabel(_y_label(keys, metric), fontsize=8)
    note = ERROR_BARS if any_errors else "one seed: no error bars"
    ax.set_title(f"{title}\n{note}", fontsize=8)
    legend_title = ", ".join(varied)
    ax.legend(
        title=legend_title, fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1)
    )
    fig.tight_layout()
    return fig


def _bar_plot(path: Path, rows: pd.DataFrame, varied: list[str], metric: str, title: str):
    import matplotlib.pyplot as plt

    fig = bar_figure(rows, varied, metric, title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def curve_values(curve: dict[str, dict], metric: str) -> dict[str, float]:
    """One run's ``metric`` by length as its tables score it: where the curve has
    ``<metric>_ood`` (a per-step task past its training length: the positions >= N only),
    that value replaces the one over all positions. E.g. ``{"acc": {"10": 1.0, "20": 0.75},
    "acc_ood": {"20": 0.5}}`` -> ``{"10": 1.0, "20": 0.5}``."""
    return {**curve.get(metric, {}), **curve.get(f"{metric}_ood", {})}


def _curve_plot(
    path: Path,
    rows: pd.DataFrame,
    records: dict[str, RunRecord],
    axis: str,
    metric: str,
    title: str,
) -> bool:
    """Accuracy-vs-length lines of ``rows`` by ``axis``; False when no run has a curve.

    A per-step task's curve is scored as its tables are: ``acc`` up to the training length,
    ``acc_ood`` (positions >= N only) past it (:func:`curve_values`)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    drawn = False
    past_n = False
    for value, group in rows.groupby(axis, sort=False):
        curves = [curve_values(records[r].curve, metric) for r in group["run_id"] if r in records]
        past_n = past_n or any(
            records[r].curve.get(f"{metric}_ood") for r in group["run_id"] if r in records
        )
        curves = [c for c in curves if c]
        if not curves:
            continue
        table = pd.DataFrame([{int(k): v for k, v in c.items()} for c in curves])
        table = table[sorted(table.columns)]
        line = ax.plot(table.columns, table.mean(), label=f"{value} (n={len(curves)})")[0]
        if len(curves) > 1:
            ax.fill_between(
                table.columns,
                table.min(),
                table.max(),
                alpha=0.15,
                color=line.get_color(),
                linewidth=0,
            )
        drawn = True
    if drawn:
        train = rows["train_length"].dropna()
        if len(train):
            ax.axvline(
                train.iloc[0],
                color="black",
                linestyle="--",
                linewidth=1,
                label=f"training length {int(train.iloc[0])}",
            )
        chance = _chance(rows)
        if chance is not None:
            ax.axhline(chance, color="grey", linestyle=":", linewidth=1, label=f"chance {chance:g}")
        ax.set_xlabel("sequence length")
        scored = f"{metric}; past N {metric}_ood" if past_n else metric
        ax.set_ylabel(f"{scored} (mean over seeds;\nband: min-max)", fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(title, fontsize=8)
        ax.legend(
            title=axis, fontsize=7, title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1)
        )
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn


def _title(task: str, metric: str, varied: list[str], held: dict) -> str:
    title = f"{task}: {metric} by {' x '.join(varied)}"
    if held:
        title += "\n(" + ", ".join(f"{k}={v}" for k, v in held.items()) + ")"
    return title


def _file_name(task: str, varied: list[str]) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{task}_{'_x_'.join(varied)}") + ".png"


def write_plots(
    out_dir: Path, runs: pd.DataFrame, records: dict[str, RunRecord] | None = None
) -> list[Path]:
    """Write the single-axis and axis-pair plots of every task (and the length curves of
    ``records`` that have one); return their paths."""
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window

    folder = Path(out_dir) / PLOTS
    written = []
    ok = runs[(runs["status"] == "ok") & runs["selected"].ne(False)]
    for task, rows in ok.groupby("task", sort=False):
        metric = rows["main_metric"].dropna().iloc[0]
        # a select: axis is chosen per seed, not compared (nor held at one value)
        rows = rows.drop(columns=list(set(rows["select_axis"].dropna()) - {""}))
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
            if records and len(varied) == 1:
                path = folder / ("curve_" + _file_name(task, varied))
                title = _title(task, metric, varied, held) + " vs length"
                if _curve_plot(path, chosen, records, varied[0], metric, title):
                    written.append(path)
    return written
