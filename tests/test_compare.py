"""``python -m lit_seq.compare`` names a cell by any words that pick only it, and lists the
cells the words match when they pick several (records only, no training)."""

import pytest

from lit_seq.compare import main
from lit_seq.record import RunRecord, write_record


@pytest.fixture
def grid(tmp_path):
    """A block crossing pos_mode x residual, two seeds, and a block of its own (rnn)."""
    records = []
    for pos_mode in ("sinusoidal", "none"):
        for residual in ("true", "false"):
            axes = {"pos_mode": pos_mode, "model.dropout": 0.1, "residual": residual}
            for seed in (0, 1):
                acc = (0.9 if pos_mode == "sinusoidal" else 0.6) + 0.01 * seed
                records.append(("echo_pos", axes, seed, acc))
    records += [("recurrent", {"arch": "rnn"}, seed, 0.8) for seed in (0, 1)]
    for index, (block, axes, seed, acc) in enumerate(records):
        cell = "__".join([block, *(f"{k}={v}" for k, v in axes.items())])
        record = RunRecord(
            run_id=f"{cell}__seed={seed}",
            block=block,
            cell=cell,
            task="echo",
            axes=axes,
            axis_order=list(axes),
            seed=seed,
            index=index,
            main_metric="acc",
            status="ok",
            metrics={"test/acc": acc},
        )
        write_record(tmp_path, record)
    return tmp_path


def test_any_words_that_name_one_cell_each_side_compare(grid, capsys):
    # values alone, axis=value, a dotted axis by its last part, the block name
    assert main([str(grid), "sinusoidal residual=true", "none true dropout=0.1"]) == 0
    out = capsys.readouterr().out
    assert "a = echo_pos__pos_mode=sinusoidal__model.dropout=0.1__residual=true" in out
    assert "b = echo_pos__pos_mode=none__model.dropout=0.1__residual=true" in out
    assert main([str(grid), "recurrent", "sinusoidal false"]) == 0


def test_words_that_match_several_cells_list_them(grid, capsys):
    assert main([str(grid), "none", "recurrent"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "lit_seq.compare: error: 'none' matches 2 cells; add a value to pick one:",
        "  echo_pos__pos_mode=none__model.dropout=0.1__residual=true",
        "  echo_pos__pos_mode=none__model.dropout=0.1__residual=false",
    ]


def test_words_that_match_no_cell_say_what_a_word_may_be(grid, capsys):
    assert main([str(grid), "pos_mode=rotary", "recurrent"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "lit_seq.compare: error: 'pos_mode=rotary' matches no cell; give a cell id, or words "
        "that each are its block name, an axis value or axis=value (a dotted axis by its last "
        "part). The cells:"
    )
    assert "  recurrent__arch=rnn" in err and len(err) == 6


def test_fits_n_compares_the_cells_success_rates_seed_by_seed(tmp_path, capsys):
    from tests.helpers import arch_record

    for arch, scores in {"transformer": [1.0, 1.0, 0.27], "mamba": [0.9, 0.95, 0.85]}.items():
        for seed, acc in enumerate(scores):
            record = arch_record("recall", "associative_recall", arch, seed, {"test/acc": acc}, 0)
            write_record(tmp_path, record)
    assert main([str(tmp_path), "mamba", "transformer", "--metric", "fits_n"]) == 0
    out = capsys.readouterr().out
    assert "fits_n: b - a over 3 shared seeds" in out
    assert "mean difference +0.6667" in out  # 2 of 3 seeds fit N against none
