"""Grid specs: load and validate ``ablations/*.yaml``, expand a grid into its runs.

A grid is a name, seeds, shared overrides and a list of blocks; each block is a base config
plus axes, so an axis that only makes sense for one model (``readout`` for the classifier,
``pos_mode`` for the transformer) lives in its own block::

    name: readout
    seeds: [0, 1]
    overrides: {steps: 300}          # every run
    blocks:
      - name: signal
        axes: {task: [signal], arch: [transformer], readout: [mean, cls, last]}

A grid may name where its W&B runs go: ``wandb: {project: P, entity: E}`` (the driver's
``--wandb-project`` / ``--wandb-entity`` win over it, and it wins over ``WANDB_PROJECT`` /
``WANDB_ENTITY``). ``paper: deletang2023`` makes the grid's report also write
``paper.{csv,md}``, the grid beside that paper's published rows (``lit_seq.results.paper``).
A block names its base config with ``config: configs/echo/lstm.yaml`` or with ``task`` and
``arch`` axes (-> ``configs/<task>/<arch>.yaml``, else the family's base config for the task:
``lit_seq.ablate.bases``). Later settings win: grid overrides, then
block overrides, then the block's axes. A block with ``select: {axis: lr, seeds: [100, 101,
102]}`` runs every rate on those seeds, then the grid's seeds at the rate whose mean
validation score over them is best (``lit_seq.ablate.select`` checks the block and gives the
grid's seeds their value; ``lit_seq.results.selection``: the rule and why the selection
seeds are not grid seeds). Its ``lr`` axis lists at least 4 rates spanning at
least 30x (max / min), unless ``select.sweep_reason`` says why not (the tables print it);
``select.extend: N`` lets the grid add up to N values past the end its winner sits at
(``lit_seq.ablate.extension``). The runs on the selection seeds are scored only for what
selection reads (validation; ``select.score: full`` scores them as the others, the default
of a grid that names ``paper:``, whose maximum over runs reads every run)::

    - name: parity
      select: {axis: lr, seeds: [100, 101, 102], extend: 1}
      axes: {task: [parity_check], arch: [lstm], lr: [0.0001, 0.0003, 0.001, 0.003]}

:func:`expand` is pure: a spec in, runs out. ``lit_seq.ablate.grid.load_grid`` adds the
check of every cell by building it.
"""

import itertools
import re
from pathlib import Path

from lit_seq.ablate.axes import AXES, config_path, seed_args
from lit_seq.ablate.bases import base_config
from lit_seq.ablate.common import BadGrid, check_keys
from lit_seq.ablate.runs import Run
from lit_seq.ablate.select import check_select
from lit_seq.record import format_value
from lit_seq.results.paper import PAPERS
from lit_seq.util.assets import CONFIG_DIR, PACKAGE_DIR, config_file, find_file, shipped_name
from lit_seq.util.safe_yaml import YamlError, load_yaml

GRID_KEYS = ("name", "description", "seeds", "overrides", "blocks", "ray", "wandb", "paper")
WANDB_KEYS = ("project", "entity")  # a grid's ``wandb:``: where its W&B runs go
BLOCK_KEYS = ("name", "config", "axes", "overrides", "select")
SELECTED = "selected"  # the axis value in the ids of runs that take the value selected
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def _check_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise BadGrid(f"{where}: name={name!r} must be letters, digits, '_', '-' or '.'")
    return name


def _check_overrides(overrides: object, where: str) -> dict:
    if overrides is None:
        return {}
    if not isinstance(overrides, dict):
        raise BadGrid(f"{where}: overrides must be a mapping of key: value, got {overrides!r}")
    for key in overrides:
        if key == "task":
            raise BadGrid(f"{where}: task is not an override; give it as an axis or use config:")
        config_path(str(key), where)
    return dict(overrides)


def _check_axes(axes: object, where: str) -> dict:
    if axes is None:
        return {}
    if not isinstance(axes, dict):
        raise BadGrid(f"{where}: axes must be a mapping of key: [values], got {axes!r}")
    for key, values in axes.items():
        config_path(str(key), where)
        if not isinstance(values, list) or not values:
            raise BadGrid(f"{where}: axis {key!r} must be a non-empty list, got {values!r}")
        if key == "task":
            _check_tasks(values, where)
        if len({format_value(v) for v in values}) != len(values):
            raise BadGrid(f"{where}: axis {key!r} repeats a value: {values!r}")
    return dict(axes)


def _check_wandb(wandb: object, where: str) -> dict:
    """A grid's ``wandb: {project: P, entity: E}``: the W&B project and entity of its runs and
    of its summary run (the driver's --wandb-project / --wandb-entity win over it)."""
    if wandb is None:
        return {}
    wandb = check_keys(wandb, WANDB_KEYS, f"{where}: wandb")
    for key, value in wandb.items():
        if not isinstance(value, str) or not value.strip():
            raise BadGrid(f"{where}: wandb.{key}={value!r} must be a non-empty string")
    return dict(wandb)


def _check_tasks(values: list, where: str) -> None:
    """A ``task`` axis picks ``configs/<task>/``: its values must name those folders."""
    tasks = sorted(p.name for p in CONFIG_DIR.iterdir() if p.is_dir())
    for value in values:
        if value not in tasks:
            raise BadGrid(f"{where}: task={value!r} is not one of {tasks}")


def resolve_config(value: object, where: str) -> str:
    """A block's ``config:`` as stored (:func:`lit_seq.util.assets.shipped_name`)."""
    if not isinstance(value, str) or not value:
        raise BadGrid(f"{where}: config must be a path to a YAML file, got {value!r}")
    found = find_file(value)
    if found is None:
        folder = next((p for p in (Path(value), PACKAGE_DIR / value) if p.is_dir()), None)
        if folder is not None:  # configs/echo: the folder of the configs, not one of them
            files = [str(Path(value) / p.name) for p in sorted(folder.glob("*.yaml"))]
            raise BadGrid(
                f"{where}: config={value!r} is a folder; give one YAML file"
                + (f", one of {files}" if files else " (it holds none)")
            )
        raise BadGrid(f"{where}: base config {value!r} does not exist")
    return shipped_name(found)


def _check_paper(value: object, where: str) -> str | None:
    if value is not None and value not in PAPERS:
        raise BadGrid(f"{where}: paper={value!r} is not a known paper; allowed: {sorted(PAPERS)}")
    return value


def parse_spec(raw: object, where: str = "grid") -> dict:
    """Validate a loaded grid and return it normalized (every key present)."""
    raw = check_keys(raw, GRID_KEYS, where)
    name = _check_name(raw.get("name"), where)
    seeds = raw.get("seeds", [0])
    if (
        not isinstance(seeds, list)
        or not seeds
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
        or len(set(seeds)) != len(seeds)
    ):
        raise BadGrid(f"{where}: seeds must be a non-empty list of distinct integers >= 0")
    blocks = raw.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        raise BadGrid(f"{where}: blocks must be a non-empty list")
    spec = {
        "name": name,
        "description": str(raw.get("description", "")),
        "seeds": seeds,
        "overrides": _check_overrides(raw.get("overrides"), where),
        "blocks": [],
        **({"ray": raw["ray"]} if "ray" in raw else {}),  # checked by ray_executor.ray_options
        "wandb": _check_wandb(raw.get("wandb"), where),
        "paper": _check_paper(raw.get("paper"), where),
    }
    for i, block in enumerate(blocks):
        block = check_keys(block, BLOCK_KEYS, f"{where}: blocks[{i}]")
        bwhere = f"{where}: block {block.get('name', i)!r}"
        axes = _check_axes(block.get("axes"), bwhere)
        config = block.get("config")
        if config is not None:
            if "task" in axes:
                raise BadGrid(f"{bwhere}: a block with config: cannot vary task (it picks config)")
            config = resolve_config(config, bwhere)
        elif "task" not in axes or "arch" not in axes:
            raise BadGrid(f"{bwhere}: give config: or both task and arch axes")
        spec["blocks"].append(
            {
                "name": _check_name(block.get("name", f"block{i}"), bwhere),
                "config": config,
                "axes": axes,
                "overrides": _check_overrides(block.get("overrides"), bwhere),
                "select": check_select(
                    block.get("select"), axes, seeds, bwhere, paper=spec["paper"]
                ),
            }
        )
    names = [b["name"] for b in spec["blocks"]]
    if len(set(names)) != len(names):
        raise BadGrid(f"{where}: block names must be distinct, got {names}")
    return spec


def load_spec(path: Path) -> dict:
    """Read (safely) and validate a grid file; BadGrid with one line on any problem.

    A relative path that is not in the working directory is looked up among the shipped
    grids (``ablations/smoke.yaml``, or just ``smoke``).
    """
    path = find_file(path) or Path(path)
    try:
        raw = load_yaml(path.read_text(), path.name)
    except OSError as err:
        raise BadGrid(f"cannot read grid file {str(path)!r}: {err.strerror}") from None
    except YamlError as err:
        raise BadGrid(str(err)) from None
    return parse_spec(raw, path.name)


def _short(value: object) -> str:
    """An axis value as a run id shows it; a class with its options (``class_path`` +
    ``init_args``, a plug-in backbone) as ``ConvBackbone(kernel=5)``."""
    if isinstance(value, dict) and isinstance(value.get("class_path"), str):
        args = (value.get("init_args") or {}).items()
        options = ",".join(f"{k}={format_value(v)}" for k, v in args)
        name = value["class_path"].rpartition(".")[2]
        return f"{name}({options})" if options else name
    return format_value(value)


def _id_part(key: str, value: object) -> str:
    key = key.replace(".init_args.", ".")  # model.init_args.dropout -> model.dropout
    return f"{key}={_UNSAFE.sub('_', _short(value)).strip('_')}"


def cell_name(block: str, axes: dict) -> str:
    """A cell's id: ``{block}__{axis}={value}__...`` (the run id without its seed)."""
    return "__".join([block, *(_id_part(k, v) for k, v in axes.items())])


def _args(settings: dict) -> list[str]:
    return [f"--{config_path(k, 'grid')}={format_value(v)}" for k, v in settings.items()]


def expand(spec: dict) -> list[Run]:
    """All runs of ``spec``: blocks in order, then the axes' product (first axis outermost),
    then seeds (innermost; a ``select:`` block's selection seeds first). Pure; raises
    BadGrid if two runs would share an id."""
    runs: list[Run] = []
    for block in spec["blocks"]:
        keys = list(block["axes"])
        for combo in itertools.product(*block["axes"].values()):
            axes = dict(zip(keys, combo, strict=True))
            config, backbone = block["config"], {}
            if not config:  # configs/<task>/<arch>.yaml, else its family's (bases)
                where = f"{spec['name']}: block {block['name']!r}"
                config, backbone = base_config(axes["task"], axes["arch"], where)
            # task (and arch, when it chose the config) are already in the base config
            set_by_config = {"task"} | (set() if block["config"] else {"arch"})
            cell_args = {k: v for k, v in axes.items() if k not in set_by_config}
            cell_args = {**backbone, **cell_args}  # the base's backbone replaced first
            cell = cell_name(block["name"], axes)
            select = block.get("select") or {}
            group = ""
            if select:
                kept = [_id_part(k, v) for k, v in axes.items() if k != select["axis"]]
                group = "__".join([block["name"], *kept])
                values = tuple(block["axes"][select["axis"]])
                first = axes[select["axis"]] == values[0]
            # a select: block runs every value on its selection seeds, then each grid seed
            # once, at the value they choose
            for seed in [*(select.get("seeds") or ()), *spec["seeds"]]:
                run_cell, run_axes, run_args, pending = cell, axes, cell_args, ()
                if select and seed in spec["seeds"]:
                    if not first:  # one run per group for a seed that does not compete
                        continue
                    axis = select["axis"]
                    run_axes = {**axes, axis: SELECTED}
                    run_args = {k: v for k, v in cell_args.items() if k != axis}
                    run_cell = cell_name(block["name"], run_axes)
                    pending = values
                overrides = [
                    *_args(spec["overrides"]),
                    *_args(block["overrides"]),
                    *_args(run_args),
                ]
                overrides += seed_args(seed, overrides)
                run = Run(
                    run_id=f"{run_cell}__seed={seed}",
                    block=block["name"],
                    cell=run_cell,
                    axes=run_axes,
                    seed=seed,
                    config=config,
                    overrides=tuple(overrides),
                    index=len(runs),
                    select_axis=select.get("axis", ""),
                    select_metric=select.get("metric", ""),
                    select_group=group,
                    select_seeds=tuple(select.get("seeds", ())),
                    select_from=pending,
                    select_reason=select.get("sweep_reason", ""),
                    select_extend=select.get("extend", 0),
                    # a run on a selection seed is read for its validation scores alone
                    scoring=select.get("score", "full") if seed not in spec["seeds"] else "full",
                )
                runs.append(run)
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise BadGrid(f"{spec['name']}: two runs share the id {dup!r}; make axis values distinct")
    if too_long := [i for i in ids if len(i) > 200]:
        raise BadGrid(f"{spec['name']}: run id too long for a file name: {too_long[0][:80]}...")
    return runs


__all__ = [
    "AXES",
    "BadGrid",
    "Run",
    "cell_name",
    "config_file",
    "expand",
    "load_spec",
    "parse_spec",
]
