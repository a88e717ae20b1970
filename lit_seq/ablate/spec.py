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
``arch`` axes (-> ``configs/<task>/<arch>.yaml``). Later settings win: grid overrides, then
block overrides, then the block's axes. A block with ``select: {axis: lr, seeds: [100, 101,
102]}`` runs every rate on those seeds, then the grid's seeds at the rate whose mean
validation score over them is best (``lit_seq.results.selection``: the rule and why the
selection seeds are not grid seeds). Its ``lr`` axis lists at least 4 rates spanning at
least 30x (max / min), unless ``select.sweep_reason`` says why not (the tables print it);
``select.extend: N`` lets the grid add up to N values past the end its winner sits at
(``lit_seq.ablate.extension``)::

    - name: parity
      select: {axis: lr, seeds: [100, 101, 102], extend: 1}
      axes: {task: [parity_check], arch: [lstm], lr: [0.0001, 0.0003, 0.001, 0.003]}

:func:`expand` is pure: a spec in, runs out. ``lit_seq.ablate.grid.load_grid`` adds the
check of every cell by building it.
"""

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from lit_seq.ablate.axes import AXES, config_path, seed_args
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.sweep import check_sweep
from lit_seq.record import format_value
from lit_seq.results.paper import PAPERS
from lit_seq.results.selection import MIN_SELECT_SEEDS
from lit_seq.util.assets import CONFIG_DIR, PACKAGE_DIR, config_file, find_file, shipped_name
from lit_seq.util.safe_yaml import YamlError, load_yaml

GRID_KEYS = ("name", "description", "seeds", "overrides", "blocks", "ray", "wandb", "paper")
WANDB_KEYS = ("project", "entity")  # a grid's ``wandb:``: where its W&B runs go
BLOCK_KEYS = ("name", "config", "axes", "overrides", "select")
SELECT_KEYS = ("axis", "metric", "seeds", "sweep_reason", "extend")
SELECTED = "selected"  # the axis value in the ids of runs that take the value selected
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


@dataclass(frozen=True)
class Run:
    """One training run of a grid: one cell (block + axis values) and one seed."""

    run_id: str  # {cell}__seed={seed}: stable, unique, a safe file name
    block: str
    cell: str  # {block}__{axis}={value}__...
    axes: dict  # axis key -> value, in the order the block lists them
    seed: int
    config: str  # base config: ``configs/<task>/<arch>.yaml`` when shipped, else absolute
    overrides: tuple[str, ...]  # LightningCLI arguments after --config
    index: int = 0  # position in the grid: the order of the tables
    # set by the check of every cell (``grid.check_cells``): what the run builds
    task: str = ""  # the registry names of its task and backbone
    arch: str = ""
    cost: float = 1.0  # optimizer steps x layers: a run's relative length
    digest: str = ""  # hash of its resolved configuration and seed: what it computes
    pack_key: str = ""  # runs with the same non-empty key can train as one pack (packing)
    # a block's ``select:`` (lit_seq.results.selection): the values of this axis (e.g. the
    # learning rate) compete on the selection seeds by their mean validation metric; the
    # runs of a cell that compete or wait share ``select_group``, the cell id without it
    select_axis: str = ""
    select_metric: str = ""  # val/<metric>; set by the cell check when the grid omits it
    select_group: str = ""
    # the selection seeds: none is a grid seed, so none is in the reported mean; each grid
    # seed has one run, whose value (``select_from``) is chosen once those runs have finished
    select_seeds: tuple[int, ...] = ()
    select_from: tuple = ()  # non-empty: the values this run's is chosen from (pending)
    select_reason: str = ""  # select.sweep_reason: why the block sweeps what it does
    select_extend: int = 0  # select.extend: steps its group may add past an end of the sweep
    select_extension: int = 0  # k >= 1: a value added k steps past it (lit_seq.ablate.extension)

    def __hash__(self) -> int:  # axes is a dict, so the generated hash would fail
        return hash(self.run_id)


def _check_keys(data: object, allowed: tuple[str, ...], where: str) -> dict:
    if not isinstance(data, dict):
        raise BadGrid(f"{where}: expected a mapping with keys {list(allowed)}, got {data!r}")
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise BadGrid(f"{where}: unknown key {unknown[0]!r}; allowed keys are {list(allowed)}")
    return data


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
    wandb = _check_keys(wandb, WANDB_KEYS, f"{where}: wandb")
    for key, value in wandb.items():
        if not isinstance(value, str) or not value.strip():
            raise BadGrid(f"{where}: wandb.{key}={value!r} must be a non-empty string")
    return dict(wandb)


def _check_select(select: object, axes: dict, grid_seeds: list, where: str) -> dict:
    """A block's ``select: {axis: lr, metric: val/acc, seeds: [100, 101, 102]}``: the axis
    must vary in the block; the values compete on ``seeds`` (the rule and why:
    ``lit_seq.results.selection``), at least MIN_SELECT_SEEDS of them, none a grid seed;
    ``sweep_reason`` and ``extend`` as :func:`lit_seq.ablate.sweep.check_sweep` says."""
    if select is None:
        return {}
    select = _check_keys(select, SELECT_KEYS, f"{where}: select")
    axis = select.get("axis")
    varied = [k for k, values in axes.items() if len(values) > 1 and k != "task"]
    if axis not in varied:
        raise BadGrid(
            f"{where}: select.axis={axis!r} must be an axis the block varies: one of {varied}"
        )
    metric = select.get("metric", "")
    if metric and (not isinstance(metric, str) or not metric.startswith("val/")):
        raise BadGrid(f"{where}: select.metric={metric!r} must be a validation metric (val/...)")
    seeds = select.get("seeds")
    start = max(100, max(grid_seeds) + 1)  # clear of the seeds a grid may add later
    suggestion = list(range(start, start + MIN_SELECT_SEEDS))
    if (
        not isinstance(seeds, list)
        or len(seeds) < MIN_SELECT_SEEDS
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
        or len(set(seeds)) != len(seeds)
    ):
        raise BadGrid(
            f"{where}: select.seeds={seeds!r} must list at least {MIN_SELECT_SEEDS} distinct "
            f"seeds (integers >= 0) whose mean validation score picks the {axis}, e.g. "
            f"{suggestion}"
        )
    if shared := [s for s in seeds if s in grid_seeds]:
        raise BadGrid(
            f"{where}: select.seeds {shared} are also the grid's seeds: a seed that chose the "
            f"{axis} would be in the mean it reports, lucky on average; use seeds the grid "
            f"does not list, e.g. {suggestion}"
        )
    reason, extend = check_sweep(select, axis, axes[axis], where)
    return {
        "axis": axis,
        "metric": metric or "",
        "seeds": tuple(seeds),
        "sweep_reason": reason,
        "extend": extend,
    }


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
    raw = _check_keys(raw, GRID_KEYS, where)
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
        block = _check_keys(block, BLOCK_KEYS, f"{where}: blocks[{i}]")
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
                "select": _check_select(block.get("select"), axes, seeds, bwhere),
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
            config = block["config"] or f"configs/{axes['task']}/{axes['arch']}.yaml"
            # task (and arch, when it chose the config) are already in the base config
            set_by_config = {"task"} | (set() if block["config"] else {"arch"})
            cell_args = {k: v for k, v in axes.items() if k not in set_by_config}
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
