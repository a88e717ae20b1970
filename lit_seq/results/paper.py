"""A grid beside a paper's published rows: Delétang et al. 2023, Table 2.

``python -m lit_seq.report DIR --paper deletang2023`` writes ``paper.{csv,md}``: per task and
architecture of :data:`DELETANG_2023` that the grid ran, the paper's score, then ours on the
same score (``range_ood/acc``: the accuracy averaged over the test lengths past N, x 100):

- ``max``: the highest score of any ok run of the row, every seed and learning rate (the
  paper's number: "we report the maximum score instead of the average", their Section 4);
  ``runs`` counts the runs it is over. Every run has the score because a grid that names
  ``paper:`` scores its selection runs in full by default (``select.score``); one that
  sets ``score: selection`` has a max over its reported runs alone, and ``runs`` says so;
- ``mean [95% bootstrap]`` over the reported seeds (those that ran at the rate the row's
  ``select:`` chose on validation) and how many of them reach 90 (Wilson interval);
- ``fits``: the highest validation accuracy (at the training length N, x 100) of any ok run
  of the row: whether any of our runs learnt the training distribution at all;
- one verdict rule, two readings of "ours": ``inconclusive`` when no run of ours fits N
  (``fits`` < 90), whatever the paper says: a model that never learnt the task in
  distribution says nothing about its extrapolation, solved or not (the budget or setup
  failed, not the extrapolation). Otherwise ``agree`` when ours and the paper's are on the
  same side of 90, else ``disagree``, where "ours" is, for ``verdict`` (agrees by the maximum
  over runs, the paper's own criterion), the maximum over every run, and for
  ``verdict_every_seed`` (agrees in every seed) each reported seed: every one >= 90 against
  a solved row, none against an unsolved one ("" before any reported seed has run). A
  grid without validation scores leaves ``fits`` empty and is judged as if it fits.
  ``chance`` (the task's, x 100) beside it, and on the page with the lengths the score
  averages (``scored_on``: ``lengths 41-200, chance 50``). Like for like: our maximum against theirs; the
  mean, the success rate and the every-seed verdict say how much of our maximum one lucky
  run carries.

A row is found by its runs' ``task`` and ``arch``. The paper's numbers were read from its
text as cited in ``source``; where the text states the verdict but Table 2's number could
not be confirmed here (the paper's repository,
``google-deepmind/neural_networks_chomsky_hierarchy``, does not hold its tables, and the
paper's Table 2 was not readable in the session that checked them), ``score`` is None,
``solved`` carries the verdict and the page prints ``solved (text; Table 2 not
confirmed)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lit_seq.record import RANGE_OOD
from lit_seq.results.fits import FitRule
from lit_seq.results.markdown import markdown_table
from lit_seq.results.scored_on import scored_on
from lit_seq.results.stats import (
    bootstrap_interval,
    success_rate,
    under_covers_note,
    wilson_interval,
)

SOLVED = 90.0  # their bold: a score >= 90% solves the task
NO_ANCHOR = "no anchor"  # the verdict of a row whose paper side was not read here
SCORE = f"{RANGE_OOD}/acc"  # their score: per-sequence accuracy averaged over the test lengths
FITS = "val/acc"  # accuracy at the training length: did the run learn the task at all
PAPER_FIT = FitRule(FITS, SOLVED / 100)  # "fits N" on this page, for its comparisons too


@dataclass(frozen=True)
class PaperRow:
    """One published number: ``score`` in percent (None: not readable here), and whether
    the paper counts it solved: from the score, else from a claim of its text
    (``solved_if_unknown``); None where neither was read here (no anchor: the row gets
    no verdict, only our numbers)."""

    task: str
    arch: str
    score: float | None
    source: str
    solved_if_unknown: bool | None = None

    @property
    def solved(self) -> bool | None:
        return self.score >= SOLVED if self.score is not None else self.solved_if_unknown


_T2 = "Table 2"
_B1 = "App. B.1: every network but the Transformer solves every regular task for every seed"
_54 = "Sec. 5.4: Transformers solve Even Pairs (R); Table 2's number not read here"
_CS = (
    "Abstract / Sec. 5: RNNs and Transformers fail on non-regular tasks, LSTMs solve only "
    "regular and counter tasks; Table 2's number not read here"
)
_CYCLE = "Table 2; App. B.3.2: 61.9% with baseline 20%"

_RNN_TF = (
    "Abstract / Sec. 5: RNNs and Transformers fail on non-regular tasks; Table 2's number "
    "not read here"
)
_MEMORY = (
    "not confirmed: the abstract's claim (only networks with a stack or a tape generalise on "
    "context-free and context-sensitive tasks) is about the class, not this cell; Table 2's "
    "number not read here"
)
_SORT = (
    "not confirmed: bucket sort can be solved by counting, which the text credits LSTMs with, "
    "and the text's claim for the Transformer was not checked against Table 2 here"
)
REGULAR = ("even_pairs", "modular_arithmetic", "parity_check", "cycle_navigation")
NON_REGULAR = (
    "stack_manipulation",
    "reverse_string",
    "modular_arithmetic_brackets",
    "solve_equation",
    "duplicate_string",
    "missing_duplicate_string",
    "odds_first",
    "binary_addition",
    "binary_multiplication",
    "compute_sqrt",
    "bucket_sort",
)
NEW_TASKS = NON_REGULAR[2:4] + NON_REGULAR[5:6] + NON_REGULAR[8:]  # their six we added last
MEMORY_ARCHS = ("stack_rnn", "ndstack_rnn", "tape_rnn")


def _table2_rest() -> list[PaperRow]:
    """The rows of the six tasks and the three memory models, none read from Table 2 here:
    each carries the paper text's claim where one covers the cell, no anchor elsewhere."""
    rows = []
    for task in NEW_TASKS:  # the rnn, lstm and transformer rows of the six new tasks
        for arch in ("rnn", "lstm", "transformer"):
            if task == "bucket_sort" and arch != "rnn":
                rows.append(PaperRow(task, arch, None, _SORT))
            elif arch == "lstm":
                rows.append(PaperRow(task, arch, None, _CS, solved_if_unknown=False))
            else:
                rows.append(PaperRow(task, arch, None, _RNN_TF, solved_if_unknown=False))
    for arch in MEMORY_ARCHS:  # the memory models on all fifteen
        rows += [PaperRow(t, arch, None, _B1, solved_if_unknown=True) for t in REGULAR]
        rows += [PaperRow(t, arch, None, _MEMORY) for t in NON_REGULAR]
    return rows


DELETANG_2023 = [
    PaperRow("even_pairs", "rnn", 100.0, _B1),
    PaperRow("even_pairs", "lstm", 100.0, _B1),
    PaperRow("even_pairs", "transformer", None, _54, solved_if_unknown=True),
    PaperRow("modular_arithmetic", "rnn", 100.0, _T2),
    PaperRow("modular_arithmetic", "lstm", 100.0, _T2),
    PaperRow("modular_arithmetic", "transformer", 24.2, _T2),
    PaperRow("parity_check", "rnn", 100.0, _T2),
    PaperRow("parity_check", "lstm", 100.0, _T2),
    PaperRow("parity_check", "transformer", 52.0, _T2),
    PaperRow("cycle_navigation", "rnn", 100.0, _B1),
    PaperRow("cycle_navigation", "lstm", 100.0, _B1),
    PaperRow("cycle_navigation", "transformer", 61.9, _CYCLE),
    PaperRow("stack_manipulation", "rnn", 56.0, _T2),
    PaperRow("stack_manipulation", "lstm", 59.1, _T2),
    PaperRow("stack_manipulation", "transformer", 57.5, _T2),
    PaperRow("reverse_string", "rnn", 62.0, _T2),
    PaperRow("reverse_string", "lstm", 60.9, _T2),
    PaperRow("reverse_string", "transformer", 62.3, _T2),
    PaperRow("duplicate_string", "rnn", 50.3, _T2),
    PaperRow("duplicate_string", "lstm", 57.6, _T2),
    PaperRow("duplicate_string", "transformer", 52.8, _T2),
    PaperRow("odds_first", "rnn", 51.0, _T2),
    PaperRow("odds_first", "lstm", 55.6, _T2),
    PaperRow("odds_first", "transformer", 52.8, _T2),
    PaperRow("binary_addition", "rnn", None, _CS, solved_if_unknown=False),
    PaperRow("binary_addition", "lstm", None, _CS, solved_if_unknown=False),
    PaperRow("binary_addition", "transformer", None, _CS, solved_if_unknown=False),
    # the six tasks and three memory-augmented models added for Table 2 whole (issue 56)
    *_table2_rest(),
]
PAPERS = {"deletang2023": DELETANG_2023}

PAPER_COLUMNS = [
    "task",
    "arch",
    "chance",
    "scored_on",
    "paper",
    "paper_solved",
    "max",
    "runs",
    "fits",
    "mean",
]
PAPER_COLUMNS += ["ci_low"]
PAPER_COLUMNS += ["ci_high", "n", "solved_seeds", "solved_low", "solved_high", "verdict"]
PAPER_COLUMNS += ["verdict_every_seed"]
PAPER_COLUMNS += ["source"]


def side_by_side(runs: pd.DataFrame, rows: list[PaperRow]) -> pd.DataFrame:
    """One line per paper row the grid ran (see the module docstring); scores x 100."""
    ok = runs[runs["status"] == "ok"]
    if SCORE not in ok:
        return pd.DataFrame(columns=PAPER_COLUMNS)
    lines = []
    for row in rows:
        mine = ok[(ok["task"] == row.task) & (ok["arch"] == row.arch)]
        every = pd.to_numeric(mine[SCORE], errors="coerce").dropna() * 100
        if every.empty:
            continue
        reported = mine[mine["selected"].ne(False)]
        values = list(pd.to_numeric(reported[SCORE], errors="coerce").dropna() * 100)
        interval = bootstrap_interval(values)
        hits, n = success_rate(values, SOLVED)
        low, high = wilson_interval(hits, n)
        ours_solved = every.max() >= SOLVED
        fits = pd.to_numeric(mine[FITS], errors="coerce").max() * 100 if FITS in mine else None
        known = mine["chance"] if "chance" in mine else pd.Series(dtype=float)
        chance = pd.to_numeric(known, errors="coerce").dropna()
        lines.append(
            {
                "task": row.task,
                "arch": row.arch,
                "chance": chance.iloc[0] * 100 if len(chance) else None,
                "scored_on": scored_on(mine, SCORE, scale=100),  # lengths, chance (x 100)
                "paper": row.score,
                "paper_solved": row.solved,
                "max": every.max(),
                "runs": len(every),
                "fits": fits,
                "mean": interval.mean,
                "ci_low": interval.low,
                "ci_high": interval.high,
                "n": n,
                "solved_seeds": hits,
                "solved_low": low,
                "solved_high": high,
                "verdict": _verdict(ours_solved, row.solved, fits),
                "verdict_every_seed": _every_seed(hits, n, row.solved, fits),
                "source": row.source,
            }
        )
    return pd.DataFrame(lines, columns=PAPER_COLUMNS)


def _fits_nowhere(fits: float | None) -> bool:
    """No run of the row learnt N (None / NaN: not recorded, judged as if it did)."""
    return fits is not None and not pd.isna(fits) and fits < SOLVED


def _verdict(ours_solved: bool, paper_solved: bool | None, fits: float | None) -> str:
    """Agrees by the maximum over runs: ``ours_solved`` is our maximum >= 90."""
    if _fits_nowhere(fits):
        return "inconclusive"  # never learnt N: says nothing about extrapolation either way
    if paper_solved is None:
        return NO_ANCHOR  # nothing of the paper's read here to agree with
    return "agree" if ours_solved == paper_solved else "disagree"


def _every_seed(hits: int, n: int, paper_solved: bool | None, fits: float | None) -> str:
    """Agrees in every seed: all ``n`` reported seeds >= 90 against a solved row, none
    against an unsolved one; "" before any reported seed."""
    if not n:
        return ""
    if _fits_nowhere(fits):
        return "inconclusive"
    if paper_solved is None:
        return NO_ANCHOR
    return "agree" if hits == (n if paper_solved else 0) else "disagree"


def _tally(verdicts: pd.Series) -> str:
    """``2 agree, 1 disagree, 3 inconclusive`` (and ``, 4 no anchor`` where any has none)."""
    count = verdicts.fillna("").value_counts()
    kinds = ("agree", "disagree", "inconclusive") + ((NO_ANCHOR,) if count.get(NO_ANCHOR) else ())
    return ", ".join(f"{int(count.get(v, 0))} {v}" for v in kinds)


def _text(value) -> str:
    return value if isinstance(value, str) else ""


def _pct(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.1f}"


# what the paper column says of a row whose number was not read: the text's claim, if any
_UNREAD = {
    True: "solved (text; Table 2 not confirmed)",
    False: "unsolved (text; Table 2 not confirmed)",
}


def paper_markdown(table: pd.DataFrame, name: str) -> str:
    """``table`` as the page's Markdown table, with its tally of verdicts."""
    # their protocol beside ours: their aggregate (the maximum over every seed and rate)
    # recomputed from our runs, then our selected-rate mean with its interval
    header = ["task", "arch", f"scored on ({SCORE}, x 100)", "paper"]
    header += ["ours by their protocol: max over seeds and rates", "fits N: best val"]
    header += ["ours: selected-rate mean [95% expanded BCa]"]
    header += ["seeds >= 90 [Wilson]", "agrees by the max over runs", "agrees in every seed"]
    body = []
    for _, r in table.iterrows():
        paper = _pct(r["paper"]) or _UNREAD.get(r["paper_solved"], "not confirmed")
        # a row whose reported seeds have not run yet (a grid in progress) says so
        mean, rate = "no reported seed yet", ""
        if r["n"]:
            mean = f"{_pct(r['mean'])} [{_pct(r['ci_low'])}, {_pct(r['ci_high'])}]"
            rate = f"{int(r['solved_seeds'])}/{int(r['n'])}"
            rate += f" [{r['solved_low']:.2f}, {r['solved_high']:.2f}]"
        body.append(
            [
                r["task"],
                r["arch"],
                _text(r.get("scored_on")),
                paper,
                f"{_pct(r['max'])} ({int(r['runs'])} runs)",
                _pct(r["fits"]),
                mean,
                rate,
                r["verdict"],
                _text(r.get("verdict_every_seed")),
            ]
        )
    title = (
        f"### Beside {name}, {len(table)} rows: solved (score >= 90) or not, ours against "
        f"theirs; by the maximum over runs {_tally(table['verdict'])}; in every seed "
        f"{_tally(table['verdict_every_seed'])} (inconclusive: no run of ours fits the "
        "training length N, best val < 90, whatever the paper says)"
    )
    return f"{title}\n\n" + markdown_table(header, body) + under_covers_note(table["n"])
