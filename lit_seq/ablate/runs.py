"""``Run``: one training run of a grid, what every stage of the driver hands on.

``spec.expand`` makes them from a grid file, ``grid.check_cells`` fills in what each builds,
``select.resolve`` gives a waiting run its value, the executors run them (``run_one``).
"""

from dataclasses import dataclass


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
    # what its fit scores (``--scoring``): "selection" for a run on a selection seed whose
    # block's select.score leaves it at that (its validation scores and the test set at the
    # training length), else "full"; not in its digest: every number selection reads is
    # the same either way
    scoring: str = "full"

    def __hash__(self) -> int:  # axes is a dict, so the generated hash would fail
        return hash(self.run_id)
