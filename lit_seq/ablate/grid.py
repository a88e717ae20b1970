"""A grid ready to run: loaded, expanded, and every cell built once, as a fit would build it.

The grid layer checks only what is about grids (keys, blocks, seeds: ``spec``); every value,
alone or with the others, is checked by ``lit_seq.fit.check_config``, the parser and
constructors of a real fit (data module and system, no Trainer, no data generated). So a
grid is refused before anything trains for exactly what a fit would refuse, in the same
words, and each run learns the registry names of its task and backbone here.
"""

import dataclasses
from pathlib import Path

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.spec import Run, config_file, expand, load_spec
from lit_seq.fit import BadInput, check_config

SEED_ARGS = ("--seed_everything=", "--data.init_args.seed=")  # what differs between seeds


def cell_args(run: Run) -> list[str]:
    """The fit arguments of ``run``'s cell: those of any of its seeds, seeds left out."""
    kept = [a for a in run.overrides if not a.startswith(SEED_ARGS)]
    return ["--config", str(config_file(run.config)), *kept]


def check_cells(runs: list[Run], where: str) -> list[Run]:
    """``runs`` with ``task``, ``arch`` and ``cost`` set; BadGrid naming the first cell fit
    refuses. The cost, optimizer steps x layers, orders the starts (``order``)."""
    built: dict[tuple[str, ...], dict] = {}
    checked = []
    for run in runs:
        key = tuple(cell_args(run))
        if not config_file(run.config).is_file():
            raise BadGrid(
                f"{where}: block {run.block!r}: base config {run.config!r} does not exist"
            )
        if key not in built:
            try:
                cli = check_config([*key, f"--seed_everything={run.seed}"])
            except BadInput as err:
                raise BadGrid(f"{where}: block {run.block!r}: cell {run.cell}: {err}") from None
            hp, steps = cli.model.hparams, cli.config.trainer.max_steps
            cost = max(1, steps or 1) * max(1, hp.get("n_layers", 1))
            built[key] = {"task": cli.datamodule.name, "arch": hp.arch, "cost": float(cost)}
        checked.append(dataclasses.replace(run, **built[key]))
    return checked


def load_grid(path: Path) -> tuple[dict, list[Run]]:
    """Load, validate and expand a grid file, then check each distinct cell by building it."""
    spec = load_spec(path)
    return spec, check_cells(expand(spec), Path(path).name)
