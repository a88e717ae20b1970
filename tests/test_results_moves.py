"""results/moves.py: what moved between two publications of one Table 2 grid."""

import pandas as pd

from lit_seq.results.moves import main, moves_markdown, verdict_moves


def _paper(rows: list[tuple]) -> pd.DataFrame:
    columns = ["task", "arch", "paper", "paper_solved", "mean", "ci_low", "ci_high"]
    columns += ["solved_seeds", "n", "verdict", "verdict_every_seed"]
    return pd.DataFrame(rows, columns=columns)


OLD = _paper(
    [
        ("even_pairs", "rnn", 100.0, True, 52.9, 48.2, 60.2, 0, 10, "inconclusive", "inconclusive"),
        ("even_pairs", "lstm", 100.0, True, 100.0, 100.0, 100.0, 10, 10, "agree", "agree"),
        (
            "binary_addition",
            "rnn",
            None,
            False,
            48.8,
            48.7,
            48.9,
            0,
            10,
            "inconclusive",
            "inconclusive",
        ),
    ]
)
NEW = _paper(
    [
        ("even_pairs", "lstm", 100.0, True, 100.0, 100.0, 100.0, 10, 10, "agree", "agree"),
        ("even_pairs", "rnn", 100.0, True, 99.0, 97.0, 100.0, 7, 10, "agree", "disagree"),
        ("cycle_navigation", "lstm", 100.0, True, 85.8, 77.5, 97.9, 1, 3, "agree", "disagree"),
    ]
)


def test_each_row_says_which_verdicts_moved_in_the_old_tables_order():
    moves = verdict_moves(OLD, NEW)
    assert list(zip(moves.task, moves.arch, moves.moved, strict=True)) == [
        ("even_pairs", "rnn", "verdict, verdict_every_seed"),
        ("even_pairs", "lstm", ""),
        ("binary_addition", "rnn", "only in old"),
        ("cycle_navigation", "lstm", "only in new"),
    ]
    # a text cell of the paper keeps its text; numbers stay numbers
    assert list(moves.paper) == [100.0, 100.0, "unsolved (text)", 100.0]


def test_the_markdown_gives_both_sides_with_intervals_and_blank_for_a_missing_side():
    lines = moves_markdown(verdict_moves(OLD, NEW)).splitlines()
    assert lines[2] == (
        "| even_pairs | rnn | 100 | 52.9 [48.2, 60.2], 0/10 solve | inconclusive / inconclusive"
        " | 99.0 [97.0, 100.0], 7/10 solve | agree / disagree | verdict, verdict_every_seed |"
    )
    assert lines[4].startswith("| binary_addition | rnn | unsolved (text) | 48.8 [48.7, 48.9]")
    assert lines[4].endswith("|  |  | only in old |")


def test_the_command_names_what_writes_a_missing_paper_csv(tmp_path, capsys):
    OLD.to_csv(tmp_path / "paper.csv", index=False)
    assert main([str(tmp_path), str(tmp_path)]) == 0
    assert "| even_pairs | lstm |" in capsys.readouterr().out
    assert main([str(tmp_path), str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere/paper.csv does not exist" in err and "--paper deletang2023" in err


def test_a_row_whose_reported_seeds_have_not_run_yet_is_not_counted_as_moved():
    # the new grid mid-run: selection runs give its max verdict, no reported seed has run
    partial = NEW.copy()
    partial.loc[partial.arch == "rnn", ["mean", "ci_low", "ci_high", "n"]] = [None, None, None, 0]
    partial.loc[partial.arch == "rnn", "verdict_every_seed"] = None
    moves = verdict_moves(OLD, partial)
    assert moves.moved[0] == "verdict, verdict_every_seed not yet in new"
    line = moves_markdown(moves).splitlines()[2]
    assert line.endswith("|  | agree / not yet run | verdict, verdict_every_seed not yet in new |")
