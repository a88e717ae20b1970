"""A grid ready to run: loaded, expanded, and every cell checked as a fit would build it.

The grid layer checks only what is about grids (keys, blocks, seeds: ``spec``); every value,
alone or with the others, is checked by ``lit_seq.fit.check_config``, the parser and
constructors of a real fit (data module and system, no Trainer, no data generated). So a
grid is refused before anything trains for exactly what a fit would refuse, in the same
words. A cell is built once for all its seeds, and once for all the cells of its shape
(``shapes``: those differing only in the optimizer's options, each checked by the
constructor's own check of them). Each run learns here the registry names of its task and
backbone, its cost (for the start order) and its digest (its identity in the output
folder's fingerprint).
"""

import dataclasses
import hashlib
import json
import time
from pathlib import Path

from lit_seq.ablate.axes import DATA_SEED_ARG, seed_args
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.packing import pack_key
from lit_seq.ablate.shapes import FREE, filled, split, template, typed
from lit_seq.ablate.spec import Run, config_file, expand, load_spec
from lit_seq.fit import BadInput, check_config
from lit_seq.systems.optimizers import check_optimizer_options

# not what a run computes: where it writes, how it is logged, and what the machine decides
# (precision and device follow the hardware), so a grid can resume on another machine
NOT_COMPUTED = ("config", "run_dir", "ckpt_path", "wandb", "checkpoint_every")
NOT_COMPUTED += ("seed_everything",)  # a run's seed enters its digest on its own
NOT_COMPUTED += ("compile",)  # how the step runs (--compile), as precision follows the device
NOT_COMPUTED_TRAINER = ("accelerator", "devices", "precision", "enable_model_summary")


# options added after run digests existed, at the default that keeps the old behaviour:
# left out of a digest as a None is, so a folder made before them stays resumable
ADDED_DEFAULTS = {"score_weights": "best", "scoring": "full"}
ADDED_MODEL_DEFAULTS = {"norm": "pre", "embed_scale": False, "forget_bias": 0.0}
ADDED_MODEL_DEFAULTS |= {"nonlinearity": "tanh"}
ADDED_MODEL_DEFAULTS |= {"input_embedding": True, "readout_relu": False}
ADDED_MODEL_DEFAULTS |= {"d_state": 16, "eigenvalues": "positive"}  # the mixers' (issue 40)
# Delétang et al.'s models, faithful to their code (issue 56)
ADDED_MODEL_DEFAULTS |= {"init": "torch", "embedding_bias": True, "single_bias": False}
ADDED_MODEL_DEFAULTS |= {"attention_bias": True, "inner_dropout": True, "ffn_activation": "gelu"}
ADDED_MODEL_DEFAULTS |= {"pos_from_end": False, "sincos_layout": "interleaved"}
# the memory RNNs' sizes (issue 56; mlp_layers_size defaults to None, which never counts)
ADDED_MODEL_DEFAULTS |= {"stack_cell_size": 8, "stack_size": 30, "n_stacks": 1}
ADDED_MODEL_DEFAULTS |= {"stack_states": 2, "stack_symbols": 2, "read_states": False}
ADDED_MODEL_DEFAULTS |= {"memory_cell_size": 8, "memory_size": 40}
ADDED_RANGE_DEFAULTS = {"dropout": False}  # range_eval's


def _without_added_defaults(content: dict) -> dict:
    """``content`` without the options of ``ADDED_DEFAULTS`` (top level),
    ``ADDED_MODEL_DEFAULTS`` (``model.init_args``) and ``ADDED_RANGE_DEFAULTS``
    (``range_eval``) that are at those defaults."""
    init_args = (content.get("model") or {}).get("init_args") or {}
    range_eval = content.get("range_eval") or {}
    for section, added in [
        (content, ADDED_DEFAULTS),
        (init_args, ADDED_MODEL_DEFAULTS),
        (range_eval, ADDED_RANGE_DEFAULTS),
    ]:
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


def config_content(config) -> dict:
    """A parsed fit configuration as what it computes: what :func:`config_digest` hashes."""
    content = _without_added_defaults(config.clone().as_dict())
    data = content.get("data", {}).get("init_args", {})
    if data.get("seed") is None:  # follows the run seed, which enters on its own; counted as
        data["seed"] = 0  # 0, the field's default before, so older folders' digests stay
    for key in (*NOT_COMPUTED, "wandb_tags"):
        content.pop(key, None)
    for key in NOT_COMPUTED_TRAINER:
        content.get("trainer", {}).pop(key, None)
    return content


def content_digest(content: dict) -> str:
    """The hash of a :func:`config_content` with its ``None`` entries left out."""
    return text_digest(json.dumps(content, sort_keys=True, default=str))


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def config_digest(config) -> str:
    """A hash of a parsed fit configuration's contents: what the run will compute.

    Options left at ``None`` do not count: an option a later version adds with a ``None``
    default (the old behaviour) leaves every digest, hence a resumable folder, as it was; so
    do the options of ``ADDED_DEFAULTS`` at their defaults.
    """
    return content_digest(_without_nulls(config_content(config)))


def cell_args(run: Run) -> list[str]:
    """The fit arguments of ``run``'s cell: those of any of its seeds, the driver's seed
    arguments (``axes.seed_args``, the last ones) left out; a grid's own data seed kept."""
    args = list(run.overrides)
    # two, run seed and data seed, unless the grid set the data seed: the run seed alone
    driver = 2 if args[-2:] == seed_args(run.seed, []) else 1
    return ["--config", str(config_file(run.config)), *args[:-driver]]


def _grids_data_seed(run: Run) -> bool:
    """Whether ``run``'s grid sets its data seed apart from the run seed (an axis)."""
    return any(a.startswith(DATA_SEED_ARG) for a in cell_args(run))


class _Cells:
    """The cells of one check: each built once, each shape built once (``shapes``), each
    base config read once; and a progress line each second once it takes more than one."""

    def __init__(self, where: str, total: int, built: dict) -> None:
        self.where, self.total, self.built = where, total, built
        # shape -> its first cell, its configuration's template, its optimizer's options
        self.shapes: dict[tuple, tuple[dict, str, dict]] = {}
        self.configs: dict[str, tuple[str, str]] = {}  # base config -> its path, its sha256
        self.start = self.said = time.monotonic()
        self.builds = 0

    def key(self, run: Run) -> tuple[str, ...]:
        """What a built cell depends on: its fit arguments and its base config's contents (so
        a cache of built cells never answers for a config edited since)."""
        if run.config not in self.configs:
            path = config_file(run.config)
            if not path.is_file():
                raise BadGrid(
                    f"{self.where}: block {run.block!r}: base config {run.config!r} does not exist"
                )
            self.configs[run.config] = (str(path), hashlib.sha256(path.read_bytes()).hexdigest())
        path, contents = self.configs[run.config]
        return ("--config", path, *cell_args(run)[2:], contents)

    def cell(self, run: Run, key: tuple[str, ...]) -> dict:
        """What ``run``'s cell builds: by a build of its own, or by its shape's first cell."""
        if key not in self.built:
            shape, values = split(list(key))
            first = self.shapes.get(shape)
            options = typed(values) if first is not None else None
            if options is None:
                self.built[key], text, built_options = self._build(run)
                self.shapes.setdefault(shape, (self.built[key], text, built_options))
            else:
                self.built[key] = self._like(run, first, options)
        return self.built[key]

    def _refuse(self, run: Run, err: Exception) -> BadGrid:
        return BadGrid(f"{self.where}: block {run.block!r}: cell {run.cell}: {err}")

    def _build(self, run: Run) -> tuple[dict, str, dict]:
        """The cell built as a fit builds it; with its configuration's template and its
        optimizer's options (:mod:`lit_seq.ablate.shapes`)."""
        try:
            cli = check_config([*cell_args(run), f"--seed_everything={run.seed}"])
        except BadInput as err:
            raise self._refuse(run, err) from None
        self.builds += 1
        hp, steps = cli.model.hparams, cli.config.trainer.max_steps
        cost = max(1, steps or 1) * max(1, hp.get("n_layers", 1))
        content = _without_nulls(config_content(cli.config))  # the digest's, as below
        cell = {
            "task": cli.datamodule.name,
            "arch": cli.model.arch_name,  # a plug-in backbone's own name
            "cost": float(cost),
            "digest": content_digest(content),
            "pack_key": pack_key(cli),
            # a grid's own data seed (an axis), else None: the run seed decides the data
            "data_seed": cli.config.data.init_args.seed if _grids_data_seed(run) else None,
            "val_metrics": [f"val/{m}" for m in cli.model.build_metrics()],
            "main": f"val/{cli.model.main_metric}",
        }
        return cell, template(content), {name: hp[name] for name in FREE}

    def _like(self, run: Run, first: tuple[dict, str, dict], values: dict) -> dict:
        """A cell of the shape of ``first`` with the optimizer's ``values``: checked by the
        system's own check of them, digested with them."""
        cell, text, options = first
        options = {**options, **values}
        try:
            check_optimizer_options(**options)
        except ValueError as err:
            raise self._refuse(run, err) from None
        return {**cell, "digest": text_digest(filled(text, options))}

    def progress(self, done: int) -> None:
        now = time.monotonic()
        if now - self.said >= 1.0 and done < self.total:
            self.said = now
            print(
                f"{self.where}: checked {done:,} of {self.total:,} runs ({self.builds} built, "
                f"the others by their cell or shape), {now - self.start:.0f} s",
                flush=True,
            )


def check_cells(runs: list[Run], where: str, built: dict | None = None) -> list[Run]:
    """``runs`` with ``task``, ``arch``, ``cost`` and ``digest`` set; BadGrid naming the first
    cell fit refuses. The cost, optimizer steps x layers, orders the starts (``order``); the
    digest, of the cell's resolved configuration and the seed, is the run's identity on resume
    (``folder.check_out_dir``): an edited base config changes it, a moved checkout does not.

    Each distinct cell is checked once (its seeds share it), and each shape is built once
    (``lit_seq.ablate.shapes``: cells that differ only in the optimizer's options are
    checked by the system's own check of those). ``built``: the cells checked so far, filled
    in here; grids checked together that pass the same dict check a shared cell once.
    """
    cells = _Cells(where, len(runs), {} if built is None else built)
    checked = []
    for done, run in enumerate(runs):
        cell = dict(cells.cell(run, cells.key(run)))
        cells.progress(done)
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
        if (data_seed := cell.pop("data_seed")) is not None:  # the grid's own, not the run's
            identity += f":data seed {data_seed}"
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
