"""The literature's single number per row: the best run of a group, chosen on validation.

Papers such as Delétang et al. 2023 report, per task and architecture, one run's score:
the best over seeds and hyperparameters (learning rates, and for a Transformer its
positional encodings). ``best_table`` gives that row two ways, side by side:

- ``best_by_val``: the run with the best validation main metric (``val/<main>`` of its
  tested checkpoint). No test set takes part in the choice, so its score is an honest
  estimate of the chosen model. Runs often tie there (most echo runs reach val 1.000):
  ``val_ties`` says how many share the best value and ``tied_runs`` which; the tie is
  broken by the lower ``val/loss`` (still validation only), then by grid order, and
  ``tied_score`` gives the mean score over all of them (what validation cannot tell apart).
- ``max``: the highest score of any run (choosing on the test lengths themselves, as a
  table "maximised over seeds" does). It can only be higher; the gap shows how much of a
  published maximum may be selection.

The score (:func:`score_column`) counts only what no training sequence had: for a per-step
task (one output per position, main metric ``acc``) ``range_ood/acc_ood``, the positions
past the training length averaged over the range evaluation's lengths (an ``acc`` over a
longer sequence would also count its first N positions), or without a range evaluation
the longest test set's ``acc_ood``; for one label per sequence (or ``exact``)
``range_ood/<main>`` (Delétang's score), or without a range evaluation the longest test
set's ``<main>`` (seq2seq: ``test_len20/exact``); ``scored_on`` names its lengths and
chance level (:func:`~lit_seq.results.scored_on.scored_on`: ``lengths 41-200, chance 0.5``).
Every ok run of the group scored in full counts, the ones a ``select:`` block did not
report included: a group's rows are all the models trained for it. A run on a selection
seed that its grid scored for selection only (``select.score: selection``, the default
outside ``paper:`` grids; its record's ``scoring``) has no score, so neither column can
choose it: both are over the runs scored in full, and ``unscored`` counts the others
(the tables say "of N scored"). The mean and 95% bootstrap interval over
seeds beside it come from the aggregate (the cell holding the best-by-validation run),
flagged when its ``select:`` winner ends its sweep.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from lit_seq.record import RANGE_OOD
from lit_seq.results.markdown import markdown_table
from lit_seq.results.scored_on import scored_on
from lit_seq.results.selection import lower_is_better
from lit_seq.results.tables import NOT_AXES

BEST_COLUMNS = ["task", "arch", "group", "runs", "failed", "score", "scored_on"]
BEST_COLUMNS += ["best_by_val", "val", "best_by_val_score", "val_ties", "tied_score", "tied_runs"]
BEST_COLUMNS += ["max", "max_run"]
BEST_COLUMNS += ["cell_mean", "cell_ci_low", "cell_ci_high", "cell_n", "cell_values"]
BEST_COLUMNS += ["cell_select_edge", "unscored"]  # unscored: runs scored for selection only
TIE_BREAK = "val/loss"  # lower wins among runs tied on the main validation metric


def score_column(runs: pd.DataFrame, main: str) -> str:
    """The column ``runs`` are scored on: past the training length where they have it.

    A per-step task (main ``acc``, with ``acc_ood``): ``range_ood/acc_ood``, else the
    longest test set's ``acc_ood``. A sequence-level score (one label or one exact match per
    sequence: no ``acc_ood``): ``range_ood/<main>``, else the longest test set's ``<main>``,
    else ``test/<main>`` (no test set past the training length).
    """
    known = [c for c in runs.columns if "/" in c and runs[c].notna().any()]

    def longest(metric: str) -> list[str]:
        pattern = rf"test_len(\d+)/{re.escape(metric)}"
        found = sorted((int(m.group(1)), c) for c in known if (m := re.fullmatch(pattern, c)))
        return [c for _, c in found[-1:]]

    if main == "acc":  # per-step when it has acc_ood: past-N positions only
        for column in [f"{RANGE_OOD}/acc_ood", *longest("acc_ood")]:
            if column in known:
                return column
    for column in [f"{RANGE_OOD}/{main}", *longest(main)]:
        if column in known:
            return column
    return f"test/{main}"


def _group_of(runs: pd.DataFrame) -> pd.Series:
    """A run's cell, with the values a ``select:`` block competed folded into one."""
    group = runs["select_group"].fillna("")
    return group.where(group != "", runs["cell"])


def _describe(run: pd.Series, varying: list[str]) -> str:
    """``pos_mode=rotary lr=0.001 seed=0``: what sets ``run`` apart in its group (an axis
    its block does not set is left out; ``block`` leads where the group spans blocks)."""
    parts = [f"{axis}={run[axis]}" for axis in varying if axis != "seed" and not pd.isna(run[axis])]
    return " ".join([*parts, f"seed={run['seed']}"])


def best_row(rows: pd.DataFrame, aggregate: pd.DataFrame) -> dict:
    """The best-by-validation and the maximum-score run of ``rows`` (one group's runs)."""
    main = rows["main_metric"].dropna().iloc[0] if rows["main_metric"].notna().any() else "acc"
    score = score_column(rows, main)
    val = f"val/{main}"
    ok = rows[rows["status"] == "ok"]
    lean = ok["scoring"].eq("selection") if "scoring" in ok else pd.Series(False, ok.index)
    ok, unscored = ok[~lean], int(lean.sum())  # a run scored for selection has no score
    axes = [c for c in rows.columns if c not in NOT_AXES and "/" not in c and c != "group"]
    varying = [a for a in ["block", *axes] if rows[a].nunique(dropna=False) > 1]
    row = {
        "task": rows["task"].iloc[0],
        "arch": rows["arch"].iloc[0],
        "runs": len(ok),
        "failed": len(rows) - len(ok) - unscored,
        "unscored": unscored,
        "score": score,
        "scored_on": scored_on(rows, score),  # its lengths and chance level
    }
    judged = ok.dropna(subset=[val]) if val in ok else ok.iloc[0:0]
    if not judged.empty:
        tied = _best_on_validation(judged, val)
        best = tied.iloc[0]
        scores = pd.to_numeric(tied[score]).dropna() if score in tied else pd.Series(dtype=float)
        row.update(
            best_by_val=_describe(best, varying),
            val=float(best[val]),
            best_by_val_score=_number(best.get(score)),
            val_ties=len(tied),
            tied_score=scores.mean() if len(scores) else math.nan,
            tied_runs="; ".join(_describe(r, varying) for _, r in tied.iterrows()),
        )
        cell = aggregate[aggregate["cell"] == best["group"]]
        if len(cell) and f"{score}_mean" in cell:
            cell = cell.iloc[0]
            row.update(
                cell_mean=cell[f"{score}_mean"],
                cell_ci_low=cell[f"{score}_ci_low"],
                cell_ci_high=cell[f"{score}_ci_high"],
                cell_n=cell["n"],
                cell_values=cell[f"{score}_values"],
                cell_select_edge=_text(cell.get("select_edge")),
            )
    scored = ok.dropna(subset=[score]) if score in ok else ok.iloc[0:0]
    if not scored.empty:
        top = pd.to_numeric(scored[score]).idxmax()
        row.update(max=float(scored.loc[top, score]), max_run=_describe(scored.loc[top], varying))
    return row


def _best_on_validation(judged: pd.DataFrame, val: str) -> pd.DataFrame:
    """The runs of ``judged`` that share its best ``val``, the tie-break's winner first
    (lower :data:`TIE_BREAK`, then grid order)."""
    values = pd.to_numeric(judged[val])
    best = values.min() if lower_is_better(val) else values.max()
    tied = judged[values == best]
    if TIE_BREAK in tied and len(tied) > 1:
        loss = pd.to_numeric(tied[TIE_BREAK]).fillna(math.inf)
        tied = tied.assign(_loss=loss).sort_values("_loss", kind="stable").drop(columns="_loss")
    return tied


def _number(value) -> float:
    return math.nan if value is None or pd.isna(value) else float(value)


def best_table(runs: pd.DataFrame, aggregate: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per ``by`` group (e.g. ``["task", "arch"]``, or ``["group"]``: per cell).

    ``group`` is a run's cell with a ``select:`` block's competing values folded in.
    """
    runs = runs.assign(group=_group_of(runs))
    rows = []
    for key, group_rows in runs.groupby(by, sort=False):
        row = best_row(group_rows, aggregate)
        row["group"] = key[0] if by == ["group"] else ""
        rows.append(row)
    return pd.DataFrame(rows).reindex(columns=BEST_COLUMNS)


def best_tables(runs: pd.DataFrame, aggregate: pd.DataFrame) -> pd.DataFrame:
    """Both levels in one frame: per (task, arch) first, then per cell (``level`` says)."""
    per_arch = best_table(runs, aggregate, ["task", "arch"]).assign(level="task+arch")
    per_cell = best_table(runs, aggregate, ["group"]).assign(level="cell")
    return pd.concat([per_arch, per_cell], ignore_index=True)[["level", *BEST_COLUMNS]]


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _interval(row: pd.Series) -> str:
    if pd.isna(row["cell_mean"]):
        return ""
    text = f"{row['cell_mean']:.3f}"
    if not pd.isna(row["cell_ci_low"]):
        text += f" [{row['cell_ci_low']:.3f}, {row['cell_ci_high']:.3f}]"
    text = f"{text}; n={int(row['cell_n'])}; {row['cell_values']}"
    edge = _text(row["cell_select_edge"])
    return f"{text}; selected value at the {edge} end of its sweep" if edge else text


def _score(value) -> str:
    return "" if pd.isna(value) else f"{value:.3f}"


def _best_text(row: pd.Series) -> str:
    """``lr=0.01 seed=0 (val 1.000)``, with ``; first of 39 tied (lower val/loss)`` when
    runs tie on validation; blank when none."""
    if not isinstance(row["best_by_val"], str):
        return ""
    ties = int(row["val_ties"])
    tied = f"; first of {ties} tied (lower {TIE_BREAK}, then grid order)" if ties > 1 else ""
    return f"{row['best_by_val']} (val {row['val']:.3f}{tied})"


def _best_score(row: pd.Series) -> str:
    """The chosen run's score, with the mean over the runs it tied with on validation."""
    text = _score(row["best_by_val_score"])
    if text and row["val_ties"] > 1 and not pd.isna(row["tied_score"]):
        text += f" (tied runs: mean {row['tied_score']:.3f})"
    return text


def _run_text(run, value) -> str:
    """``0.700 (pos_mode=none lr=0.001 seed=0)``; blank when none."""
    return f"{value:.3f} ({run})" if isinstance(run, str) else ""


def best_markdown(table: pd.DataFrame) -> str:
    """``best_tables`` as two headed Markdown tables (the tied runs: ``best.csv``)."""
    parts = []
    for level, title in (("task+arch", "per task and arch"), ("cell", "per cell")):
        rows = table[table["level"] == level]
        header = ["task", "arch", *(["cell"] if level == "cell" else []), "score"]
        header += ["best by val (run)", "its score", "max over runs (run)"]
        header += ["its cell: mean [95% bootstrap]; n; per seed", "runs"]
        body = []
        for _, row in rows.iterrows():
            cells = [row["task"], row["arch"], *([row["group"]] if level == "cell" else [])]
            label = _text(row["scored_on"])
            score = f"{row['score']} ({label})" if label else row["score"]
            cells += [score, _best_text(row), _best_score(row)]
            cells += [_run_text(row["max_run"], row["max"])]
            failed = f" ({row['failed']} failed)" if row["failed"] else ""
            unscored = row.get("unscored", 0)
            lean = f" of {row['runs']} scored, {unscored} for selection only" if unscored else ""
            cells += [_interval(row), f"{row['runs']}{failed}{lean}"]
            body.append(cells)
        parts.append(f"### Best run {title}\n\n" + markdown_table(header, body))
    return "\n".join(parts)
