"""The claim checker: every comparison a results page states must cite a row of a generated
comparisons table, and quote that row's numbers.

A page cites row ``C7`` of a table with a Markdown link to it: ``[C7](comparisons.md#c7)``
(the path relative to the page; the numbers are read from ``comparisons.csv`` beside that
``comparisons.md``, as ``lit_seq.report`` writes both). A *claim* is one sentence of prose or
one table row (a list item starts a new sentence). In a claim that cites rows:

- every signed decimal (``+0.229``, ``-0.241``: how a difference is written) must be the
  difference or an interval end of a cited row, at the precision printed;
- ``n = 10`` / ``n=10`` must be a cited row's shared seeds, ``q = 0.003`` its BH q (``q < x``:
  its q is below x);
- a direction word (higher, lower, better, worse, beats, ...) needs a cited row whose verdict
  found a direction, and "no difference" a cited row that found none;
- a direction word next to a detected row scored past N (not ``test/...`` or ``val/...``, the
  training length) one of whose sides fits N in no seed (its ``fits_a`` / ``fits_b`` is
  ``0/n``, :mod:`lit_seq.results.fits`) needs the sentence to say so ("does not fit N",
  "never fits N", "fits N in no seed", "fits N on none"): a cell that never learnt its
  training lengths is ranked past them only with that said (a row at N compares the fit
  itself). A table written before these columns is not checked for it.

A claim that cites nothing but quotes a signed decimal, "no difference" or a comparative
("higher than", "lower than", ...) is a comparison without a row. Fenced or indented code,
headings, HTML comments and text in double quotes or backticks (a term named, not a claim
made) are not claims. Worked example: a row C1 with difference 0.2291, interval
[0.1642, 0.2938], q 0.004 and verdict "b is higher" passes ``learnable is higher, +0.229
[+0.164, +0.294], q = 0.004 ([C1](comparisons.md#c1))`` and fails the same with +0.239.

    python -m lit_seq.results.claims docs/results/README.md ...   # one line per problem
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pandas as pd

from lit_seq.results.fits import FITS_N, fits_nowhere

CITATION = re.compile(r"\[(C\d+)\]\(([^)#\s]*comparisons\.md)#c\d+\)")
SIGNED = re.compile(r"(?<![\w.])([+\-−])(\d+\.\d+)")
SEEDS = re.compile(r"\bn\s?=\s?(\d+)\b")
Q_VALUE = re.compile(r"\bq\s?([=<])\s?(\d+(?:\.\d+)?(?:e-?\d+)?)")
DIRECTION = re.compile(
    r"\b(higher|lower|better|worse|beats?|outperforms?|exceeds?|improves?|hurts?)\b", re.I
)
NO_DIFFERENCE = re.compile(r"\bno difference\b", re.I)
NOT_FIT = re.compile(  # the sentence says a side has not learnt N
    r"\b(?:not|never)\s+fits?\s+N\b|\bfits?\s+N\s+(?:in|on)\s+(?:no|none)\b", re.I
)
COMPARATIVE = re.compile(r"\b(higher|lower|better|worse) than\b", re.I)
QUOTED = re.compile(r'"[^"]*"|`[^`]*`')  # a term or code named, not a claim made
LIST_ITEM = re.compile(r"([-*+]|\d+\.)\s")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\[])")


@dataclass(frozen=True)
class Claim:
    """One sentence or table row of a page, with the line it starts on."""

    line: int
    text: str


def claims(markdown: str) -> list[Claim]:
    """The sentences and table rows of ``markdown``, skipping code, headings and comments."""
    out: list[Claim] = []
    paragraph: list[str] = []
    start = 0
    fenced = False
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group().count("\n"), markdown, flags=re.S)

    def flush() -> None:
        if paragraph:
            joined = " ".join(paragraph)
            out.extend(Claim(start, s) for s in SENTENCE_END.split(joined) if s.strip())
            paragraph.clear()

    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced or line.startswith("    ") and not paragraph:
            continue  # code
        if not stripped or stripped.startswith("#"):
            flush()
            continue
        if stripped.startswith("|"):
            flush()
            out.append(Claim(number, stripped))
            continue
        if LIST_ITEM.match(stripped):
            flush()  # each item of a list is its own claim, whatever its last sentence ends in
        if not paragraph:
            start = number
        paragraph.append(stripped)
    flush()
    return out


def _matches(quoted: str, value: float) -> bool:
    """Whether ``quoted`` (a decimal as printed) is ``value`` rounded to its precision."""
    try:
        printed = Decimal(quoted)
        exact = Decimal(repr(float(value)))
    except (InvalidOperation, ValueError):
        return False
    return abs(exact - printed) <= Decimal(1).scaleb(printed.as_tuple().exponent) / 2


def _table(page: Path, link: str, cache: dict[Path, pd.DataFrame]) -> pd.DataFrame:
    path = (page.parent / link).with_suffix(".csv")
    if path not in cache:
        cache[path] = pd.read_csv(path).set_index("id") if path.exists() else pd.DataFrame()
    return cache[path]


def _detected(row: pd.Series) -> bool:
    return str(row["verdict"]).startswith("b is")


def check_claim(claim: Claim, rows: list[pd.Series]) -> list[str]:
    """What is wrong with ``claim`` given the rows it cites (empty: nothing)."""
    text = QUOTED.sub(" ", claim.text)
    if not rows:
        if SIGNED.search(text) or NO_DIFFERENCE.search(text) or COMPARATIVE.search(text):
            return ["a comparison without a comparisons-table row"]
        return []
    problems = []
    values = [float(r[k]) for r in rows for k in ("difference", "ci_low", "ci_high")]
    for sign, digits in SIGNED.findall(text):
        quoted = ("-" if sign in "-−" else "") + digits
        if not any(_matches(quoted, v) for v in values if pd.notna(v)):
            problems.append(f"{sign}{digits} is no difference or interval end of its row")
    for n in SEEDS.findall(text):
        if not any(int(r["n"]) == int(n) for r in rows):
            problems.append(f"n = {n}: its row has n = {'/'.join(str(r['n']) for r in rows)}")
    for relation, number in Q_VALUE.findall(text):
        qs = [float(r["q"]) for r in rows]
        ok = (
            any(q < float(number) for q in qs)
            if relation == "<"
            else any(_matches(number, q) for q in qs)
        )
        if not ok:
            problems.append(f"q {relation} {number}: its row has q = {qs}")
    if NO_DIFFERENCE.search(text):
        if all(_detected(r) for r in rows):
            problems.append("says no difference where its row detects one")
    elif DIRECTION.search(text) and not any(_detected(r) for r in rows):
        problems.append("states a direction where its row detects no difference")
    if DIRECTION.search(text) and not NOT_FIT.search(text):
        problems += [_unfit(r) for r in rows if _detected(r) and _past_n(r) and _unfit(r)]
    return problems


def _past_n(row: pd.Series) -> bool:
    """Whether ``row`` is scored past the training length (``test/acc`` and ``fits_n``, the
    success rate at N, are at N)."""
    metric = str(row.get("metric", ""))
    return metric != FITS_N and not metric.startswith(("test/", "val/"))


def _unfit(row: pd.Series) -> str:
    """The problem with ranking ``row`` unsaid: its sides that fit N in no seed ("" none)."""
    sides = [
        f"{side} ({row[side]}) fits N in {row[f'fits_{side}']} seeds"
        for side in ("a", "b")
        if fits_nowhere(row.get(f"fits_{side}"))
    ]
    if not sides:
        return ""
    return f'{row.name}: {" and ".join(sides)}; say so ("does not fit N") or drop the direction'


def check_page(page: Path) -> list[str]:
    """``page:line: problem: claim`` for every problem of ``page``."""
    page = Path(page)
    cache: dict[Path, pd.DataFrame] = {}
    problems = []
    for claim in claims(page.read_text()):
        rows, missing = [], []
        for row_id, link in CITATION.findall(claim.text):
            table = _table(page, link, cache)
            if row_id in table.index:
                rows.append(table.loc[row_id])
            else:
                missing.append(f"{row_id} is not a row of {link}")
        for problem in missing + check_claim(claim, rows):
            problems.append(f"{page}:{claim.line}: {problem}: {claim.text[:120]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.results.claims",
        description="Check that every comparison a results page states cites a row of its "
        "comparisons table and quotes that row's numbers; exit 1 naming each line that does "
        "not.",
    )
    parser.add_argument("pages", nargs="+", help="Markdown pages, e.g. docs/results/chomsky.md")
    pages = parser.parse_args(argv).pages
    problems = [p for page in pages for p in check_page(Path(page))]
    print("\n".join(problems) or f"{len(pages)} page(s): every comparison cites its row")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
