"""The seed design: ``--data.seed`` and ``--init_seed`` each change their half alone, both
follow ``--seed_everything`` by default, and the default path draws what it drew before."""

import hashlib

import pytest
import torch
import yaml

from lit_seq.ablate.grid import cell_args, check_cells
from lit_seq.ablate.spec import expand, parse_spec
from lit_seq.fit import check_config
from lit_seq.fit.header import fit_header

SMALL = ["--data.init_args.n_train=64", "--data.init_args.n_val=8", "--data.init_args.n_test=8"]
CONFIG = ["--config", "configs/parity_check/rnn.yaml", *SMALL]


def _digest(tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _built(*args: str):
    """The system ``args`` build, its initial weights, every training batch of its first
    epoch (one per curriculum length: 20) and its validation set."""
    cli = check_config([*CONFIG, *args])
    dm = cli.datamodule
    dm.setup("fit")
    batches = [_digest(b.values()) for b in dm.train_dataloader()]
    val = _digest(dm.val_set.tensors.values())
    return cli, [p.detach().clone() for p in cli.model.parameters()], batches, val


# computed at d285fa8, before the data and init seeds were options: what a grid run at seed
# 3 (--seed_everything=3 --data.init_args.seed=3) and a default fit at seed 0 drew
BEFORE = {
    ("--seed_everything=3", "--data.init_args.seed=3"): ("2ef9c076f03ce8d8", "59bd26ae3b4af4e7"),
    ("--seed_everything=0",): ("f3bed01185e5a548", "fe5c3add19e5292f"),
}


@pytest.mark.parametrize("args", list(BEFORE))
def test_the_default_path_draws_the_same_weights_and_first_batch_as_before(args):
    cli = check_config([*CONFIG, *args])
    cli.datamodule.setup("fit")
    first = next(iter(cli.datamodule.train_dataloader()))
    assert (_digest(cli.model.parameters()), _digest(first.values())) == BEFORE[args]


def test_the_init_seed_changes_the_weights_and_not_one_batch():
    cli, weights, batches, val = _built("--seed_everything=3")
    other, other_weights, other_batches, other_val = _built("--seed_everything=3", "--init_seed=7")
    assert not all(torch.equal(a, b) for a, b in zip(weights, other_weights, strict=True))
    assert batches == other_batches and val == other_val and len(batches) == 20
    assert (cli.seeds, other.seeds) == (
        {"data_seed": 3, "init_seed": 3},
        {"data_seed": 3, "init_seed": 7},
    )
    # init seed 7 at run seed 3 draws the weights run seed 7 draws
    _, seven, _, _ = _built("--seed_everything=7")
    assert all(torch.equal(a, b) for a, b in zip(other_weights, seven, strict=True))


def test_the_data_seed_changes_the_data_and_not_the_weights():
    _, weights, batches, _ = _built("--seed_everything=3")
    cli, other_weights, other_batches, _ = _built("--seed_everything=3", "--data.seed=7")
    assert all(torch.equal(a, b) for a, b in zip(weights, other_weights, strict=True))
    assert batches != other_batches
    assert cli.datamodule.seed == 7 and cli.seeds == {"data_seed": 7, "init_seed": 3}


def test_both_seeds_follow_the_run_seed_and_an_equal_init_seed_is_the_default():
    cli, weights, batches, _ = _built("--seed_everything=5")
    same, same_weights, same_batches, _ = _built("--seed_everything=5", "--init_seed=5")
    assert cli.datamodule.seed == 5 and cli.seeds == same.seeds
    assert all(torch.equal(a, b) for a, b in zip(weights, same_weights, strict=True))
    assert batches == same_batches


def test_a_negative_init_seed_is_refused_in_one_line():
    with pytest.raises(Exception, match="init_seed"):
        check_config([*CONFIG, "--init_seed=-1"])


def test_the_header_names_both_seeds():
    cli = check_config([*CONFIG, "--seed_everything=3", "--init_seed=7"])

    class Trainer:  # what fit_header reads of a Trainer
        strategy = type("S", (), {"root_device": torch.device("cpu")})()
        precision, max_steps = "32-true", 10

    lines = fit_header("runs/x", None, cli.model, cli.datamodule, Trainer(), "off", seeds=cli.seeds)
    assert "seeds: data 3, initial weights 7" in lines


GRID = """
name: g
seeds: [0, 1]
overrides: {steps: 5}
blocks:
- {name: b, config: configs/parity_check/rnn.yaml}
- {name: d, config: configs/parity_check/rnn.yaml, axes: {data_seed: [0]}}
- {name: i, config: configs/parity_check/rnn.yaml, axes: {init_seed: [0]}}
"""


def test_a_grid_axis_sets_a_seed_and_the_seed_axis_stays_the_run_seed():
    runs = check_cells(expand(parse_spec(yaml.safe_load(GRID))), "g")
    by_id = {r.run_id: r for r in runs}
    # the blocked default: data seed = run seed, given by the driver after every other
    assert by_id["b__seed=1"].overrides[-2:] == ("--seed_everything=1", "--data.init_args.seed=1")
    # a data_seed axis: the driver gives the run seed alone; the cell keeps its data seed
    data = by_id["d__data_seed=0__seed=1"]
    assert data.overrides[-2:] == ("--data.init_args.seed=0", "--seed_everything=1")
    assert "--data.init_args.seed=0" in cell_args(data)
    assert "--init_seed=0" in by_id["i__init_seed=0__seed=1"].overrides
    # each computes something else at seed 1, so each has its own identity
    at_one = [
        by_id[i].digest for i in ("b__seed=1", "d__data_seed=0__seed=1", "i__init_seed=0__seed=1")
    ]
    assert len(set(at_one)) == 3
