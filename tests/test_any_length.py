"""Lengths past training: which encodings read any length, and ``max_len`` given or linked."""

import subprocess
import sys

import pytest
import torch

from lit_seq.fit import check_config
from lit_seq.models import POS_MODES, build_positional, position_limit
from lit_seq.systems import SequenceClassification
from tests.helpers import REPO

SIGNAL = REPO / "configs" / "signal" / "transformer.yaml"  # test sets up to 256


def test_sinusoidal_rows_past_the_table_are_the_rows_of_a_longer_table():
    short = build_positional("sinusoidal", d_model=7, max_len=40)  # odd d: one cosine fewer
    long = build_positional("sinusoidal", d_model=7, max_len=400)
    x = torch.randn(2, 320, 7)
    assert torch.equal(short(x), long(x))  # bit for bit, not merely close
    assert torch.equal(short(x[:, :5], offset=300), long(x[:, :5], offset=300))
    picked = torch.tensor([3, 39, 40, 399])
    assert torch.equal(short(x[:, :4], positions=picked), long(x[:, :4], positions=picked))


@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_only_learnable_and_randomized_have_a_length_limit(pos_mode):
    enc = build_positional(pos_mode, d_model=8, max_len=8, n_heads=2).eval()
    limited = pos_mode in ("learnable", "randomized")
    assert position_limit(enc) == (8 if limited else None)
    x = torch.randn(1, 9, 8)
    if not limited:
        return
    with pytest.raises(ValueError, match=rf"length 9 exceeds pos_mode='{pos_mode}''s .*max_len=8"):
        enc(x) if pos_mode == "learnable" else enc.positions(9)


@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_a_transformer_reads_any_length_unless_its_encoding_has_a_limit(pos_mode):
    system = SequenceClassification(
        in_features=1, out_features=3, max_len=16, d_model=8, n_layers=1, pos_mode=pos_mode
    ).eval()
    assert system.length_limit == (16 if pos_mode in ("learnable", "randomized") else None)
    if system.length_limit is None:
        with torch.no_grad():
            assert system.net(torch.randn(2, 128, 1)).shape == (2, 3)


def test_a_given_max_len_is_kept_and_one_left_out_follows_the_data():
    base = ["--config", str(SIGNAL), "--model.init_args.pos_mode=learnable", "--wandb=off"]
    given = check_config([*base, "--model.init_args.max_len=400"]).model
    assert given.hparams.max_len == 400 and given.net.backbone.pos.pe.shape[0] == 400
    linked = check_config(base).model
    assert linked.hparams.max_len == 256 and linked.net.backbone.pos.pe.shape[0] == 256
    # the rows both tables have start the same: a longer table changes no initial weight
    torch.testing.assert_close(given.net.backbone.pos.pe[:256], linked.net.backbone.pos.pe)


def test_a_checkpoint_of_before_data_max_len_builds_its_own_table():
    # hyperparameters saved before data_max_len existed: max_len holds the linked value
    old = SequenceClassification(in_features=1, out_features=3, max_len=40, pos_mode="learnable")
    assert old.hparams.max_len == 40 and old.net.backbone.pos.pe.shape[0] == 40
    again = SequenceClassification(**{k: v for k, v in old.hparams.items()})  # what evaluate does
    again.load_state_dict(old.state_dict())


@pytest.mark.integration  # spawns the command line
def test_a_max_len_shorter_than_the_data_is_refused_in_one_line(tmp_path):
    command = [sys.executable, "-m", "lit_seq.fit", "--config", str(SIGNAL)]
    command += ["--model.init_args.max_len", "100", "--run_dir", str(tmp_path / "run")]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "lit_seq.fit: error: max_len=100 is shorter than the data's longest sequence, 256 (its "
        "longest test set with any appended output); give max_len >= 256, or leave it out to "
        "follow the data"
    )
    assert not (tmp_path / "run").exists()  # refused before a run folder is made


# ---- randomized positions from a fixed range (pos_range) ------------------------------------

ECHO = REPO / "configs" / "echo" / "transformer.yaml"  # N 10


def _randomized_echo(*args: str):
    base = ["--config", str(ECHO), "--model.pos_mode=randomized", "--model.dropout=0.0"]
    return check_config([*base, *args]).model


def _training_draws(system, seed: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The positions of three training forwards from ``seed``, and a training forward."""
    system.train()
    torch.manual_seed(seed)
    draws = [system.net.backbone.pos.positions(10) for _ in range(3)]
    torch.manual_seed(seed)
    return draws, system.net(torch.ones(2, 10, 1))


def test_a_fixed_pos_range_trains_the_same_whatever_the_test_lengths():
    short = _randomized_echo("--data.gen_factors=[2]", "--model.pos_range=64")  # tests to 20
    long = _randomized_echo("--data.gen_factors=[2, 4]", "--model.pos_range=64")  # to 40
    assert (short.hparams.max_len, long.hparams.max_len) == (20, 40)
    (a, out_a), (b, out_b) = _training_draws(short, 3), _training_draws(long, 3)
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))
    assert torch.equal(out_a, out_b)  # the same training forward, positions and weights
    short.eval(), long.eval()
    assert torch.equal(short.net.backbone.pos.positions(10), long.net.backbone.pos.positions(10))
    # without it the range is the longest test length, and the draws move with it
    moved = _training_draws(_randomized_echo("--data.gen_factors=[2]"), 3)[0]
    assert not all(torch.equal(p, q) for p, q in zip(moved, a, strict=True))


def test_pos_range_positions_lie_in_it_and_use_it():
    enc = build_positional("randomized", d_model=8, max_len=12, pos_range=64).train()
    torch.manual_seed(0)
    draws = torch.stack([enc.positions(12) for _ in range(50)])  # (50, 12)
    assert int(draws.min()) >= 0 and int(draws.max()) < 64
    assert int(draws.max()) >= 12  # past max_len: the range is pos_range's
    assert position_limit(enc) == 64


def test_pos_range_errors_are_one_line():
    enc = build_positional("randomized", d_model=8, max_len=12, pos_range=16)
    assert torch.equal(enc.positions(16).sort().values, torch.arange(16))  # T = L: all of them
    with pytest.raises(ValueError) as err:
        enc.positions(17)
    assert str(err.value) == (
        "sequence length 17 exceeds pos_mode='randomized''s range of pos_range=16 positions "
        "(it draws them from [0, 16)); raise pos_range to at least 17 (before training: its "
        "range is what it trained on)"
    )
    with pytest.raises(ValueError, match=r"^pos_range=8 is shorter than .* max_len=12; give "):
        build_positional("randomized", d_model=8, max_len=12, pos_range=8)
    with pytest.raises(ValueError, match=r"pos_range must be an integer >= 1 \(or null"):
        SequenceClassification(in_features=1, out_features=3, pos_range=0)
    with pytest.raises(ValueError, match=r"^pos_range=64 only applies to arch='transformer'"):
        SequenceClassification(in_features=1, out_features=3, arch="lstm", pos_range=64)


def test_a_system_reads_up_to_its_pos_range_less_the_positions_it_adds():
    def system(**options):
        return SequenceClassification(
            in_features=1, out_features=3, max_len=16, d_model=8, n_layers=1, **options
        )

    assert system(pos_mode="randomized", pos_range=64).length_limit == 64
    assert system(pos_mode="randomized", pos_range=64, readout="cls").length_limit == 64 - 1
    assert system(pos_mode="randomized", readout="cls").length_limit == 16  # max_len's, as before
    assert system(pos_mode="sinusoidal", pos_range=64).length_limit is None  # only randomized
