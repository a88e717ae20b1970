"""A grid ready to run: loaded, expanded, and every cell built once, as a fit would build it.

The grid layer checks only what is about grids (keys, blocks, seeds: ``spec``); every value,
alone or with the others, is checked by ``lit_seq.fit.check_config``, the parser and
constructors of a real fit (data module and system, no Trainer, no data generated). So a
grid is refused before anything trains for exactly what a fit would refuse, in the same
words. Each run learns here the registry names of its task and backbone, its cost (for the
start order) and its digest (its identity in the output folder's fingerprint).
"""

import dataclasses
import hashlib
import json
from pathlib import Path

from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.packing import pack_key
from lit_seq.ablate.spec import Run, config_file, expand, load_spec
from lit_seq.fit import BadInput, check_config

SEED_ARGS = ("--seed_everything=", "--data.init_args.seed=")  # what differs between seeds
# not what a run computes: where it writes, how it is logged, and what the machine decides
# (precision and device follow the hardware), so a grid can resume on another machine
NOT_COMPUTED = ("config", "run_dir", "ckpt_path", "wandb", "wandb_project", "wandb_entity")
NOT_COMPUTED += ("wandb_group",)
NOT_COMPUTED += ("wandb_save_requirements", "wandb_config", "wandb_log_model", "checkpoint_every")
NOT_COMPUTED += ("seed_everything",)  # a run's seed enters its digest on its own
NOT_COMPUTED_TRAINER = ("accelerator", "devices", "precision", "enable_model_summary")


# options added after run digests existed, at the default that keeps the old behaviour:
# left out of a digest as a None is, so a folder made before them stays resumable
ADDED_DEFAULTS = {"score_weights": "best"}
ADDED_MODEL_DEFAULTS = {"norm": "pre", "embed_scale": False, "forget_bias": 0.0}
ADDED_MODEL_DEFAULTS |= {"input_embedding": True, "readout_relu": False}


def _without_added_defaults(content: dict) -> dict:
    """``content`` without the options of ``ADDED_DEFAULTS`` (top level) and
    ``ADDED_MODEL_DEFAULTS`` (``model.init_args``) that are at those defaults."""
    init_args = (content.get("model") or {}).get("init_args") or {}
    for section, added in [(content, ADDED_DEFAULTS), (init_args, ADDED_MODEL_DEFAULTS)]:
        for key, default in added.items():
            if key in section and section[key] == default:
                del section[key]
    return content


def _without_nulls(value):
    """``value`` with every ``None`` entry of its dicts left out, at any depth."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def config_digest(config) -> str:
    """A hash of a parsed fit configuration's contents: what the run will compute.

    Options left at ``None`` do not count: an option a later version adds with a ``None``
    default (the old behaviour) leaves every digest, hence a resumable folder, as it was; so
    do the options of ``ADDED_DEFAULTS`` at their defaults.
    """
    content = _without_added_defaults(config.clone().as_dict())
    for key in (*NOT_COMPUTED, "wandb_tags"):
        content.pop(key, None)
    for key in NOT_COMPUTED_TRAINER:
        content.get("trainer", {}).pop(key, None)
    text = json.dumps(_without_nulls(content), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cell_args(run: Run) -> list[str]:
    """The fit arguments of ``run``'s cell: those of any of its seeds, seeds left out."""
    kept = [a for a in run.overrides if not a.startswith(SEED_ARGS)]
    return ["--config", str(config_file(run.config)), *kept]


def _cell_key(run: Run) -> tuple[str, ...]:
    """What a built cell depends on: its fit arguments and its base config's contents (so a
    cache of built cells never answers for a config edited since)."""
    contents = hashlib.sha256(config_file(run.config).read_bytes()).hexdigest()
    return (*cell_args(run), contents)


def check_cells(runs: list[Run], where: str, built: dict | None = None) -> list[Run]:
    """``runs`` with ``task``, ``arch``, ``cost`` and ``digest`` set; BadGrid naming the first
    cell fit refuses. The cost, optimizer steps x layers, orders the starts (``order``); the
    digest, of the cell's resolved configuration and the seed, is the run's identity on resume
    (``folder.check_out_dir``): an edited base config changes it, a moved checkout does not.

    Each distinct cell is built once (its seeds share it). ``built``: the cells built so far,
    filled in here; grids checked together that pass the same dict build a shared cell once.
    """
    built = {} if built is None else built
    checked = []
    for run in runs:
        if not config_file(run.config).is_file():
            raise BadGrid(
                f"{where}: block {run.block!r}: base config {run.config!r} does not exist"
            )
        key = _cell_key(run)
        if key not in built:
            try:
                cli = check_config([*cell_args(run), f"--seed_everything={run.seed}"])
            except BadInput as err:
                raise BadGrid(f"{where}: block {run.block!r}: cell {run.cell}: {err}") from None
            hp, steps = cli.model.hparams, cli.config.trainer.max_steps
            cost = max(1, steps or 1) * max(1, hp.get("n_layers", 1))
            arch = cli.model.arch_name  # a plug-in backbone's own name
            built[key] = {"task": cli.datamodule.name, "arch": arch, "cost": float(cost)}
            built[key]["digest"] = config_digest(cli.config)
            built[key]["pack_key"] = pack_key(cli)
            built[key]["val_metrics"] = [f"val/{m}" for m in cli.model.build_metrics()]
            built[key]["main"] = f"val/{cli.model.main_metric}"
        cell = dict(built[key])
        val_metrics, main = cell.pop("val_metrics"), cell.pop("main")
        if run.select_axis:
            metric = run.select_metric or main
            if metric not in val_metrics:
                raise BadGrid(
                    f"{where}: block {run.block!r}: select.metric={metric!r} is not one of "
                    f"{val_metrics}"
                )
            cell["select_metric"] = metric
        identity = f"{cell['digest']}:{run.seed}"
        if run.select_from:  # what it computes: the value selected among these, so
            identity += f":select {run.select_axis} from {list(run.select_from)} by "
            identity += (
                f"{cell.get('select_metric', run.select_metric)} on {list(run.select_seeds)}"
            )
            if run.select_extend:  # or among the values added past its ends (extension)
                identity += f" extended up to {run.select_extend} steps"
        digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
        checked.append(dataclasses.replace(run, **{**cell, "digest": digest}))
    return checked


def load_grid(path: Path, built: dict | None = None) -> tuple[dict, list[Run]]:
    """Load, validate and expand a grid file, then check each distinct cell by building it
    (``built``: as for :func:`check_cells`)."""
    spec = load_spec(path)
    return spec, check_cells(expand(spec), Path(path).name, built)
