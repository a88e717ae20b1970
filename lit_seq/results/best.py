"""The literature's single number per row: the best run of a group, chosen on validation.

Papers such as Delétang et al. 2023 report, per task and architecture, one run's score:
the best over seeds and hyperparameters (learning rates, and for a Transformer its
positional encodings). ``best_table`` gives that row two ways, side by side:

- ``best_by_val``: the run with the best validation main metric (``val/<main>`` of its
  tested checkpoint; ties go to the run listed first in the grid). No test set takes
  part in the choice, so its score is an honest estimate of the chosen model.
- ``max``: the highest score of any run (choosing on the test lengths themselves, as a
  table "maximised over seeds" does). It can only be higher; the gap shows how much of a
  published maximum may be selection.

The score is ``range_ood/<main>`` (the mean over the range evaluation's lengths past the
training length: Delétang's score) where the runs have it, else ``test/<main>``. Every
ok run of the group counts, the ones a ``select:`` block did not keep included: a
group's rows are all the models trained for it. The mean and 95% interval over seeds
beside it come from the aggregate (the cell holding the best-by-validation run).
"""

from __future__ import annotations

import math

import pandas as pd

from lit_seq.record import RANGE_OOD
from lit_seq.results.markdown import markdown_table
from lit_seq.results.selection import lower_is_better
from lit_seq.results.tables import NOT_AXES

BEST_COLUMNS = ["task", "arch", "group", "runs", "failed", "score"]
BEST_COLUMNS += ["best_by_val", "val", "best_by_val_score", "max", "max_run"]
BEST_COLUMNS += ["cell_mean", "cell_ci_low", "cell_ci_high", "cell_n", "cell_values"]


def score_column(runs: pd.DataFrame, main: str) -> str:
    """``range_ood/<main>`` where any of ``runs`` has it, else ``test/<main>``."""
    column = f"{RANGE_OOD}/{main}"
    if column in runs and runs[column].notna().any():
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
    axes = [c for c in rows.columns if c not in NOT_AXES and "/" not in c and c != "group"]
    varying = [a for a in ["block", *axes] if rows[a].nunique(dropna=False) > 1]
    row = {
        "task": rows["task"].iloc[0],
        "arch": rows["arch"].iloc[0],
        "runs": len(ok),
        "failed": len(rows) - len(ok),
        "score": score,
    }
    judged = ok.dropna(subset=[val]) if val in ok else ok.iloc[0:0]
    if not judged.empty:
        values = pd.to_numeric(judged[val])
        pick = values.idxmin() if lower_is_better(val) else values.idxmax()  # first on a tie
        best = judged.loc[pick]
        row.update(
            best_by_val=_describe(best, varying),
            val=float(best[val]),
            best_by_val_score=_number(best.get(score)),
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
            )
    scored = ok.dropna(subset=[score]) if score in ok else ok.iloc[0:0]
    if not scored.empty:
        top = pd.to_numeric(scored[score]).idxmax()
        row.update(max=float(scored.loc[top, score]), max_run=_describe(scored.loc[top], varying))
    return row


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


def _interval(row: pd.Series) -> str:
    if pd.isna(row["cell_mean"]):
        return ""
    text = f"{row['cell_mean']:.3f}"
    if not pd.isna(row["cell_ci_low"]):
        text += f" [{row['cell_ci_low']:.3f}, {row['cell_ci_high']:.3f}]"
    return f"{text}; n={int(row['cell_n'])}; {row['cell_values']}"


def _score(value) -> str:
    return "" if pd.isna(value) else f"{value:.3f}"


def _run_text(run, value, label: str = "") -> str:
    """``0.700 (pos_mode=none lr=0.001 seed=0)``, or ``val 0.9`` first; blank when none."""
    if not isinstance(run, str):
        return ""
    return f"{value:.3f} ({run})" if not label else f"{run} ({label}{value:.3f})"


def best_markdown(table: pd.DataFrame) -> str:
    """``best_tables`` as two headed Markdown tables."""
    parts = []
    for level, title in (("task+arch", "per task and arch"), ("cell", "per cell")):
        rows = table[table["level"] == level]
        header = ["task", "arch", *(["cell"] if level == "cell" else []), "score"]
        header += ["best by val (run)", "its score", "max over runs (run)"]
        header += ["its cell: mean [95% t]; n; per seed", "runs"]
        body = []
        for _, row in rows.iterrows():
            cells = [row["task"], row["arch"], *([row["group"]] if level == "cell" else [])]
            cells += [row["score"], _run_text(row["best_by_val"], row["val"], "val ")]
            cells += [_score(row["best_by_val_score"]), _run_text(row["max_run"], row["max"])]
            failed = f" ({row['failed']} failed)" if row["failed"] else ""
            cells += [_interval(row), f"{row['runs']}{failed}"]
            body.append(cells)
        parts.append(f"### Best run {title}\n\n" + markdown_table(header, body))
    return "\n".join(parts)
