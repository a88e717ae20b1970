"""The order runs start in: longest first, so that no long run starts last.

With N workers, a grid ends when its last run does. Started in grid order, a grid whose
slowest runs come last (deep models, long budgets) leaves workers idle while one of them
finishes alone; starting the longest runs first (the classic LPT rule) packs the workers
evenly. A run's length is its ``cost`` (optimizer steps x layers), known from the check of
its cell before anything trains. Only the start order changes; records, tables and W&B keep
the grid's order.
"""

from lit_seq.ablate.spec import Run


def longest_first(runs: list[Run]) -> list[Run]:
    """``runs`` by decreasing cost; equal costs keep their grid order."""
    return sorted(runs, key=lambda run: run.cost, reverse=True)
