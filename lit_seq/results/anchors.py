"""A page's anchors: each published claim in one row, its paper's setting, ours beside it.

``python -m lit_seq.report DIR --anchors FILE`` reads a YAML list of claims, each a direction
between two cells of the grid::

    - anchor: Grazzi et al. 2025
      setting: "LRU / Mamba, transitions in [0, 1] vs [-1, 1], parity, lengths 3-40"
      claim: "transitions in [-1, 1] learn parity, transitions in [0, 1] cannot"
      a: 'parity_check linear_rnn eigenvalues=positive'
      b: 'parity_check linear_rnn eigenvalues=signed'
      metric: range_ood/acc
      expect: higher          # the claim says b scores higher than a

``metric`` is a recorded metric, or ``fits_n``: each seed 1 where it fits N, else 0
(:mod:`lit_seq.results.fits`), for a claim that one side solves the task where the other
does not.

Each claim becomes one more comparison of the report (``comparisons.md``, under the same BH
adjustment as the grid's own pairs and the page's, so its row is cited like theirs), and
``anchors.md`` puts the claim beside that row with a verdict by the rules of the other pages
(a difference is a direction only at BH q < 0.05; a side that fits N in no seed has not
learnt the task and is ranked against nothing, :mod:`lit_seq.results.fits`):

- ``agrees``: the row's verdict is the claimed direction and the side it finds higher fits
  N in at least one seed;
- ``disagrees``: the row finds the opposite direction and the side it finds higher fits N
  in at least one seed; or no difference is detected on the fit metric itself while both
  sides fit N in every seed (the side claimed lower learnt the task as fully as the other);
- ``inconclusive``: otherwise, with the reason: no difference detected, or the side found
  higher fits N in no seed (a ranking of cells that have not learnt the task).

Worked example: claim b higher; the row says "b is higher", q 0.003, b fits N 10/10 ->
agrees. The row says "b is lower", a fits N 0/10 -> inconclusive (a is higher only among
cells that never learnt the task).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from lit_seq.results.comparisons import page_pair
from lit_seq.results.fits import FitRule, fits_everywhere, fits_nowhere, main_metrics
from lit_seq.results.markdown import markdown_table

ANCHOR_KEYS = ("anchor", "setting", "claim", "a", "b", "metric", "expect")
EXPECT = ("higher", "lower")


def read_anchors(path: Path, aggregate: pd.DataFrame) -> list[dict]:
    """The claims at ``path``, each a pair (as ``comparisons.read_pairs`` returns one) with
    its ``anchor``, ``setting``, ``claim`` and ``expect``. ValueError (one line: the file,
    the entry, the problem) for a bad entry or a cell that is not one."""
    entries = yaml.safe_load(Path(path).read_text()) or []
    if not isinstance(entries, list):
        raise ValueError(
            f"{path}: an anchors file is a list of {list(ANCHOR_KEYS)}, got {entries!r}"
        )
    anchors = []
    for i, entry in enumerate(entries):
        where = f"{path}: entry {i + 1}"
        if not isinstance(entry, dict) or set(entry) != set(ANCHOR_KEYS):
            raise ValueError(f"{where}: keys must be exactly {list(ANCHOR_KEYS)}, got {entry!r}")
        if entry["expect"] not in EXPECT:
            raise ValueError(f"{where}: expect is {entry['expect']!r}; allowed: {list(EXPECT)}")
        pair = page_pair(entry, aggregate, where)
        anchors.append({**pair, **{k: entry[k] for k in ("anchor", "setting", "claim", "expect")}})
    return anchors


def anchor_verdict(row: pd.Series, expect: str, fit_metric: str) -> tuple[str, str]:
    """(verdict, reason) of a claim that b is ``expect`` than a, read off its comparison
    ``row`` (``verdict``, ``fits_a``, ``fits_b``, ``metric``); ``fit_metric``: the column the
    page's fit rule reads for that row's task (``test/acc``)."""
    found = row["verdict"]
    if found in ("b is higher", "b is lower"):
        higher = "b" if found == "b is higher" else "a"
        if fits_nowhere(row[f"fits_{higher}"]):
            return "inconclusive", f"{found}, but {higher} fits N in no seed"
        if found == f"b is {expect}":
            return "agrees", found
        return "disagrees", f"{found}: the opposite direction"
    if (
        row["metric"] == fit_metric
        and fits_everywhere(row["fits_a"])
        and fits_everywhere(row["fits_b"])
    ):
        return "disagrees", f"{found}; both sides fit N in every seed"
    return "inconclusive", str(found)


def anchors_table(
    comparisons: pd.DataFrame, anchors: list[dict], fit: FitRule, aggregate: pd.DataFrame
) -> pd.DataFrame:
    """One row per claim: its text, the comparison row that tests it (matched by cells and
    metric), its difference, q, fits and the verdict of :func:`anchor_verdict` (the fit
    metric from cell a's main metric in ``aggregate``)."""
    mains = main_metrics(aggregate)
    rows = []
    for anchor in anchors:
        match = comparisons[
            (comparisons["cell_a"] == anchor["cell_a"])
            & (comparisons["cell_b"] == anchor["cell_b"])
            & (comparisons["metric"] == anchor["metric"])
        ]
        row = match.iloc[-1]  # the page's own row (a grid pair on the same cells is equal)
        fit_metric = fit.column(mains[anchor["cell_a"]])
        verdict, reason = anchor_verdict(row, anchor["expect"], fit_metric)
        rows.append(
            {
                **{k: anchor[k] for k in ("anchor", "setting", "claim", "a", "b", "metric")},
                "expect": f"b is {anchor['expect']}",
                **{k: row[k] for k in ("id", "n", "difference", "ci_low", "ci_high", "q")},
                **{k: row[k] for k in ("fits_a", "fits_b")},
                "verdict": verdict,
                "reason": reason,
            }
        )
    return pd.DataFrame(rows)


def anchors_markdown(table: pd.DataFrame, fit: FitRule) -> str:
    """``table`` as Markdown: each claim, its comparison row (linked), and the verdict."""
    header = ["anchor", "their setting", "their claim", "a", "b", "metric", "claimed"]
    header += ["row", "n", "b - a [95% bootstrap]", "BH q", "a fits N", "b fits N", "verdict"]
    body = []
    for _, row in table.iterrows():
        interval = f"{row['difference']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
        cite = f"[{row['id']}](comparisons.md#{row['id'].lower()})"
        body.append(
            [
                *(row[k] for k in ("anchor", "setting", "claim", "a", "b", "metric", "expect")),
                cite,
                row["n"],
                interval,
                f"{row['q']:.3g}",
                row["fits_a"],
                row["fits_b"],
                f"{row['verdict']} ({row['reason']})",
            ]
        )
    counts = table["verdict"].value_counts() if len(table) else pd.Series(dtype=int)
    tally = ", ".join(f"{counts.get(v, 0)} {v}" for v in ("agrees", "disagrees", "inconclusive"))
    title = (
        f"### Anchors: each published claim beside our comparison row ({tally}); a direction "
        f"only at BH q < 0.05; fits N: seeds with {fit.text()} (a side that fits N in no "
        "seed is ranked against nothing)"
    )
    return f"{title}\n\n" + markdown_table(header, body)
