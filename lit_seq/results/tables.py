"""Result tables of a grid, built from its records alone.

``runs``: one row per run (every axis, seed, size, speed, time-to-target, status, every
validation and test metric, W&B run, checkpoint, and the machine and software it ran on).
``aggregate``: one row per cell (block + axis values) with, for every metric over its ok
seeds: mean, std, the 95% bootstrap interval (``lit_seq.results.stats``: it stays inside
the metric's range), min, max and the per-seed values, plus ``n`` (ok seeds), ``failed``,
the seeds, the success rate of the main metric (seeds at or above ``SUCCESS_THRESHOLD``)
with its 95% Wilson interval at every test length, and ``mixed_machines``: what its seeds'
machines differ in where that can move their digits (:mod:`lit_seq.results.machines`; the
Markdown tables show it in a ``machines differ`` column when some cell has it). Both are saved as
CSV and Parquet, whole; ``runs.md`` too, while ``aggregate.md`` holds what fits a screen
(:func:`aggregate_markdown`: the main metrics, long form, and a link to the full CSV);
``summary.md`` (and the console) show per task the main metric at the training length and
past it (``acc_ood`` on the positions no training sequence had, where the task has it).

A block with ``select: {axis: lr, seeds: [...]}`` chooses one value of that axis on its
selection seeds (:mod:`lit_seq.results.selection`); the tables report the other seeds, which
ran at the winner, under the ``select_group`` as cell, and say which value won, on which
seeds, whether it sits at an end of its sweep (``select_edge``; of the sweep as extended,
where ``select.extend`` added values: ``select_extension`` > 0) and the grid's reason for its
sweep (``select_reason``). The runs table keeps every run, with ``selected`` true (reported)
or false.
"""

import math
import re
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from lit_seq.record import ENVIRONMENT_FIELDS, RunRecord, format_value
from lit_seq.results.machines import mixed_machines
from lit_seq.results.markdown import markdown_cell, markdown_table
from lit_seq.results.scored_on import range_lengths, scored_on
from lit_seq.results.selection import mark_selected, selection_text
from lit_seq.results.stats import (
    bootstrap_interval,
    success_rate,
    under_covers_note,
    wilson_interval,
)
from lit_seq.util.console import output_console
from lit_seq.util.folder_paths import relative_to_folder
from lit_seq.util.io import atomic_write_text

ID_COLUMNS = ["run_id", "block", "cell", "task", "arch"]
RUN_COLUMNS = ["seed", "main_metric", "params", "train_length", "steps", "train_seconds"]
RUN_COLUMNS += ["samples_per_second", "scoring"]  # scoring: full, or selection (val only)
RUN_COLUMNS += ["target", "target_reached", "target_step", "target_seconds", "chance"]
# the lengths a run's range_ood/<metric> means average, from its curve (scored_on.py)
RUN_COLUMNS += ["range_ood_lengths"]
# a record's select: fields; then, from the records together, whether a run is reported
# (``selected``) and where its group's winner sits in its sweep (``select_edge``)
SELECT_FIELDS = ["select_axis", "select_metric", "select_seeds", "select_group"]
SELECT_FIELDS += ["select_reason", "select_extension"]
SELECT_COLUMNS = [*SELECT_FIELDS, "selected", "select_edge"]  # select_edge: lowest / highest
STATUS_COLUMNS = ["status", "error", "warning", "wandb_run", "best_checkpoint"]
PATH_COLUMNS = ["wandb_run", "best_checkpoint"]  # relative to the grid folder in runs.csv
MEAN_ONLY = ["params", "steps", "train_seconds", "samples_per_second", "target_seconds"]
NOT_AXES = ID_COLUMNS + RUN_COLUMNS + SELECT_COLUMNS + STATUS_COLUMNS + ENVIRONMENT_FIELDS
SUCCESS_THRESHOLD = 0.99  # a seed "solves" a test set when its main metric is at least this


MIXED = "machines differ"  # the column that flags a cell whose seeds mixed machines


def _any_mixed(aggregate: pd.DataFrame) -> bool:
    """Whether some cell's seeds ran on machines that can give other digits (an older
    aggregate without the column: none known)."""
    column = aggregate.get("mixed_machines")
    return column is not None and column.fillna("").astype(str).ne("").any()


def metric_order(key: str) -> tuple:
    """``test/acc`` first, then ``test_len{L}/...`` by increasing L; metric names A-Z."""
    prefix, _, name = key.partition("/")
    length = re.fullmatch(r"test_len(\d+)", prefix)
    return (int(length.group(1)) if length else 0, prefix, name)


def axis_columns(records: list[RunRecord]) -> list[str]:
    """Every axis any block varies, in order of appearance (task and arch have own columns)."""
    keys = dict.fromkeys(k for r in records for k in (r.axis_order or r.axes))
    return [k for k in keys if k not in ("task", "arch")]


def runs_table(records: list[RunRecord], out_dir: Path | None = None) -> pd.DataFrame:
    """One row per record, ordered as in the grid.

    ``out_dir``: the grid folder the records were read from; its paths (``best_checkpoint``,
    an offline ``wandb_run``) are shown relative to it, so ``runs.csv`` reads the same
    wherever the folder is.
    """
    records = sorted(records, key=lambda r: (r.index, r.run_id))
    axes = axis_columns(records)
    metrics = sorted({k for r in records for k in r.metrics}, key=metric_order)
    val_metrics = sorted({k for r in records for k in r.val_metrics})
    rows = []
    for r in records:
        row = {c: getattr(r, c) for c in ID_COLUMNS}
        # axis values as text: one type per column, whatever each block put in it
        row.update({a: format_value(r.axes[a]) if a in r.axes else None for a in axes})
        row.update({c: getattr(r, c, None) for c in RUN_COLUMNS + SELECT_FIELDS + STATUS_COLUMNS})
        if out_dir is not None:  # read records hold absolute paths (online W&B: entity/...)
            paths = [c for c in PATH_COLUMNS if row[c] and Path(row[c]).is_absolute()]
            row.update({c: relative_to_folder(row[c], out_dir) for c in paths})
        row["range_ood_lengths"] = range_lengths(r.curve, r.train_length)
        row["select_seeds"] = " ".join(map(str, r.select_seeds))
        row.update({c: getattr(r, c) for c in ENVIRONMENT_FIELDS})
        row.update({m: r.val_metrics.get(m) for m in val_metrics})
        row.update({m: r.metrics.get(m) for m in metrics})
        rows.append(row)
    columns = ID_COLUMNS + axes + RUN_COLUMNS + SELECT_FIELDS + STATUS_COLUMNS
    columns += ENVIRONMENT_FIELDS
    runs = pd.DataFrame(rows, columns=[*columns, *val_metrics, *metrics])
    # a run that took the value its group selected (on seeds other than the selection's)
    waited = pd.Series([bool(r.select_from) for r in records], index=runs.index)
    chosen, ends = mark_selected(runs, waited)
    at = columns.index(SELECT_FIELDS[-1]) + 1
    runs.insert(at, "selected", chosen)
    runs.insert(at + 1, "select_edge", ends)
    return runs


def metric_columns(runs: pd.DataFrame) -> list[str]:
    return [c for c in runs.columns if "/" in c]


def _per_seed(values: pd.Series) -> str:
    return " ".join(f"{v:.3f}" for v in values)


def aggregate_table(runs: pd.DataFrame, success_threshold: float = SUCCESS_THRESHOLD):
    """One row per cell: its seeds' statistics for every metric (std and interval need n >= 2).

    The runs a ``select:`` block dropped (``selected`` false) are left out; their cell is
    the ``select_group`` and the selected axis column lists the winning value per seed.
    """
    axes = [c for c in runs.columns if c not in NOT_AXES and "/" not in c]
    metrics = metric_columns(runs)
    kept = runs[runs["selected"].ne(False)].copy()
    grouped = kept["select_group"].fillna("") != ""
    kept.loc[grouped, "cell"] = kept.loc[grouped, "select_group"]
    rows = []
    for cell, group in kept.groupby("cell", sort=False):
        group = group.sort_values("seed")
        ok = group[group["status"] == "ok"]
        row = {"cell": cell}
        for column in [
            "block",
            "task",
            "arch",
            *axes,
            "main_metric",
            "train_length",
            "target",
            "chance",
            "range_ood_lengths",
        ]:
            known = group[column].dropna() if column in group else ()  # older runs tables
            row[column] = known.iloc[0] if len(known) else None
        row.update(n=len(ok), failed=len(group) - len(ok))
        row["seeds"] = " ".join(str(s) for s in ok["seed"])
        row["mixed_machines"] = mixed_machines(ok)
        axis = group["select_axis"].dropna()
        if len(axis) and axis.iloc[0]:
            row[axis.iloc[0]] = "selected"
            contest = runs[runs["select_group"] == cell]  # its competing runs too
            extended = int(pd.to_numeric(contest["select_extension"]).max())
            row["selected"], row["select_edge"] = selection_text(group, ok, extended)
        reached = ok["target_reached"].dropna()
        row["target_reached"] = f"{int(reached.sum())}/{len(reached)}" if len(reached) else None
        for column in MEAN_ONLY:
            values = pd.to_numeric(ok[column]).dropna()
            row[column] = values.mean() if len(values) else math.nan
        main = row["main_metric"] or "acc"
        for column in metrics:
            values = pd.to_numeric(ok[column]).dropna()
            interval = bootstrap_interval(list(values))
            row[f"{column}_mean"] = interval.mean
            row[f"{column}_std"] = values.std() if len(values) > 1 else math.nan
            row[f"{column}_ci_low"] = interval.low
            row[f"{column}_ci_high"] = interval.high
            row[f"{column}_min"] = values.min() if len(values) else math.nan
            row[f"{column}_max"] = values.max() if len(values) else math.nan
            row[f"{column}_values"] = _per_seed(values)
            if column.startswith("test") and column.split("/")[1] in (main, "acc_ood"):
                hits, n = success_rate(list(values), success_threshold)
                row[f"{column}_success"] = f"{hits}/{n}"
                low, high = wilson_interval(hits, n)
                row[f"{column}_success_low"], row[f"{column}_success_high"] = low, high
        rows.append(row)
    if not rows:  # nothing reported yet (a grid still on its selection seeds): no cells
        identity = ["cell", "block", "task", "arch", *axes, "main_metric", "n", "failed"]
        return pd.DataFrame(columns=identity)
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    """``table`` as a Markdown table (:func:`~lit_seq.results.markdown.markdown_table`)."""
    return markdown_table(list(table.columns), [list(row) for row in table.itertuples(index=False)])


def write_tables(out_dir: Path, runs: pd.DataFrame, aggregate: pd.DataFrame) -> list[Path]:
    """``runs`` and ``aggregate`` as ``.csv``, ``.parquet`` and ``.md`` in ``out_dir`` (the
    aggregate's ``.md`` its :func:`aggregate_markdown`), and the per-task
    :func:`summary_markdown` as ``summary.md``; returns the paths written."""
    written = []
    markdown = {"runs": to_markdown(runs), "aggregate": aggregate_markdown(aggregate)}
    for name, table in (("runs", runs), ("aggregate", aggregate)):
        base = Path(out_dir) / name
        atomic_write_text(base.with_suffix(".csv"), table.to_csv(index=False))
        atomic_write_text(base.with_suffix(".md"), markdown[name])
        tmp = base.with_suffix(".parquet.tmp")
        table.to_parquet(tmp, index=False)
        tmp.replace(base.with_suffix(".parquet"))
        written += [base.with_suffix(s) for s in (".csv", ".parquet", ".md")]
    atomic_write_text(Path(out_dir) / "summary.md", summary_markdown(aggregate))
    return [*written, Path(out_dir) / "summary.md"]


def main_keys(row: pd.Series) -> list[str]:
    """The metrics ``aggregate.md`` shows for a cell: its main metric at the training
    length, then at the longest test set ``acc_ood`` where it exists (the positions past
    training), else the main metric there."""
    metric = row.get("main_metric") or "acc"
    present = [c[: -len("_mean")] for c in row.index if c.endswith("_mean")]
    present = [k for k in present if k.startswith("test") and not pd.isna(row[f"{k}_mean"])]
    keys = [k for k in (f"test/{metric}",) if k in present]
    longer = sorted(
        {k.split("/")[0] for k in present} - {"test"}, key=lambda p: metric_order(p + "/")
    )
    if longer:
        last = longer[-1]
        ood = f"{last}/acc_ood"
        keys += [ood] if ood in present else [k for k in (f"{last}/{metric}",) if k in present]
    return keys


def aggregate_markdown(aggregate: pd.DataFrame) -> str:
    """``aggregate.md``: per cell and main metric (:func:`main_keys`) one line, long form.

    Columns: cell, n (ok seeds), metric, mean [95% bootstrap interval over seeds], success
    (seeds >= ``SUCCESS_THRESHOLD`` [95% Wilson interval]), the value a ``select:`` block
    chose, failed runs (when any). Every other column (std, min, max, per-seed values, all
    metrics, speed) is in ``aggregate.csv``, linked at the top.
    """
    show_selected = "selected" in aggregate and aggregate["selected"].notna().any()
    show_failed = "failed" in aggregate and aggregate["failed"].sum() > 0
    show_mixed = _any_mixed(aggregate)
    header = ["cell", "n", "metric", "mean [95% interval]", "success [95% interval]"]
    header += ["selected"] if show_selected else []
    header += ["failed"] if show_failed else []
    header += [MIXED] if show_mixed else []
    body = []
    for _, row in aggregate.iterrows():
        keys = main_keys(row) or [None]
        for i, key in enumerate(keys):
            first = i == 0  # the cell's own columns once, on its first line
            cells = [row["cell"] if first else "", row["n"] if first else ""]
            if key is None:
                cells += ["-", "-", "-"]
            else:
                mean, *success = summary_cell(row, key, per_seed=False).split("; ")
                cells += [metric_label(row.to_frame().T, key), mean, success[0] if success else ""]
            cells += [row["selected"] if first else ""] if show_selected else []
            cells += [row["failed"] if first else ""] if show_failed else []
            cells += [row["mixed_machines"] if first else ""] if show_mixed else []
            body.append(cells)
    intro = (
        "# Aggregate: the main metrics per cell\n\n"
        "All columns (std, min, max, per-seed values, every metric and test set, speed): "
        "[aggregate.csv](aggregate.csv). Mean over the ok seeds [95% bootstrap interval over "
        f"seeds (expanded BCa)]; success: seeds with the metric >= {SUCCESS_THRESHOLD} [95% Wilson interval]. "
        "Past the training length the metric is acc_ood (the positions no training sequence "
        "had) where the task has it.\n\n"
    )
    return intro + markdown_table(header, body) + under_covers_note(aggregate["n"])


def summary_keys(rows: pd.DataFrame, metric: str) -> list[str]:
    """The test metrics a task's summary shows, by test length.

    The main metric at the training length; past it, ``acc_ood`` (the positions no
    training sequence had) instead of an ``acc`` that also counts the first N positions,
    and beside the main metric when that is another one (seq2seq: exact and token acc_ood).
    """
    present = {c[: -len("_mean")] for c in rows.columns if c.endswith("_mean")}
    present = {k for k in present if k.startswith("test") and rows[f"{k}_mean"].notna().any()}
    keys = []
    for prefix in sorted({k.split("/")[0] for k in present}, key=lambda p: metric_order(p + "/")):
        ood = f"{prefix}/acc_ood" in present
        if f"{prefix}/{metric}" in present and not (ood and metric == "acc"):
            keys.append(f"{prefix}/{metric}")
        if ood:
            keys.append(f"{prefix}/acc_ood")
    return keys


def metric_label(rows: pd.DataFrame, key: str) -> str:
    """``test_len200 acc_ood (length 200, positions > 40, chance 0.5)``: ``key`` as a table
    names it, with what the cells ``rows`` scored it on (:func:`scored_on`) where known."""
    label = scored_on(rows, key)
    return key.replace("/", " ") + (f" ({label})" if label else "")


def summary_cell(row: pd.Series, key: str, per_seed: bool = True) -> str:
    """``mean [95% bootstrap interval]; successes/n [95% Wilson interval]; per-seed values``
    (``-`` when nothing ran)."""
    mean = row[f"{key}_mean"]
    if math.isnan(mean):
        return "-"
    low, high = row[f"{key}_ci_low"], row[f"{key}_ci_high"]
    text = f"{mean:.3f}" if math.isnan(low) else f"{mean:.3f} [{low:.3f}, {high:.3f}]"
    success = row.get(f"{key}_success")
    if isinstance(success, str):
        text += f"; {success}"
        low, high = row.get(f"{key}_success_low"), row.get(f"{key}_success_high")
        if low is not None and not math.isnan(low):  # NaN: no seed; None: an older table
            text += f" [{low:.2f}, {high:.2f}]"
    return f"{text}; {row[f'{key}_values']}" if per_seed else text


def task_summaries(
    aggregate: pd.DataFrame, per_seed: bool = True
) -> list[tuple[str, list[str], list[list[str]]]]:
    """Per task: (title, header, rows) of the cells' main metric at every test length.

    Only what tells the cells apart is shown: the block and the axes that vary within the
    task; then ``n`` (ok seeds), per :func:`summary_keys` test metric the mean with its
    95% bootstrap interval, the success rate with its Wilson interval and the per-seed
    values, the value a ``select:`` block chose (flagged when it ends its sweep), and
    ``failed`` when any run of the task failed.
    """
    summaries = []
    for task, rows in aggregate.groupby("task", sort=False, dropna=False):
        main = rows["main_metric"].dropna()
        metric = main.iloc[0] if len(main) else "acc"
        keys = summary_keys(rows, metric)
        varying = [c for c in rows.columns[1 : list(rows.columns).index("main_metric")]]
        varying = [c for c in varying if c != "task" and rows[c].nunique(dropna=False) > 1]
        varying = varying or ["cell"]
        show_failed = rows["failed"].sum() > 0
        show_selected = "selected" in rows and rows["selected"].notna().any()
        show_mixed = _any_mixed(rows)
        header = [*varying, "n", *(metric_label(rows, k) for k in keys)]
        header += ["selected"] if show_selected else []
        header += ["failed"] if show_failed else []
        header += [MIXED] if show_mixed else []
        body = []
        for _, row in rows.iterrows():
            cells = [markdown_cell(row[c]) for c in varying] + [str(row["n"])]
            cells += [summary_cell(row, k, per_seed) for k in keys]
            cells += [markdown_cell(row["selected"])] if show_selected else []
            cells += [str(row["failed"])] if show_failed else []
            body.append(cells + ([row["mixed_machines"]] if show_mixed else []))
        title = f"{task}: {metric} — mean [95% bootstrap interval]; "
        title += f"seeds >= {SUCCESS_THRESHOLD} [95% Wilson interval]"
        title += "; per-seed values" if per_seed else " (per-seed values: summary.md)"
        summaries.append((title, header, body))
    return summaries


def summary_markdown(aggregate: pd.DataFrame) -> str:
    """:func:`task_summaries` as Markdown: one headed table per task."""
    parts = [
        f"### {title}\n\n" + markdown_table(header, body)
        for title, header, body in task_summaries(aggregate)
    ]
    return "\n".join(parts) + under_covers_note(aggregate["n"])


def print_aggregate(aggregate: pd.DataFrame, console: Console | None = None) -> None:
    """:func:`task_summaries` as rich tables on the console."""
    console = console or output_console()
    for title, header, body in task_summaries(aggregate, per_seed=False):
        table = Table(title=title)
        for i, column in enumerate(header):
            numeric = i >= header.index("n")
            style = "red" if column in ("failed", MIXED) else None
            table.add_column(column, justify="right" if numeric else "left", style=style)
        for cells in body:
            table.add_row(*cells)
        console.print(table)
