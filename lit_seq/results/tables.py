"""Result tables of a grid, built from its records alone.

``runs``: one row per run (every axis, seed, size, speed, status, every test metric, W&B
run, checkpoint). ``aggregate``: one row per cell (block + axis values) with the mean and
std over its ok seeds of every metric, and ``n`` (ok seeds) and ``failed``. Both are saved
as CSV, Parquet and Markdown; ``summary.md`` (and the console) show the main metric per task.
"""

import math
import re
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.table import Table

from lit_seq.io import atomic_write_text
from lit_seq.record import RunRecord, format_value
from lit_seq.results.markdown import markdown_cell, markdown_table

ID_COLUMNS = ["run_id", "block", "cell", "task", "arch"]
RUN_COLUMNS = ["seed", "main_metric", "params", "steps", "train_seconds", "samples_per_second"]
STATUS_COLUMNS = ["status", "error", "warning", "wandb_run", "best_checkpoint"]
MEAN_ONLY = ["params", "steps", "train_seconds", "samples_per_second"]


def metric_order(key: str) -> tuple:
    """``test/acc`` first, then ``test_len{L}/...`` by increasing L; metric names A-Z."""
    prefix, _, name = key.partition("/")
    length = re.fullmatch(r"test_len(\d+)", prefix)
    return (int(length.group(1)) if length else 0, prefix, name)


def axis_columns(records: list[RunRecord]) -> list[str]:
    """Every axis any block varies, in order of appearance (task and arch have own columns)."""
    keys = dict.fromkeys(k for r in records for k in (r.axis_order or r.axes))
    return [k for k in keys if k not in ("task", "arch")]


def runs_table(records: list[RunRecord]) -> pd.DataFrame:
    """One row per record, ordered as in the grid."""
    records = sorted(records, key=lambda r: (r.index, r.run_id))
    axes = axis_columns(records)
    metrics = sorted({k for r in records for k in r.metrics}, key=metric_order)
    rows = []
    for r in records:
        row = {c: getattr(r, c) for c in ID_COLUMNS}
        # axis values as text: one type per column, whatever each block put in it
        row.update({a: format_value(r.axes[a]) if a in r.axes else None for a in axes})
        row.update({c: getattr(r, c) for c in RUN_COLUMNS + STATUS_COLUMNS})
        row.update({m: r.metrics.get(m) for m in metrics})
        rows.append(row)
    columns = ID_COLUMNS + axes + RUN_COLUMNS + STATUS_COLUMNS + metrics
    return pd.DataFrame(rows, columns=columns)


def metric_columns(runs: pd.DataFrame) -> list[str]:
    return [c for c in runs.columns if "/" in c]


def aggregate_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: mean and std over its ok seeds (std is empty for one seed)."""
    axes = [c for c in runs.columns if c not in ID_COLUMNS + RUN_COLUMNS + STATUS_COLUMNS]
    axes = [c for c in axes if "/" not in c]
    metrics = metric_columns(runs)
    rows = []
    for cell, group in runs.groupby("cell", sort=False):
        ok = group[group["status"] == "ok"]
        row = {"cell": cell}
        for column in ["block", "task", "arch", *axes, "main_metric"]:
            known = group[column].dropna()
            row[column] = known.iloc[0] if len(known) else None
        row.update(n=len(ok), failed=len(group) - len(ok))
        for column in MEAN_ONLY:
            row[column] = pd.to_numeric(ok[column]).mean() if len(ok) else math.nan
        for column in metrics:
            values = pd.to_numeric(ok[column])
            row[f"{column}_mean"] = values.mean() if len(ok) else math.nan
            row[f"{column}_std"] = values.std() if len(ok) > 1 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    """``table`` as a Markdown table (:func:`~lit_seq.results.markdown.markdown_table`)."""
    return markdown_table(list(table.columns), [list(row) for row in table.itertuples(index=False)])


def write_tables(out_dir: Path, runs: pd.DataFrame, aggregate: pd.DataFrame) -> list[Path]:
    """``runs`` and ``aggregate`` as ``.csv``, ``.parquet`` and ``.md`` in ``out_dir``, and
    the per-task :func:`summary_markdown` as ``summary.md``; returns the paths written."""
    written = []
    for name, table in (("runs", runs), ("aggregate", aggregate)):
        base = Path(out_dir) / name
        atomic_write_text(base.with_suffix(".csv"), table.to_csv(index=False))
        atomic_write_text(base.with_suffix(".md"), to_markdown(table))
        tmp = base.with_suffix(".parquet.tmp")
        table.to_parquet(tmp, index=False)
        tmp.replace(base.with_suffix(".parquet"))
        written += [base.with_suffix(s) for s in (".csv", ".parquet", ".md")]
    atomic_write_text(Path(out_dir) / "summary.md", summary_markdown(aggregate))
    return [*written, Path(out_dir) / "summary.md"]


def _mean_std(mean: float, std: float) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:.3f}" if math.isnan(std) else f"{mean:.3f} ± {std:.3f}"


def task_summaries(aggregate: pd.DataFrame) -> list[tuple[str, list[str], list[list[str]]]]:
    """Per task: (title, header, rows) of the cells' main metric at every test length.

    Only what tells the cells apart is shown: the block and the axes that vary within the
    task; then ``n`` (ok seeds), the main metric as mean ± std per test set, and ``failed``
    when any run of the task failed.
    """
    summaries = []
    for task, rows in aggregate.groupby("task", sort=False, dropna=False):
        main = rows["main_metric"].dropna()
        metric = main.iloc[0] if len(main) else "acc"
        keys = [c[: -len("_mean")] for c in rows.columns if c.endswith(f"/{metric}_mean")]
        keys = sorted((k for k in keys if rows[f"{k}_mean"].notna().any()), key=metric_order)
        varying = [c for c in rows.columns[1 : list(rows.columns).index("main_metric")]]
        varying = [c for c in varying if c != "task" and rows[c].nunique(dropna=False) > 1]
        varying = varying or ["cell"]
        show_failed = rows["failed"].sum() > 0
        header = [*varying, "n", *(k.split("/")[0] for k in keys)]
        header += ["failed"] if show_failed else []
        body = []
        for _, row in rows.iterrows():
            cells = [markdown_cell(row[c]) for c in varying] + [str(row["n"])]
            cells += [_mean_std(row[f"{k}_mean"], row[f"{k}_std"]) for k in keys]
            body.append(cells + ([str(row["failed"])] if show_failed else []))
        summaries.append((f"{task}: {metric} (mean ± std over seeds)", header, body))
    return summaries


def summary_markdown(aggregate: pd.DataFrame) -> str:
    """:func:`task_summaries` as Markdown: one headed table per task."""
    parts = [
        f"### {title}\n\n" + markdown_table(header, body)
        for title, header, body in task_summaries(aggregate)
    ]
    return "\n".join(parts)


def print_aggregate(aggregate: pd.DataFrame, console: Console | None = None) -> None:
    """:func:`task_summaries` as rich tables on the console."""
    console = console or Console()
    for title, header, body in task_summaries(aggregate):
        table = Table(title=title)
        for i, column in enumerate(header):
            numeric = i >= header.index("n")
            style = "red" if column == "failed" else None
            table.add_column(column, justify="right" if numeric else "left", style=style)
        for cells in body:
            table.add_row(*cells)
        console.print(table)
