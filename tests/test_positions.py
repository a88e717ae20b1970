"""python -m lit_seq.positions: accuracy by position span of a finished run."""

import pytest

from lit_seq.positions import format_table, main, span_accuracy
from tests.helpers import REPO, tiny_fit


@pytest.mark.integration
def test_spans_cover_every_test_length(tmp_path, capsys):
    run = tmp_path / "run"
    tiny_fit(REPO / "configs" / "echo" / "rnn.yaml", run, "--trainer.max_steps=30")
    assert main([str(run), "--checkpoint", "last", "--json", str(tmp_path / "spans.json")]) == 0
    printed = capsys.readouterr().out
    assert "| test_len40 |" in printed and "[30, 40)" in printed

    from lit_seq.positions import load_run

    system, datamodule = load_run(run, "last")
    spans = span_accuracy(system, datamodule)
    assert list(spans) == ["test", "test_len20", "test_len40"]
    assert [len(v) for v in spans.values()] == [1, 2, 4]  # spans of the training length 10
    assert all(0.0 <= a <= 1.0 for v in spans.values() for a in v)


@pytest.mark.integration
def test_a_whole_sequence_task_is_refused_in_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    tiny_fit(REPO / "configs" / "signal" / "rnn.yaml", run)
    assert main([str(run), "--checkpoint", "last"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("lit_seq.positions: error:") and "per-step tasks" in err
    assert len(err.splitlines()) == 1


@pytest.mark.integration
def test_missing_checkpoint_is_a_clear_error(tmp_path, capsys):
    run = tmp_path / "run"
    tiny_fit(REPO / "configs" / "echo" / "rnn.yaml", run)
    for ckpt in (run / "checkpoints").glob("*.ckpt"):
        ckpt.unlink()
    assert main([str(run)]) == 2
    assert "no best checkpoint" in capsys.readouterr().err


def test_table_marks_spans_with_nothing_counted():
    table = format_table({"test": [None, 0.5]}, span=10)
    assert table.splitlines()[-1] == "| test | - | 0.500 |"
