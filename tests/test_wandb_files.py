"""Reading W&B offline run files back, with wandb's own protobuf records (no server, no mocks).

wandb (0.2x+) writes each run as a ``run-<id>.wandb`` file: a LevelDB-style log of 32 KiB
blocks holding ``wandb.proto`` Records. :func:`read_run` replays one into what the W&B UI
shows of the run: its id, name, group, job type, config, summary and exit code.
"""

import json
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import wandb
from google.protobuf.message import DecodeError
from wandb.proto import wandb_internal_pb2 as pb

BLOCK = 32768
HEADER = 7  # the file opens with ":W&B", magic, version; each record with crc, length, type
FULL, FIRST, LAST = 1, 2, 4


def records(path: Path) -> list:
    """Every ``wandb.proto`` Record in the ``.wandb`` file at ``path``, in order."""
    data = Path(path).read_bytes()
    ident, magic, _ = struct.unpack("<4sHB", data[:HEADER])
    assert ident == b":W&B" and magic == 0xBEE1, f"{path} is not a W&B run file"
    out, pos, pending = [], HEADER, b""
    while pos + HEADER <= len(data):
        if BLOCK - pos % BLOCK < HEADER:  # a block's tail too short for a header: padding
            pos += BLOCK - pos % BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        if pos + HEADER + length > len(data):
            break  # wandb's service is still writing this record: the rest is not on disk
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        pending = chunk if kind in (FULL, FIRST) else pending + chunk
        if kind in (FULL, LAST):
            record = pb.Record()
            record.ParseFromString(pending)
            out.append(record)
    return out


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


@dataclass
class RunView:
    """What W&B shows of one offline run folder."""

    id: str = ""
    name: str = ""
    project: str = ""
    entity: str = ""
    group: str = ""
    job_type: str = ""
    tags: list = field(default_factory=list)
    config: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    exit_code: int | None = None  # None: the run never finished (crashed)
    artifacts: list = field(default_factory=list)  # names of the artifacts it logged

    @property
    def state(self) -> str:
        if self.exit_code is None:
            return "crashed"
        return "finished" if self.exit_code == 0 else "failed"


def read_run(folder: Path) -> RunView:
    """The :class:`RunView` of an ``offline-run-*`` folder."""
    [path] = Path(folder).glob("run-*.wandb")
    view = RunView()
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = record.run
            view.id, view.name, view.group = run.run_id, run.display_name, run.run_group
            view.project, view.entity = run.project, run.entity
            view.job_type, view.tags = run.job_type, list(run.tags)
            view.config.update({_key(i): json.loads(i.value_json) for i in run.config.update})
        elif kind == "config":
            view.config.update({_key(i): json.loads(i.value_json) for i in record.config.update})
        elif kind == "summary":
            view.summary.update({_key(i): json.loads(i.value_json) for i in record.summary.update})
        elif kind == "exit":
            view.exit_code = record.exit.exit_code
        elif kind == "artifact":
            view.artifacts.append(record.artifact.name)
    view.config.pop("_wandb", None)
    return view


def read_runs(folder: Path, wait_s: float = 30.0) -> list[RunView]:
    """Every offline W&B run under ``folder`` (``<folder>/wandb/offline-run-*``), oldest first.

    wandb's service writes a run's exit record a moment after ``finish()`` returns (in this
    process): wait up to ``wait_s`` for every run to have one, and read again when a file
    was caught in the middle of a write.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            runs = [read_run(run) for run in sorted(Path(folder).glob("wandb/offline-run-*"))]
        except DecodeError:  # read mid-write (seen once in CI): the service is not done yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
            continue
        if all(r.exit_code is not None for r in runs) or time.monotonic() > deadline:
            return runs
        time.sleep(0.1)


def test_a_run_written_by_wandb_reads_back_as_wandb_shows_it(tmp_path):
    run = wandb.init(
        mode="offline",
        dir=str(tmp_path),
        project="p",
        name="n",
        group="g",
        job_type="train",
        tags=["a=1"],
        config={"lr": 0.1},
        settings=wandb.Settings(silent=True),
    )
    run.define_metric("val/acc", summary="max")
    for acc in (0.2, 0.9, 0.5):
        run.log({"val/acc": acc})
    run.summary["status"] = "failed"
    run.finish(exit_code=3)
    [view] = read_runs(tmp_path)
    assert (view.name, view.group, view.job_type, view.tags) == ("n", "g", "train", ["a=1"])
    assert view.config == {"lr": 0.1}
    assert view.summary["val/acc"] == {"max": 0.9} and view.summary["status"] == "failed"
    assert (view.exit_code, view.state) == (3, "failed")
