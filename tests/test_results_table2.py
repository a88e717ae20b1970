"""Table 2 in the paper's layout: rows from several grids, the 15 x 6 grid, the thesis row."""

import pandas as pd
import pytest

from lit_seq.results import table2


def _line(task, arch, best, fits, paper=None, solved=None, verdict="agree", every="agree"):
    return {
        "task": task,
        "arch": arch,
        "paper": paper,
        "paper_solved": solved,
        "max": best,
        "fits": fits,
        "verdict": verdict,
        "verdict_every_seed": every,
    }


def test_combine_keeps_the_first_grids_line_of_a_row():
    first = pd.DataFrame([_line("parity_check", "rnn", 100.0, 100.0, 100.0, True)])
    second = pd.DataFrame(
        [
            _line("parity_check", "rnn", 50.0, 60.0, 100.0, True, "inconclusive"),
            _line("parity_check", "tape_rnn", 99.0, 100.0, None, True),
        ]
    )
    rows = table2.combine([("main", first), ("cpu", second)])
    assert list(zip(rows["arch"], rows["grid"], rows["max"], strict=True)) == [
        ("rnn", "main", 100.0),
        ("tape_rnn", "cpu", 99.0),
    ]


def test_layout_has_every_task_by_level_and_the_papers_model_order():
    rows = table2.combine(
        [
            (
                "g",
                pd.DataFrame(
                    [
                        _line("parity_check", "rnn", 100.0, 100.0, 100.0, True),
                        _line(
                            "reverse_string", "stack_rnn", 67.7, 100.0, None, None, "no anchor", ""
                        ),
                    ]
                ),
            )
        ]
    )
    text = table2.layout_markdown(rows)
    lines = text.splitlines()
    assert (
        lines[0]
        == "| level | task | rnn | stack_rnn | ndstack_rnn | tape_rnn | transformer | lstm |"
    )
    assert len(lines) == 2 + 15
    parity = next(line for line in lines if "| parity_check |" in line)
    assert parity.startswith("| R | parity_check | 100.0 / 100.0<br>agree; agree | not run |")
    reverse = next(line for line in lines if "| reverse_string |" in line)
    assert "| 67.7 / no anchor<br>no anchor; no reported seed |" in reverse
    assert next(line for line in lines if "| bucket_sort |" in line).startswith("| CS |")


@pytest.mark.parametrize(
    ("memory", "other", "verdict"),
    [
        # a memory row solved, the others' rows fit and none is solved: the thesis holds
        ((95.0, 100.0), (60.0, 100.0), "agree"),
        # the others never fit N on these tasks: ranked against nothing
        ((95.0, 100.0), (60.0, 70.0), "inconclusive"),
        # a row of the others fits and generalises: "only" fails
        ((95.0, 100.0), (92.0, 100.0), "disagree"),
        # the memory rows fit and none generalises
        ((60.0, 100.0), (55.0, 100.0), "disagree"),
    ],
)
def test_thesis_by_the_pages_rule(memory, other, verdict):
    rows = pd.DataFrame(
        [
            _line("reverse_string", "stack_rnn", *memory),
            _line("reverse_string", "rnn", *other),
            # a regular-task row counts on neither side
            _line("parity_check", "rnn", 100.0, 100.0),
        ]
    )
    result = table2.thesis(rows)
    assert result["verdict"] == verdict
    assert result["memory"][0] == 1 and result["other"][0] == 1
