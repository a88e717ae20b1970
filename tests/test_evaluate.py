"""``python -m lit_seq.evaluate``: a checkpoint scored on new lengths and seeds, beside its run."""

import json

import pytest

from lit_seq.evaluate import evaluate, find_run, main, positions_table
from lit_seq.fit import BadInput
from lit_seq.fit.scoring import RangeEval
from lit_seq.record import METRICS_FILE
from tests.helpers import REPO, tiny_fit

SIGNAL = REPO / "configs" / "signal" / "transformer.yaml"  # sinusoidal: any length
ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"  # no positional table
SUM_MOD = REPO / "configs" / "sum_mod" / "transformer.yaml"


@pytest.fixture(scope="module")
def signal_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("signal") / "run"
    tiny_fit(SIGNAL, run_dir, "--data.init_args.n_eval_per_class=20")
    return run_dir


@pytest.mark.integration
def test_a_run_folder_scores_as_its_own_test_did_and_its_record_is_untouched(signal_run):
    record = (signal_run / METRICS_FILE).read_bytes()
    path, result = evaluate(signal_run)
    assert path.parent == signal_run and path.name.startswith("eval-best-step=")
    assert path.name.endswith("-seed0-x2-4.json")
    assert json.loads(path.read_text()) == result
    tested = json.loads(record)["metrics"]
    for key, value in result["metrics"].items():  # the same metric of the same weights
        assert value == pytest.approx(tested[key], abs=1e-6), key
    assert set(result["metrics"]) == {k for k in tested if not k.endswith("/loss")}
    assert (signal_run / METRICS_FILE).read_bytes() == record
    assert result["positions"] == {}  # one label per sequence: no positions to tell apart


@pytest.mark.integration
def test_other_lengths_and_a_data_seed(signal_run):
    checkpoint = signal_run / "checkpoints" / "last.ckpt"
    _, result = evaluate(checkpoint, gen_factors=[3], data_seed=5, tag="seed5")
    assert (signal_run / "eval-seed5.json").is_file()
    assert result["test_lengths"] == [64, 192] and result["data_seed"] == 5
    assert set(result["metrics"]) == {"test/acc", "test/f1", "test_len192/acc", "test_len192/f1"}
    _, curve = evaluate(signal_run, gen_factors=[], range_eval=RangeEval(2, step=32, n=20))
    # up to 2x the training length: the model's table (256) is the cap, not today's test sets
    assert set(curve["curve"]["acc"]) == {"32", "64", "96", "128"}


@pytest.mark.integration
def test_a_sinusoidal_run_scores_at_8x_its_training_length(signal_run):
    # its table covers 256 (the longest training-time test set); rows past it are computed
    assert main([str(signal_run), "--gen_factors", "8", "--tag", "x8"]) == 0
    result = json.loads((signal_run / "eval-x8.json").read_text())
    assert result["test_lengths"] == [64, 512]
    assert {"test/acc", "test_len512/acc", "test_len512/f1"} <= set(result["metrics"])


@pytest.mark.integration
def test_a_learnable_table_refuses_longer_lengths_naming_its_limit(tmp_path, capsys):
    run_dir = tmp_path / "run"
    tiny_fit(SIGNAL, run_dir, "--model.init_args.pos_mode=learnable")  # 256 trained rows
    with pytest.raises(BadInput) as error:
        evaluate(run_dir, gen_factors=[2, 8])
    assert str(error.value) == (
        "gen_factors=[2, 8]: length 512 does not fit this model (sequence length 512 exceeds "
        "pos_mode='learnable''s table of max_len=256 trained positions; raise max_len to at "
        "least 512 (before training: a trained table cannot grow)); at most factor 4 for "
        "this checkpoint"
    )
    assert main([str(run_dir), "--gen_factors", "8"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not list(run_dir.glob("eval-*x8.json"))
    assert main([str(run_dir), "--gen_factors", "4"]) == 0  # within its table


@pytest.mark.integration
def test_a_max_len_given_at_training_is_kept_and_evaluates_within_it(tmp_path):
    run_dir = tmp_path / "run"
    tiny_fit(
        SIGNAL, run_dir, "--model.init_args.pos_mode=learnable", "--model.init_args.max_len=600"
    )
    _, result = evaluate(run_dir, gen_factors=[8])  # 512 <= 600: within the table it asked for
    assert "test_len512/acc" in result["metrics"]


@pytest.mark.integration
def test_randomized_positions_given_a_pos_range_evaluate_up_to_it(tmp_path):
    run_dir = tmp_path / "run"
    tiny_fit(
        SUM_MOD, run_dir, "--model.init_args.pos_mode=randomized", "--model.init_args.pos_range=200"
    )  # N 20, tests to 80: without pos_range its range would end there
    _, result = evaluate(run_dir, gen_factors=[8])  # 160 < 200
    assert "test_len160/acc_ood" in result["metrics"] and result["context_floor"] == {}
    with pytest.raises(BadInput, match=r"range of pos_range=200 .*at most factor 10 for this"):
        evaluate(run_dir, gen_factors=[16])


@pytest.mark.integration
def test_a_model_without_a_table_reads_any_length(tmp_path):
    run_dir = tmp_path / "run"
    tiny_fit(ECHO_RNN, run_dir)  # max_len 40
    assert main([str(run_dir), "--gen_factors", "8", "--data_seed", "3"]) == 0
    [path] = run_dir.glob("eval-*-seed3-x8.json")
    metrics = json.loads(path.read_text())["metrics"]
    assert {"test/acc", "test_len80/acc", "test_len80/acc_ood"} <= set(metrics)


def test_what_is_no_run_is_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "nope")]) == 2
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"lit_seq.evaluate: error: run={str(tmp_path / 'nope')!r} is neither a run folder nor "
        "a checkpoint file",
        f"lit_seq.evaluate: error: run={str(tmp_path)!r} holds no checkpoint in checkpoints/",
    ]


# What ``python -m lit_seq.positions RUN --checkpoint best|last`` (the command evaluate's
# positions output replaces, as of 8cc2fc3) printed for the tiny echo / rnn fit (6 steps; its
# best checkpoint is its last), and what it wrote with ``--json``
POSITIONS_8CC2FC3 = {
    "test": [0.5105],
    "test_len20": [0.506, 0.4886],
    "test_len40": [0.492875, 0.5072, 0.503, 0.4938],
}
TABLE_8CC2FC3 = """\
| test set | [0, 10) | [10, 20) | [20, 30) | [30, 40) |
|---|---|---|---|---|
| test | 0.510 |  |  |  |
| test_len20 | 0.506 | 0.489 |  |  |
| test_len40 | 0.493 | 0.507 | 0.503 | 0.494 |"""


@pytest.mark.integration
def test_positions_equal_what_the_positions_command_gave(tmp_path, capsys):
    run_dir = tmp_path / "run"
    tiny_fit(ECHO_RNN, run_dir)
    for which in ("best", "last"):
        _, result = evaluate(run_dir, which=which, tag=which)
        assert result["positions"] == POSITIONS_8CC2FC3, which
        assert result["checkpoint"].endswith("best-step=6.ckpt" if which == "best" else "last.ckpt")
    assert main([str(run_dir), "--checkpoint", "last", "--tag", "cli"]) == 0
    assert TABLE_8CC2FC3 in capsys.readouterr().out
    assert json.loads((run_dir / "eval-cli.json").read_text())["positions"] == POSITIONS_8CC2FC3


def test_best_is_the_recorded_checkpoint_else_the_latest_best_file(tmp_path):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for name in ("best-step=30.ckpt", "best-step=100.ckpt", "last.ckpt"):
        (folder / name).write_bytes(b"")
    assert find_run(tmp_path)[1].name == "best-step=100.ckpt"  # by step, not by text
    assert find_run(tmp_path, "last")[1].name == "last.ckpt"
    # the record names it by its path at training; a moved folder still finds it by name
    record = {"best_checkpoint": "/elsewhere/run/checkpoints/best-step=30.ckpt"}
    (tmp_path / METRICS_FILE).write_text(json.dumps(record))
    assert find_run(tmp_path)[1] == folder / "best-step=30.ckpt"
    for name in ("best-step=30.ckpt", "best-step=100.ckpt"):
        (folder / name).unlink()
    assert find_run(tmp_path)[1].name == "last.ckpt"  # no best one (validation off)


def test_the_positions_table_marks_spans_with_nothing_counted():
    table = positions_table({"test": [None, 0.5]}, span=10)
    assert table.splitlines()[-1] == "| test | - | 0.500 |"
