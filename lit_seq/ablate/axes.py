"""Grid keys: the short axis names and the config paths they stand for.

A grid may vary (or fix, under ``overrides:``) any short key of :data:`AXES` or any dotted
config path such as ``model.init_args.dropout`` or ``data.init_args.gen_factors``. Only the
key is checked here; whether a value is allowed, alone or together with the others, is
checked by building every cell with ``lit_seq.fit.check_config`` (``spec.load_grid``), the
same parser and constructors a fit uses.
"""

import re

from lit_seq.ablate.common import BadGrid

AXES: dict[str, str] = {
    # ``task`` picks the base config configs/<task>/<arch>.yaml instead of setting a path
    "task": "",
    "arch": "model.init_args.arch",
    "pos_mode": "model.init_args.pos_mode",
    "readout": "model.init_args.readout",
    "residual": "model.init_args.residual",
    "d_model": "model.init_args.d_model",
    "n_layers": "model.init_args.n_layers",
    "n_heads": "model.init_args.n_heads",
    "dropout": "model.init_args.dropout",
    "lr": "model.init_args.lr",
    "weight_decay": "model.init_args.weight_decay",
    "warmup_steps": "model.init_args.warmup_steps",
    "steps": "trainer.max_steps",
    "val_every": "trainer.val_check_interval",
    "batch_size": "data.init_args.batch_size",
    # the seed design (docs/grids.md): each follows the run's seed unless a grid sets it
    "data_seed": "data.init_args.seed",
    "init_seed": "init_seed",
}

ROOTS = ("model", "data", "trainer", "target", "range_eval")
# set by the driver itself: a grid that sets them would silently fight it
RESERVED = {"seed_everything": "seeds come from the grid's `seeds:` list"}
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def config_path(key: str, where: str) -> str:
    """The full config path of ``key`` (a short key or a dotted path); BadGrid if unknown."""
    if key in AXES:
        return AXES[key]
    if key in RESERVED:
        raise BadGrid(f"{where}: {key!r} cannot be set by a grid: {RESERVED[key]}")
    if not _DOTTED.match(key) or key.split(".")[0] not in ROOTS:
        raise BadGrid(
            f"{where}: unknown key {key!r}; use one of {sorted(AXES)} or a dotted config path "
            f"under {list(ROOTS)} (e.g. model.init_args.dropout)"
        )
    root, first, *rest = key.split(".")
    # LightningCLI accepts model.X for model.init_args.X; store one spelling only
    if root in ("model", "data") and first not in ("init_args", "class_path"):
        key = ".".join([root, "init_args", first, *rest])
    if key in RESERVED:
        raise BadGrid(f"{where}: {key!r} cannot be set by a grid: {RESERVED[key]}")
    return key


DATA_SEED_ARG = "--data.init_args.seed="


def seed_args(seed: int, args: list[str]) -> list[str]:
    """The driver's arguments for a run's ``seed``, after ``args`` (the run's others): the run
    seed, and the data seed with it (the blocked design, docs/grids.md, "The seed design")
    unless ``args`` set the data seed (a ``data_seed`` axis or override)."""
    data_seed_set = any(a.startswith(DATA_SEED_ARG) for a in args)
    return [f"--seed_everything={seed}", *([] if data_seed_set else [f"{DATA_SEED_ARG}{seed}"])]
