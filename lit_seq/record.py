"""The run record: what one run produced, written once and read by everything after it.

:class:`FitResult` is what ``lit_seq.fit`` writes as ``metrics.json`` in the run folder.
:class:`RunRecord` is a grid's ``records/<run_id>.json``: the same fields plus where the run
sits in its grid and how it ended. Both are flat JSON with sorted keys; reading tolerates
records written before a field existed (it takes its default) and ignores unknown keys.
The paths they hold are stored relative to their folder (the run folder, the grid's output
folder) and resolved against the folder they are read from, so a folder moved, copied or
cloned elsewhere still finds its checkpoints and logs (:mod:`lit_seq.util.folder_paths`).
Kept free of torch and Lightning, so tables and reports load fast.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from lit_seq.util.folder_paths import relative_to_folder, resolve_in_folder
from lit_seq.util.io import atomic_write_json, read_json

METRICS_FILE = "metrics.json"  # in a run folder
RECORDS = "records"  # in a grid's output folder
RUNS = "runs"  # in a grid's output folder: runs/<run_id>/, each a run folder of lit_seq.fit
# a fit's phases, the keys of a record's phase_seconds (lit_seq.fit.phases says what each is)
PHASES = ("build", "train", "val", "test", "range_eval", "write")
WANDB_OFFLINE = "offline-run-"  # how W&B names an offline run's folder
RANGE_OOD = "range_ood"  # metrics prefix: a length curve's means past the training length
# the fields that say where a record was made (lit_seq.util.environment.fit_environment)
ENVIRONMENT_FIELDS = ["lit_seq_commit", "lit_seq_dirty", "python_version", "torch_version"]
ENVIRONMENT_FIELDS += ["lightning_version", "device", "device_name", "cpu_capability"]
ENVIRONMENT_FIELDS += ["cuda_version", "cudnn_version", "torch_threads", "precision"]
ENVIRONMENT_FIELDS += ["deterministic"]


def format_value(value: object) -> str:
    """An axis value as LightningCLI reads it on the command line (YAML): in run ids, in the
    fit arguments of a grid run, and in tables (``true``, ``null``, ``[2, 4]``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def diverged_loss(metrics: dict[str, float]) -> str:
    """The first ``.../loss`` in ``metrics`` that is not finite (a diverged run), else ""."""
    return next((k for k, v in metrics.items() if k.endswith("/loss") and not math.isfinite(v)), "")


@dataclass
class FitResult:
    """One trained and tested run: sizes, speed, checkpoints, every test metric and the
    machine and software that made them."""

    task: str | None = None  # the DataModule's registry name (``TASKS``)
    arch: str | None = None  # the backbone's registry name (``BACKBONES``)
    system: str | None = None  # the LightningModule's class name
    main_metric: str | None = None  # the metric tables lead with (``acc``, ``exact``)
    params: int | None = None
    train_length: int | None = None  # the longest training sequence: where OOD starts
    steps: int | None = None  # optimizer steps taken in total
    train_seconds: float | None = None  # wall seconds of training, summed over resumes
    # wall and CPU seconds of this session by phase (build, train, val, test, range_eval,
    # write: lit_seq.fit.phases); {} in records made before they were kept
    phase_seconds: dict[str, float] = field(default_factory=dict)
    phase_cpu_seconds: dict[str, float] = field(default_factory=dict)
    # what was scored: "full" (every test set and the range evaluation) or "selection" (the
    # validation scores and the test set at the training length: a grid's selection run)
    scoring: str = "full"
    samples_per_second: float | None = None
    best_checkpoint: str = ""
    # the weights every score below is of: "best" (the checkpoint of the lowest val/loss) or
    # "last" (the final parameters); records made before the choice existed are "best"
    score_weights: str = "best"
    last_checkpoint: str = ""
    run_dir: str = ""
    wandb_run: str = ""  # entity/project/id online, the run's folder offline
    wandb_error: str = ""  # what went wrong with W&B, if anything (offline instead, or no W&B)
    metrics: dict[str, float] = field(default_factory=dict)  # test/acc, test_len40/acc, ...
    # validation of the tested weights (score_weights): what a grid selects learning rates on
    val_metrics: dict[str, float] = field(default_factory=dict)  # val/acc, val/loss, ...
    target: str = ""  # the fit's target (``val/acc>=0.99 x1``), "" when it had none
    target_reached: bool | None = None  # None: no target
    target_step: int | None = None  # first step of the streak that held (time-to-target)
    target_seconds: float | None = None  # training seconds at that step
    # accuracy-vs-length curve: metric -> {length: value}, lengths as text (JSON keys)
    curve: dict[str, dict[str, float]] = field(default_factory=dict)
    # M: the longest length the range_ood/<metric> means average (lengths N+1..M of the
    # curve; Delétang et al.'s score with range_eval step 1); None without a range evaluation
    range_ood_longest: int | None = None
    chance: float | None = None  # the main metric of a guess (1 / classes), when known
    # length (as text) -> the task's context floor there, at every test and curve length:
    # the accuracy of answering from the input without doing the task, where that beats
    # chance (associative_recall: 1 / pairs in context); {} for the other tasks
    context_floor: dict[str, float] = field(default_factory=dict)
    # the seeds of its data and of its initial weights (lit_seq.fit.seeds): each the run's
    # seed unless set apart; None in records made before they were separate options
    data_seed: int | None = None
    init_seed: int | None = None
    # where the numbers came from (lit_seq.util.environment): per-seed values can differ
    # between machines, verdicts over seeds should not; "" / None in records made before
    lit_seq_commit: str = ""  # short commit of the lit_seq checkout, "" outside one
    lit_seq_dirty: bool | None = None  # its tracked files had uncommitted changes
    python_version: str = ""
    torch_version: str = ""
    lightning_version: str = ""
    device: str = ""  # torch's device of the fit: cpu, cuda:0
    device_name: str = ""  # the CPU's model, or the GPU's name
    cpu_capability: str = ""  # torch's CPU kernels: DEFAULT, AVX2, AVX512
    cuda_version: str = ""  # torch's CUDA and cuDNN on a GPU, "" on the CPU
    cudnn_version: str = ""
    torch_threads: int | None = None  # intra-op threads of the fit's process
    precision: str = ""  # the Trainer's: 32-true, bf16-mixed
    deterministic: bool | None = None  # torch's deterministic algorithms were enforced

    # the fields naming files of the record's folder: stored relative to it, read resolved
    PATHS: ClassVar[tuple[str, ...]] = ("best_checkpoint", "last_checkpoint", "run_dir")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> FitResult:
        """The record in ``data``; missing fields take their defaults, unknown keys are dropped."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def path_fields(self) -> tuple[str, ...]:
        """:data:`PATHS`, and ``wandb_run`` when it is an offline run's folder (online it is
        entity/project/id, no path)."""
        offline = Path(self.wandb_run).name.startswith(WANDB_OFFLINE)
        return (*self.PATHS, "wandb_run") if offline else self.PATHS

    def stored_json(self, folder: Path) -> dict:
        """:meth:`to_json` as written into ``folder``: its paths relative to it."""
        data = self.to_json()
        for name in self.path_fields():
            data[name] = relative_to_folder(data[name], folder)
        return data

    @classmethod
    def written_in(cls, data: dict) -> Path | None:
        """The folder a record with absolute paths (written before they were relative) was
        written in: its run folder; None for a record with relative paths."""
        run_dir = data.get("run_dir") or ""
        return Path(run_dir) if Path(run_dir).is_absolute() else None

    @classmethod
    def from_stored(cls, data: dict, folder: Path) -> FitResult:
        """:meth:`from_json` of a record read from ``folder``, its paths resolved against it."""
        record = cls.from_json(data)
        written_in = cls.written_in(data)
        for name in record.path_fields():
            setattr(record, name, resolve_in_folder(getattr(record, name), folder, written_in))
        return record

    def write(self, run_dir: Path) -> Path:
        path = Path(run_dir) / METRICS_FILE
        atomic_write_json(path, self.stored_json(run_dir))
        return path

    @classmethod
    def read(cls, run_dir: Path) -> FitResult:
        """The ``metrics.json`` of ``run_dir`` (OSError / ValueError if missing or unreadable),
        its paths resolved against ``run_dir``."""
        return cls.from_stored(read_json(Path(run_dir) / METRICS_FILE), run_dir)


@dataclass
class RunRecord(FitResult):
    """One run of a grid: its :class:`FitResult` fields, its place in the grid and its end."""

    run_id: str = ""  # {cell}__seed={seed}, also the record's file name
    grid: str = ""
    block: str = ""
    cell: str = ""  # {block}__{axis}={value}__...: the seeds of one cell share it
    axes: dict = field(default_factory=dict)  # axis key -> value
    axis_order: list[str] = field(default_factory=list)  # the block's order (files sort keys)
    seed: int = 0
    index: int = 0  # position in the grid: the order of the tables
    config: str = ""  # base config (``lit_seq.util.assets.shipped_name``)
    overrides: list[str] = field(default_factory=list)  # fit arguments after --config
    select_axis: str = ""  # the block's select: (lit_seq.ablate.spec.Run)
    select_metric: str = ""
    select_group: str = ""
    select_seeds: list[int] = field(default_factory=list)  # the seeds the values compete on
    select_from: list = field(default_factory=list)  # a run that took the value selected
    select_reason: str = ""  # the block's select.sweep_reason: why its sweep is what it is
    # 0: a value the grid lists; k >= 1: added k geometric steps past the end of the sweep
    # its group's winner sat at (select.extend, lit_seq.ablate.extension)
    select_extension: int = 0
    worker: str = ""  # who ran it: local-<i>:<pid> or ray-<ip>:<pid>
    status: str = "failed"  # ok | failed
    error: str = ""  # one line, for failed runs
    warning: str = ""  # one line: something went wrong that did not spoil the result
    wall_seconds: float | None = None  # the whole run, build and test included
    finished_at: str = ""  # UTC, ISO 8601
    log: str = ""  # the run's own console output
    pack_size: int = 1  # trained in a population of this many runs (lit_seq.population); 1: alone

    # stored relative to the grid's output folder: runs/<id>/..., logs/<id>.log
    PATHS: ClassVar[tuple[str, ...]] = (*FitResult.PATHS, "log")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def written_in(cls, data: dict) -> Path | None:
        """The grid folder a record with absolute paths was written in: the folder above
        ``runs/`` of its ``run_dir``; None for a record with relative paths."""
        run_dir = Path(data.get("run_dir") or "")
        old = run_dir.is_absolute() and run_dir.parent.name == RUNS
        return run_dir.parent.parent if old else None


def record_path(out_dir: Path, run_id: str) -> Path:
    return Path(out_dir) / RECORDS / f"{run_id}.json"


def write_record(out_dir: Path, record: RunRecord) -> Path:
    """Write ``record`` as ``records/<run_id>.json`` (temp file + fsync + rename), its paths
    relative to ``out_dir``."""
    path = record_path(out_dir, record.run_id)
    atomic_write_json(path, record.stored_json(out_dir))
    return path


def read_record(path: Path) -> RunRecord:
    """One record file, ``<out_dir>/records/<run_id>.json``, its paths resolved against that
    ``out_dir`` (OSError / ValueError if unreadable)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path} does not hold a record")
    return RunRecord.from_stored(data, Path(path).parent.parent)


def read_records(out_dir: Path, unreadable: list[Path] | None = None) -> dict[str, RunRecord]:
    """Every complete record of a grid folder by run id (temp files of killed writes ignored).

    An unreadable record counts as missing (its run simply runs again); its path is added
    to ``unreadable`` when given, for a report that must not leave it out silently.
    """
    records = {}
    for path in sorted((Path(out_dir) / RECORDS).glob("[!.]*.json")):
        try:
            record = read_record(path)
        except (OSError, json.JSONDecodeError, ValueError, TypeError):
            if unreadable is not None:
                unreadable.append(path)
            continue
        records[record.run_id or path.stem] = record
    return records
