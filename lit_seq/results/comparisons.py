"""A grid's comparisons, one table per page: paired differences with BH q across all of them.

Every comparison of a page is one row: cells a and b, the metric, the shared seeds ``n``,
both means, the mean difference b - a with its 95% bootstrap interval (``ci_method``:
expanded BCa, or the expanded percentile interval and why), P(b > a) (``p_b_above_a``: the
share of shared seeds where b scores above a, ties 1/2; it shows a split the mean hides),
the exact sign-flip
p and the Benjamini-Hochberg q over the page's rows (``lit_seq.results.stats``), and how many
seeds of each side fit N (``fits_a``, ``fits_b``: ``k/n`` under the page's rule,
:mod:`lit_seq.results.fits`). The verdict reads q, not p: with 50 comparisons at p < 0.05,
about 2.5 would be "detected" by chance; a side that fits N in no seed has not learnt the
task, and a sentence that ranks it must say so (``lit_seq.results.claims``).

:func:`block_pairs` gives a grid's own family, what ``comparisons.{csv,md}`` of a report
holds: within a block, each cell against the cell that differs from it in one axis only and
has that axis's first value in the grid (``pos_mode=none`` vs ``pos_mode=sinusoidal`` at
the same ``residual``), on the task's score (:func:`lit_seq.results.best.score_column`: past
the training length, past-N positions only for a per-step task). A page that quotes other
comparisons lists them in a pairs file (:func:`read_pairs`; ``lit_seq.report DIR --pairs
FILE``): they follow the block pairs in the same table, under the same BH adjustment, and the
page cites their rows (``lit_seq.results.claims``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from lit_seq.results.best import score_column
from lit_seq.results.compare import find_cell
from lit_seq.results.fits import FitRule, fits_n, main_metrics, metric_values
from lit_seq.results.markdown import markdown_table
from lit_seq.results.stats import (
    Interval,
    bh_q_values,
    paired_difference,
    under_covers_note,
    verdict,
)

COMPARISON_COLUMNS = ["id", "task", "block", "held", "axis", "a", "b", "cell_a", "cell_b", "metric"]
COMPARISON_COLUMNS += ["n", "mean_a", "mean_b", "difference", "ci_low", "ci_high", "ci_method"]
COMPARISON_COLUMNS += ["p_b_above_a", "p", "q"]
COMPARISON_COLUMNS += ["verdict", "fits_a", "fits_b", "select_edge"]


def _axes(aggregate: pd.DataFrame, rows: pd.DataFrame) -> list[str]:
    """What the cells of one block differ in: arch and the axes the block sets with more
    than one value, not the value a ``select:`` chose (every cell has its own)."""
    names = list(aggregate.columns)
    columns = names[names.index("arch") : names.index("main_metric")]
    return [
        c
        for c in columns
        if rows[c].notna().all() and rows[c].nunique() > 1 and not (rows[c] == "selected").any()
    ]


def block_pairs(runs: pd.DataFrame, aggregate: pd.DataFrame) -> list[dict]:
    """The grid's own comparisons: per block and axis, each cell vs the one with the axis's
    first value and every other axis the same (see the module's docstring)."""
    pairs = []
    for (task, block), rows in aggregate.groupby(["task", "block"], sort=False):
        axes = _axes(aggregate, rows)
        main = rows["main_metric"].dropna()
        # scored on what this block's runs have (a block without range evaluation has no
        # range_ood column even where the task's other blocks do)
        own = runs[(runs["task"] == task) & (runs["block"] == block)]
        metric = score_column(own, main.iloc[0] if len(main) else "acc")
        for axis in axes:
            held = [a for a in axes if a != axis]
            for key, same in rows.groupby(held, sort=False) if held else [((), rows)]:
                if same[axis].nunique() < 2:
                    continue
                reference = same.iloc[0]
                key = key if isinstance(key, tuple) else (key,)
                context = " ".join(f"{a}={v}" for a, v in zip(held, key, strict=True))
                for _, other in same.iloc[1:].iterrows():
                    pairs.append(
                        {
                            "task": task,
                            "block": block,
                            "held": context,
                            "axis": axis,
                            "a": reference[axis],
                            "b": other[axis],
                            "cell_a": reference["cell"],
                            "cell_b": other["cell"],
                            "metric": metric,
                        }
                    )
    return pairs


PAIR_KEYS = ("a", "b", "metric")


def read_pairs(path: Path, aggregate: pd.DataFrame) -> list[dict]:
    """A page's own comparisons from the YAML list at ``path``: ``{a: WORDS, b: WORDS,
    metric: NAME}`` each, cells named as ``lit_seq.compare`` names them. ValueError (one
    line: the file, the entry, the problem) for a bad entry or a cell that is not one."""
    entries = yaml.safe_load(Path(path).read_text()) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: a pairs file is a list of {{a, b, metric}}, got {entries!r}")
    pairs = []
    for i, entry in enumerate(entries):
        where = f"{path}: entry {i + 1}"
        if not isinstance(entry, dict) or set(entry) != set(PAIR_KEYS):
            raise ValueError(f"{where}: keys must be exactly {list(PAIR_KEYS)}, got {entry!r}")
        pairs.append(page_pair(entry, aggregate, where))
    return pairs


def page_pair(entry: dict, aggregate: pd.DataFrame, where: str) -> dict:
    """The comparison of ``entry`` (``a``, ``b``, ``metric``; cells named as
    ``lit_seq.compare`` names them) as a page's pair; ValueError naming ``where`` and the
    side for a cell that is not one."""
    cells = {}
    for side in ("a", "b"):
        try:
            cells[side] = find_cell(list(aggregate["cell"]), str(entry[side]))
        except ValueError as err:
            first = str(err).splitlines()[0]  # the cells it lists follow on more lines
            raise ValueError(f"{where}: {side}: {first}") from None
    row = aggregate.set_index("cell").loc[cells["a"]]
    return {
        "task": row["task"],
        "block": "(page)",
        "held": "",
        "axis": "",
        "a": entry["a"],
        "b": entry["b"],
        "cell_a": cells["a"],
        "cell_b": cells["b"],
        "metric": entry["metric"],
    }


def comparisons_table(
    runs: pd.DataFrame, aggregate: pd.DataFrame, pairs: list[dict], fit: FitRule | None = None
):
    """One row per pair (``cell_a``, ``cell_b``, ``metric``, and any descriptive keys), with
    the statistics of b - a, BH q across all ``pairs`` and each side's seeds that fit N by
    ``fit`` (default :class:`~lit_seq.results.fits.FitRule`: ``test/<main>`` >= 0.99)."""
    fit = fit or FitRule()
    edges = aggregate.set_index("cell")["select_edge"] if "select_edge" in aggregate else None
    mains = main_metrics(aggregate)
    rows = []
    for pair in pairs:
        a = metric_values(runs, pair["cell_a"], pair["metric"], mains[pair["cell_a"]], fit)
        b = metric_values(runs, pair["cell_b"], pair["metric"], mains[pair["cell_b"]], fit)
        diff = paired_difference(a, b)
        shared = diff.seeds
        flagged = [
            f"{label}: {edges[cell]}"
            for label, cell in (("a", pair["cell_a"]), ("b", pair["cell_b"]))
            if edges is not None and isinstance(edges.get(cell), str) and edges.get(cell)
        ]
        rows.append(
            {
                **pair,
                "n": len(shared),
                "mean_a": sum(a[s] for s in shared) / len(shared) if shared else None,
                "mean_b": sum(b[s] for s in shared) / len(shared) if shared else None,
                "difference": diff.interval.mean,
                "ci_low": diff.interval.low,
                "ci_high": diff.interval.high,
                "ci_method": _method(diff.interval),
                "p_b_above_a": diff.p_above,
                "p": diff.p,
                "fits_a": fits_n(runs, pair["cell_a"], mains[pair["cell_a"]], fit),
                "fits_b": fits_n(runs, pair["cell_b"], mains[pair["cell_b"]], fit),
                "select_edge": "; ".join(flagged),
            }
        )
    table = pd.DataFrame(rows).reindex(columns=COMPARISON_COLUMNS)
    table["id"] = [f"C{i}" for i in range(1, len(table) + 1)]  # what a page cites
    table["q"] = bh_q_values([float(p) for p in table["p"]])
    table["verdict"] = [
        verdict(n, d, q)
        for n, d, q in zip(table["n"], table["difference"], table["q"], strict=True)
    ]
    return table


def _method(interval: Interval) -> str:
    """``expanded BCa``, or ``expanded percentile: <why BCa was undefined>``; "" without one."""
    return f"{interval.method}: {interval.reason}" if interval.reason else interval.method


def _signed(value: float) -> str:
    return "" if pd.isna(value) else f"{value:+.3f}"


def comparisons_markdown(table: pd.DataFrame, fit: FitRule | None = None) -> str:
    """``table`` as one Markdown table (cell ids: the CSV); its title states ``fit``, the
    rule its ``fits N`` columns count seeds by."""
    fit = fit or FitRule()
    header = ["row", "task", "block", "held", "axis", "a", "b", "metric", "n", "a mean", "b mean"]
    header += ["b - a [95% expanded BCa]", "P(b > a)", "sign-flip p", "BH q", "verdict"]
    header += ["a fits N", "b fits N"]
    header += ["selected at sweep end"]
    body = []
    for _, row in table.iterrows():
        interval = _signed(row["difference"])
        if not pd.isna(row["ci_low"]):
            interval += f" [{_signed(row['ci_low'])}, {_signed(row['ci_high'])}]"
        body.append(
            [
                f'<a id="{row["id"].lower()}"></a>{row["id"]}',
                *(row[c] for c in ["task", "block", "held", "axis", "a", "b", "metric", "n"]),
                row["mean_a"],
                row["mean_b"],
                interval,
                row["p_b_above_a"],
                row["p"],
                row["q"],
                row["verdict"],
                row["fits_a"],
                row["fits_b"],
                row["select_edge"],
            ]
        )
    title = (
        "### Comparisons: b - a over shared seeds; verdict on BH q < 0.05 across this table; "
        f"fits N: seeds with {fit.text()} at the training length N (a side that fits N in no "
        "seed has not learnt the task)"
    )
    return f"{title}\n\n" + markdown_table(header, body) + under_covers_note(table["n"])
