"""Defaults fair to every cell: what a model starts from, what a test set holds."""

import torch

from lit_seq.data import EchoData, ParitySumData
from lit_seq.data.start_marker import add_start_marker
from lit_seq.fit import check_config
from tests.helpers import REPO

ECHO = REPO / "configs" / "echo" / "transformer.yaml"
SIGNAL = REPO / "configs" / "signal" / "transformer.yaml"


def _initial_state(config, *args: str) -> dict[str, torch.Tensor]:
    return check_config(["--config", str(config), *args]).model.state_dict()


def test_initial_weights_do_not_depend_on_the_test_lengths():
    for config in (ECHO, SIGNAL):
        for pos_mode in ("learnable", "sinusoidal"):
            short = _initial_state(config, f"--model.pos_mode={pos_mode}", "--data.gen_factors=[2]")
            long = _initial_state(
                config, f"--model.pos_mode={pos_mode}", "--data.gen_factors=[2, 4, 8]"
            )
            assert short.keys() == long.keys()
            for key, value in short.items():
                other = long[key]
                if value.shape != other.shape:  # a positional table: the shared rows
                    other = other[: value.shape[0]]
                assert torch.equal(value, other), (config.name, pos_mode, key)


def test_start_marker_worked_example_and_sizes():
    x = torch.tensor([[[1.0], [0.0], [1.0]]])
    assert add_start_marker(x).tolist() == [[[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]]]
    echo = EchoData(length=6, n_train=4, n_val=4, n_test=4, start_marker=True)
    echo.setup()
    assert echo.in_features == 2 and echo.train_set.tensors["x"].shape == (4, 6, 2)
    assert echo.train_set.tensors["x"][:, :, 1].tolist() == [[1, 0, 0, 0, 0, 0]] * 4
    assert ParitySumData(start_marker=True).in_features == 3
    assert EchoData().in_features == 1  # off by default
    # the CLI links the wider input into the model
    cli = check_config(["--config", str(ECHO), "--data.start_marker=true"])
    assert cli.model.net.embed.in_features == 2


def _rows(split) -> set[tuple]:
    return {tuple(row) for row in split.tensors["x"][:, :, 0].long().tolist()}


def test_echo_training_length_splits_are_disjoint_and_the_rest_independent():
    echo = EchoData(seed=3)  # length 10: 1024 sequences in all
    echo.setup()
    train, val, test = _rows(echo.train_set), _rows(echo.val_set), _rows(echo.test_sets[0])
    assert not train & test and not train & val and not val & test
    assert len(train) > 600 and len(test) > 100  # most of the sequences of each class appear
    old = EchoData(seed=3, holdout=False)
    old.setup()
    overlap = len(_rows(old.test_sets[0]) & _rows(old.train_set)) / len(_rows(old.test_sets[0]))
    assert overlap > 0.9  # the problem the hold-out solves
    # the longer test sets are the same independent draws either way
    assert torch.equal(echo.test_sets[1].tensors["x"], old.test_sets[1].tensors["x"])
