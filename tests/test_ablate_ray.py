"""The ``ray`` executor: the smoke grid through a real local Ray instance, resume across
executors, lost workers, Ctrl-C, and the one-line error without the extra.

The smoke grid goes through the command line, which starts and stops its own local Ray; the
other tests share one in-process ``ray.init(num_cpus=2)`` (Ray takes seconds to start), which
the driver finds and uses. The Ray tests carry the ``ray`` marker.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pandas as pd
import pytest

from lit_seq.ablate import ray_executor
from lit_seq.ablate.__main__ import main
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.grid import load_grid
from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.progress import GridProgress
from lit_seq.ablate.ray_executor import (
    INSTALL_HINT,
    RayOptions,
    _check_fits,
    ray_options,
    run_ray,
)
from lit_seq.record import RunRecord, read_records
from tests.helpers import SMOKE, driver, echo_rnn_runs, write_grid


def needs_ray(test):
    """The ``ray`` and ``integration`` markers, and a skip where the extra is not installed."""
    skip = pytest.mark.skipif(find_spec("ray") is None, reason="needs pip install -e '.[ray]'")
    return pytest.mark.integration(pytest.mark.ray(skip(test)))


@pytest.fixture(scope="module")
def ray_instance():
    import ray

    # "local": never a cluster someone else started on this machine
    ray.init("local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def ray_smoke(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The smoke grid through the command line, which starts (and stops) its own Ray."""
    out = tmp_path_factory.mktemp("ray_smoke") / "out"
    started = time.perf_counter()
    # Ray's start-up alone takes minutes on a loaded 2-core machine (240 s timed out at load
    # 3-4 beside a running grid): a longer guard against a hang
    result = driver(SMOKE, "--out", out, "--wandb", "off", "--executor", "ray", timeout=600)
    print(f"smoke grid through ray: {time.perf_counter() - started:.1f} s wall")
    return out, result


def snapshot(out: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "records").iterdir()}


@needs_ray
def test_smoke_grid_through_ray(ray_smoke):
    out, result = ray_smoke
    assert result.returncode == 0, result.stderr[-2000:]
    assert "ray: 3 tasks of 1 CPU, 0 GPU each" in result.stdout and "[3/3] ok" in result.stdout
    assert result.stdout.count("ray: started a local instance with") == 1
    ids = [r.run_id for r in load_grid(SMOKE)[1]]
    assert sorted(p.name for p in (out / "records").iterdir()) == sorted(f"{i}.json" for i in ids)
    records = read_records(out)
    assert {r.status for r in records.values()} == {"ok"}
    assert all(r.worker.startswith("ray-") and Path(r.log).is_file() for r in records.values())
    table = pd.read_csv(out / "runs.csv")
    assert list(table["run_id"]) == ids
    every = ["arch", "pos_mode", "seed", "params", "steps", "train_seconds", "samples_per_second"]
    every += ["wandb_run", "best_checkpoint", "test/acc", "test_len20/acc", "test_len40/acc"]
    assert set(every) <= set(table.columns) and (table["steps"] == 20).all()
    assert list(pd.read_parquet(out / "aggregate.parquet")["n"]) == [1, 1, 1]


@needs_ray
def test_a_grid_resumes_across_executors(ray_smoke, ray_instance, tmp_path, monkeypatch):
    """ray -> (one record lost) -> local -> (another lost) -> ray: each run once, rest kept."""
    out = tmp_path / "out"
    shutil.copytree(ray_smoke[0], out)
    ids = [r.run_id for r in load_grid(SMOKE)[1]]
    columns = list(pd.read_csv(out / "runs.csv").columns)
    starts = []  # what the progress display is told as each run starts
    monkeypatch.setattr(GridProgress, "start", lambda self, run, worker: starts.append(worker))
    for executor, lost in (("local", ids[0]), ("ray", ids[2])):
        (out / "records" / f"{lost}.json").unlink()  # as if that run had been interrupted
        kept = snapshot(out)
        args = [str(SMOKE), "--out", str(out), "--wandb", "off", "--executor", executor]
        assert main(args) == 0
        after = snapshot(out)
        assert sorted(after) == sorted(f"{i}.json" for i in ids)  # once each, no temp files
        assert {name: after[name] for name in kept} == kept  # finished runs untouched
        records = read_records(out)
        assert records[lost].ok
        assert records[lost].worker.startswith("local-" if executor == "local" else "ray-")
        files = [json.loads(p.read_text()) for p in (out / "records").iterdir()]
        assert len({tuple(sorted(r)) for r in files}) == 1  # one format, whoever wrote it
        assert list(pd.read_csv(out / "runs.csv").columns) == columns
        if executor == "ray":  # the worker that posted its start is the one that ran it
            assert starts[-1] == records[lost].worker


SELECT_GRID = """seeds: [0]
blocks:
  - {name: b, axes: {task: [echo], arch: [rnn], lr: [0.01, 0.001]},
     select: {axis: lr, seeds: [100, 101, 102], sweep_reason: "two rates: a small test"}}
"""


@needs_ray
def test_a_select_grid_joins_ray_once_for_all_its_phases(ray_instance, tmp_path):
    """The selection runs, then the seed at the chosen rate: two phases on one connection."""
    address = ray_instance.get_runtime_context().gcs_address
    grid = write_grid(tmp_path, "sel", SELECT_GRID)
    flags = ["--wandb", "off", "--executor", "ray", "--ray-address", address]
    result = driver(grid, "--out", tmp_path / "out", *flags, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count(f"ray: joined the cluster at {address}") == 1
    # one task a phase: the 6 selection runs as one population (--pack auto), then seed 0
    assert "ray: 1 task of 1 CPU: 1 population of 6 runs" in result.stdout
    assert "ray: 1 task of 1 CPU, 0 GPU each" in result.stdout
    records = read_records(tmp_path / "out")
    assert len(records) == 7 and {r.status for r in records.values()} == {"ok"}
    [reported] = [r for r in records.values() if r.seed == 0]
    assert reported.select_from == [0.01, 0.001] and reported.axes["lr"] in (0.01, 0.001)


@needs_ray
def test_ctrl_c_cancels_outstanding_tasks_and_keeps_records(ray_instance, tmp_path):
    pids = tmp_path / "pids"

    def quick_or_stuck(run, job, threads, mailbox):
        if run.seed == 1:
            with open(pids, "a") as handle:
                handle.write(f"{os.getpid()}\n")
            time.sleep(600)
        return RunRecord(run_id=run.run_id, status="ok")

    def interrupt(record):  # Ctrl-C lands while the driver waits for the stuck run
        while not pids.exists():
            time.sleep(0.1)
        raise KeyboardInterrupt

    # 2 CPUs each: one after the other, on a worker the tests before left warm (no imports)
    job = GridJob(tmp_path / "out", "g", "off", ray=RayOptions(num_cpus=2))
    with pytest.raises(KeyboardInterrupt):
        run_ray(
            echo_rnn_runs([0, 1]), job, lambda run, worker: None, interrupt, task=quick_or_stuck
        )
    assert list(read_records(tmp_path / "out")) == ["block0__task=echo__arch=rnn__seed=0"]
    stuck = int(pids.read_text())
    deadline = time.time() + 30
    while Path(f"/proc/{stuck}").exists() and time.time() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{stuck}").exists(), "the stuck task was not cancelled"


@needs_ray
def test_a_dead_worker_is_retried_then_recorded_failed(ray_instance, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_executor, "MAX_RETRIES", 1)  # each attempt starts a new worker
    attempts = tmp_path / "attempts"

    def crash(run, job, threads, mailbox):
        with open(attempts, "a") as handle:
            handle.write("x")
        os._exit(1)  # the worker process dies, as with kill -9 or the OOM killer

    records = []
    job = GridJob(tmp_path / "out", "g", "off", ray=RayOptions())
    run_ray(echo_rnn_runs(), job, lambda run, worker: None, records.append, task=crash)
    assert attempts.read_text() == "xx"  # the first try and one retry
    [record] = records
    assert (
        record.status == "failed"
        and "ray task lost, retried 1x: WorkerCrashedError" in record.error
    )
    assert read_records(tmp_path / "out") == {record.run_id: record}


@needs_ray
def test_a_run_whose_start_the_mailbox_never_told_is_started_before_its_record(
    ray_instance, tmp_path, monkeypatch
):
    # a busy machine: every read of the mailbox times out (what failed a CI run at load 7)
    monkeypatch.setattr(ray_executor, "_take", lambda ray, mailbox: [])
    events = []
    job = GridJob(tmp_path / "out", "g", "off", ray=RayOptions())
    run_ray(
        echo_rnn_runs([0, 1], tiny=True),
        job,
        lambda run, worker: events.append(("start", run.run_id, worker)),
        lambda record: events.append(("record", record.run_id, record.worker)),
    )
    records = read_records(tmp_path / "out")
    assert len(events) == 4 and len(records) == 2
    for run_id, record in records.items():
        assert record.ok and record.worker.startswith("ray-")
        start, done = (
            events.index(("start", run_id, record.worker)),
            events.index(("record", run_id, record.worker)),
        )
        assert start < done


def test_without_ray_the_driver_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if not installed
    out = tmp_path / "out"
    assert main([str(SMOKE), "--out", str(out), "--executor", "ray"]) == 2
    assert capsys.readouterr().err == f"lit_seq.ablate: error: {INSTALL_HINT}\n"
    assert not out.exists()


def test_ray_resources_from_grid_and_flags(tmp_path, capsys):
    assert ray_options({"num_cpus": 2, "num_gpus": 0.25}) == RayOptions(None, 2.0, 0.25)
    assert ray_options({"num_gpus": 0.25}, "auto", num_gpus=1) == RayOptions("auto", 1.0, 1.0)
    for section, problem in (
        ({"num_gpu": 1}, "unknown key 'num_gpu'"),
        ({"num_gpus": 1.5}, "whole GPUs"),
        ({"num_cpus": 0}, "num_cpus=0 must be > 0"),
        ([1], "ray must be a mapping"),
    ):
        with pytest.raises(BadGrid, match=problem):
            ray_options(section)
    # a bad ray: section stops the grid before anything runs, whichever the executor
    grid = tmp_path / "grid.yaml"
    grid.write_text(SMOKE.read_text() + "ray: {num_gpus: -1}\n")
    assert main([str(grid), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    assert "num_gpus=-1 must be >= 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: a --ray-* flag without --executor ray
        main([str(SMOKE), "--ray-num-gpus", "0.5"])


@needs_ray
def test_a_request_no_node_can_meet_is_refused_on_a_local_instance(ray_instance, capsys):
    with pytest.raises(BadGrid, match="no Ray node has 64 CPU and 0 GPU"):
        _check_fits(ray_instance, 64, 0, local=True)
    _check_fits(ray_instance, 1, 0.5, local=False)  # a cluster may still grow: a warning
    assert "the runs wait until such a node joins" in capsys.readouterr().out
