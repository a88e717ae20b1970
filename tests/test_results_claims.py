"""The claim checker: a page's comparison sentences cite a comparisons-table row and quote
its numbers; a wrong number, a direction the row does not detect, or a comparison without a
row fails."""

from pathlib import Path

import pandas as pd
import pytest

from lit_seq.results.claims import check_page, claims
from tests.helpers import REPO as REPO_ROOT

ROWS = [
    # C1: detected (q 0.004); C2: not detected (q 0.31)
    {"id": "C1", "n": 10, "difference": 0.2291, "ci_low": 0.1642, "ci_high": 0.2938,
     "q": 0.004, "verdict": "b is higher"},
    {"id": "C2", "n": 10, "difference": -0.0193, "ci_low": -0.0705, "ci_high": 0.0312,
     "q": 0.31, "verdict": "no difference detected"},
]  # fmt: skip


def _page(tmp_path: Path, body: str) -> list[str]:
    pd.DataFrame(ROWS).to_csv(tmp_path / "comparisons.csv", index=False)
    page = tmp_path / "page.md"
    page.write_text(body)
    return check_page(page)


C1 = "[C1](comparisons.md#c1)"
C2 = "[C2](comparisons.md#c2)"


@pytest.mark.parametrize(
    "body",
    [
        f"Learnable is higher past N: +0.229 [+0.164, +0.294], n = 10, q = 0.004 ({C1}).\n",
        f"NoPE against sinusoidal: no difference detected, -0.019 [-0.071, +0.031] ({C2}).\n",
        f"| learnable - sinusoidal | +0.23 [+0.16, +0.29] | q < 0.01 | {C1} |\n",
        "Both fit every seed at N (10/10).\n\n```\npython -m lit_seq.compare A B  # +0.5\n```\n",
        "# Heading with +0.5\n\n<!-- a note: +0.3 higher than -->\nPlain text, 0.5 chance.\n",
    ],
)
def test_a_page_that_quotes_its_rows_passes(tmp_path, body):
    assert _page(tmp_path, body) == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (f"Learnable is higher: +0.239 [+0.164, +0.294] ({C1}).", "+0.239 is no difference"),
        (f"Learnable is higher, n = 5 ({C1}).", "n = 5: its row has n = 10"),
        (f"Learnable is higher, q = 0.04 ({C1}).", "q = 0.04"),
        (f"Learnable is higher, q < 0.001 ({C1}).", "q < 0.001"),
        (f"NoPE is lower than sinusoidal ({C2}).", "states a direction"),
        (f"Learnable: no difference ({C1}).", "says no difference where its row detects one"),
        ("NoPE scores -0.019 against sinusoidal.", "a comparison without a comparisons-table"),
        ("NoPE is lower than sinusoidal past N.", "a comparison without a comparisons-table"),
        ("| NoPE - sinusoidal | -0.019 |", "a comparison without a comparisons-table"),
        ("Learnable is higher ([C9](comparisons.md#c9)).", "C9 is not a row of comparisons.md"),
    ],
)
def test_a_wrong_or_uncited_comparison_fails_naming_the_line(tmp_path, body, problem):
    [found] = _page(tmp_path, f"Intro.\n\n{body}\n")
    assert problem in found and found.startswith(f"{tmp_path / 'page.md'}:3:")


def test_a_claim_is_a_sentence_or_a_table_row():
    text = "One sentence. Another (with +0.1)\nsplit over lines.\n\n| a | b |\n"
    assert [c.text for c in claims(text)] == [
        "One sentence.",
        "Another (with +0.1) split over lines.",
        "| a | b |",
    ]


# Every published results page: each comparison it states cites its row and quotes it.
PAGES = [
    "README.md",
    "docs/findings.md",
    "docs/results/README.md",
    "docs/results/chomsky.md",
    "docs/results/mixers.md",
    "docs/results/pe_extrapolation.md",
]


@pytest.mark.parametrize("page", PAGES)
def test_every_published_comparison_cites_its_row(page):
    assert check_page(REPO_ROOT / page) == []


# C3: NoPE (b) is higher past N but fits N in no seed; C4: the same difference at N
UNFIT = [
    {"id": "C3", "n": 10, "difference": 0.258, "ci_low": 0.228, "ci_high": 0.285, "q": 0.003,
     "verdict": "b is higher", "metric": "range_ood/acc_ood", "a": "sinusoidal", "b": "none",
     "fits_a": "8/10", "fits_b": "0/10"},
    {"id": "C4", "n": 10, "difference": 0.066, "ci_low": 0.010, "ci_high": 0.120, "q": 0.03,
     "verdict": "b is higher", "metric": "test/acc", "a": "sinusoidal", "b": "none",
     "fits_a": "8/10", "fits_b": "0/10"},
    {"id": "C5", "n": 10, "difference": 0.8, "ci_low": 0.5, "ci_high": 1.0, "q": 0.0078,
     "verdict": "b is higher", "metric": "fits_n", "a": "mamba", "b": "transformer",
     "fits_a": "0/10", "fits_b": "8/10"},
]  # fmt: skip
C3 = "[C3](comparisons.md#c3)"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (f"NoPE is higher past N, +0.258 ({C3}).", "C3: b (none) fits N in 0/10 seeds; say so"),
        (f"- NoPE is higher past N ({C3}).\n- Learnable does not fit N.", "C3: b (none)"),
        (f"NoPE is higher past N ({C3}), though it does not fit N.", None),
        (f"NoPE, which fits N in no seed, is higher past N ({C3}).", None),
        ("NoPE is higher at N ([C4](comparisons.md#c4)).", None),  # at N: the fit itself
        ("The transformer fits N more often ([C5](comparisons.md#c5)): higher.", None),  # fits_n
    ],
)
def test_a_direction_about_a_side_that_never_fits_n_must_say_so(tmp_path, body, problem):
    pd.DataFrame(UNFIT).to_csv(tmp_path / "comparisons.csv", index=False)
    page = tmp_path / "page.md"
    page.write_text(body + "\n")
    found = check_page(page)
    assert (found == []) if problem is None else (len(found) == 1 and problem in found[0])


def test_a_quoted_term_is_not_a_claim(tmp_path):
    body = 'It prints "no difference detected" when it cannot tell; `--min -0.5` too.\n'
    assert _page(tmp_path, body) == []
