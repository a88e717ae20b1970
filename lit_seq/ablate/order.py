"""The order runs start in: longest first, so that no long run starts last.

With N workers, a grid ends when its last run does. Started in grid order, a grid whose
slowest runs come last (deep models, long budgets) leaves workers idle while one of them
finishes alone; starting the longest runs first (the classic LPT rule) packs the workers
evenly. Run length is estimated from the run's own config and overrides, before anything
trains: optimizer steps x layers. Only the start order changes; records, tables and W&B
keep the grid's order.
"""

import functools

import yaml

from lit_seq.ablate.spec import Run, config_file


@functools.cache
def _config(path: str) -> dict:
    try:
        return yaml.safe_load(config_file(path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}  # load_grid has already refused a grid whose configs do not load


def _setting(run: Run, dotted: str, default: object) -> object:
    """The value of ``dotted`` for ``run``: its last override, else its config, else default."""
    for arg in reversed(run.overrides):
        key, _, value = arg[2:].partition("=")
        if key == dotted:
            return yaml.safe_load(value)
    node: object = _config(run.config)
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return default if node is None else node


def estimated_cost(run: Run) -> float:
    """Relative length of ``run``: optimizer steps x layers (1 if unknown)."""
    steps = _setting(run, "trainer.max_steps", 1)
    layers = _setting(run, "model.init_args.n_layers", 1)
    try:
        return float(steps) * max(1.0, float(layers))
    except (TypeError, ValueError):
        return 1.0


def longest_first(runs: list[Run]) -> list[Run]:
    """``runs`` by decreasing estimated cost; equal costs keep their grid order."""
    return sorted(runs, key=estimated_cost, reverse=True)
