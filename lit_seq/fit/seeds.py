"""A fit's two seeds: the data seed and the initialisation seed, each defaulting to the run's.

Delétang et al.'s training has ``seed`` (data and training) and ``model_init_seed``; a fit
here has ``--seed_everything`` (Lightning's: every global RNG, so the initial weights and
any randomness in training, such as randomized positions), ``--data.seed`` (the data module's:
its examples and batch order, drawn from private generators, never the global RNG) and
``--init_seed`` (the initial weights alone). Left unset, both follow ``--seed_everything``:
the blocked design of a grid, where at one seed every cell of a task trains on the same data
and cells of equal shapes start from the same weights (docs/grids.md, "The seed design").
Set apart, one changes and the other does not:

    python -m lit_seq.fit --config configs/parity_check/lstm.yaml --seed_everything 3 \\
        --init_seed 7       # seed 3's data and training, weights drawn from seed 7
"""

from __future__ import annotations

import contextlib

import torch


def run_seed(config) -> int | None:
    """The run's ``seed_everything`` as an int; None when the fit did not seed."""
    seed = config.get("seed_everything")
    return None if isinstance(seed, bool) or seed is None else int(seed)


@contextlib.contextmanager
def initial_weights_rng(init_seed: int | None, seed: int | None):
    """Within it, the global torch RNG draws from ``init_seed``; after it, it is back where it
    was, so training draws what the run's seed gives. Nothing changes when ``init_seed`` is
    None or equals the run's seed: the default path is today's, draw for draw."""
    if init_seed is None or init_seed == seed:
        yield
        return
    with torch.random.fork_rng(devices=[]):  # the weights are built on the CPU
        torch.manual_seed(init_seed)
        yield


def add_init_seed(parser) -> None:
    """The fit's ``--init_seed`` option."""
    parser.add_argument(
        "--init_seed",
        type=int | None,
        default=None,
        help="Seed of the model's initial weights alone (default: --seed_everything). The "
        "data follow --data.seed (default: --seed_everything too); the rest --seed_everything.",
    )


def resolve_seeds(config, datamodule) -> dict[str, int | None]:
    """Give a data module whose ``seed`` was left unset the run's seed; return the seeds the
    fit runs with, as its record, header and W&B config name them."""
    seed = run_seed(config)
    if config.data.init_args.get("seed") is None and seed is not None:
        datamodule.seed = seed
    init = config.get("init_seed")
    return {"data_seed": datamodule.seed, "init_seed": seed if init is None else int(init)}
