"""A grid folder's report: its tables and plots, written from its records alone.

``runs``, ``aggregate`` and ``summary`` (:mod:`lit_seq.results.tables`), ``best``
(:mod:`lit_seq.results.best`), ``phases`` (where the hours went:
:mod:`lit_seq.results.hours`), ``comparisons`` (:mod:`lit_seq.results.comparisons`: the
grid's own paired comparisons with BH q across them, and the seed-luck test of
:mod:`lit_seq.results.seed_wins`) and the plots (:mod:`lit_seq.results.plots`, and every
run's score per cell, :mod:`lit_seq.results.strip`).
"""

from pathlib import Path

import pandas as pd
from rich.console import Console

from lit_seq.record import RECORDS, read_records
from lit_seq.results.anchors import anchors_markdown, anchors_table, read_anchors
from lit_seq.results.best import best_markdown, best_tables, score_column
from lit_seq.results.comparisons import (
    block_pairs,
    comparisons_markdown,
    comparisons_table,
    read_pairs,
)
from lit_seq.results.fits import FitRule
from lit_seq.results.hours import phase_markdown, phase_table
from lit_seq.results.page_tables import read_tables, tables_markdown
from lit_seq.results.paper import PAPER_FIT, PAPERS, paper_markdown, side_by_side
from lit_seq.results.plots import write_plots
from lit_seq.results.seed_wins import seed_wins, seed_wins_markdown
from lit_seq.results.strip import write_strip_plots
from lit_seq.results.tables import aggregate_table, print_aggregate, runs_table, write_tables
from lit_seq.util.io import atomic_write_text


class NoRecords(ValueError):
    """The folder holds no run records, or some cannot be read: no report to trust."""


def _scores(runs: pd.DataFrame, aggregate: pd.DataFrame) -> dict[str, str]:
    """Each cell -> the score its task's comparisons read (``best.score_column``)."""
    out = {}
    for task, rows in aggregate.groupby("task", sort=False):
        main = rows["main_metric"].dropna()
        score = score_column(runs[runs["task"] == task], main.iloc[0] if len(main) else "acc")
        out.update(dict.fromkeys(rows["cell"], score))
    return out


def build_report(
    out_dir: Path,
    console: Console | None = None,
    pairs: Path | None = None,
    paper: str | None = None,
    tables: Path | None = None,
    anchors: Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, list[Path]]:
    """Write the tables and plots of ``out_dir``, print the summary; (runs, aggregate, plots).

    ``pairs``: a page's own comparisons (``comparisons.read_pairs``), added to the grid's.
    ``paper``: a key of ``paper.PAPERS``: ``paper.{csv,md}``, the grid beside its rows.
    ``tables``: a page's own tables (``page_tables.read_tables``): ``tables.md``.
    ``anchors``: a page's published claims (``anchors.read_anchors``): ``anchors.md``, each
    claim beside its comparison row (one more row of ``comparisons``, unless a pair already
    compares the same cells on the same metric).
    NoRecords if there is no record, or if any record cannot be read; ValueError for a bad
    pairs or tables file (before anything is written).
    """
    unreadable: list[Path] = []
    by_id = read_records(out_dir, unreadable)
    records = list(by_id.values())
    if unreadable:  # a table silently short of a seed would misreport its cell
        names = ", ".join(p.name for p in unreadable[:3])
        raise NoRecords(
            f"{len(unreadable)} record(s) in {str(Path(out_dir) / RECORDS)!r} cannot be read "
            f"({names}); delete them and re-run the grid (their runs run again), then report"
        )
    if not records:
        raise NoRecords(f"{str(out_dir)!r} holds no run records ({RECORDS}/*.json)")
    runs = runs_table(records, out_dir)
    aggregate = aggregate_table(runs)
    extra = read_pairs(pairs, aggregate) if pairs else []
    page_tables = read_tables(tables, aggregate) if tables else []
    claims = read_anchors(anchors, aggregate) if anchors else []
    write_tables(out_dir, runs, aggregate)
    if page_tables:
        atomic_write_text(
            Path(out_dir) / "tables.md", tables_markdown(page_tables, aggregate, runs)
        )
    best = best_tables(runs, aggregate)
    atomic_write_text(Path(out_dir) / "best.csv", best.to_csv(index=False))
    atomic_write_text(Path(out_dir) / "best.md", best_markdown(best))
    # "fits N" by the page's rule: a grid beside a paper reads that paper's page's
    fit = PAPER_FIT if paper else FitRule()
    pairs = block_pairs(runs, aggregate) + extra
    seen = {(p["cell_a"], p["cell_b"], p["metric"]) for p in pairs}
    for claim in claims:  # each claim tested once, under the same BH adjustment
        if (key := (claim["cell_a"], claim["cell_b"], claim["metric"])) not in seen:
            pairs.append(claim)
            seen.add(key)
    comparisons = comparisons_table(runs, aggregate, pairs, fit)
    atomic_write_text(Path(out_dir) / "comparisons.csv", comparisons.to_csv(index=False))
    luck = seed_wins(runs, _scores(runs, aggregate))
    atomic_write_text(
        Path(out_dir) / "comparisons.md",
        comparisons_markdown(comparisons, fit) + "\n" + seed_wins_markdown(luck),
    )
    if claims:
        table = anchors_table(comparisons, claims, fit, aggregate)
        atomic_write_text(Path(out_dir) / "anchors.csv", table.to_csv(index=False))
        atomic_write_text(Path(out_dir) / "anchors.md", anchors_markdown(table, fit))
    if paper:
        beside = side_by_side(runs, PAPERS[paper])
        atomic_write_text(Path(out_dir) / "paper.csv", beside.to_csv(index=False))
        atomic_write_text(Path(out_dir) / "paper.md", paper_markdown(beside, paper))
    hours = phase_table(records)
    atomic_write_text(Path(out_dir) / "phases.csv", hours.to_csv(index=False))
    atomic_write_text(Path(out_dir) / "phases.md", phase_markdown(hours))
    plots = write_plots(out_dir, runs, by_id) + write_strip_plots(out_dir, runs)
    print_aggregate(aggregate, console)
    return runs, aggregate, plots
