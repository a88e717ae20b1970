"""The grid driver end to end, through the real command line (CPU, tiny runs), and one run
in-process (``run_one.execute_run``).

Each driver process pays two Lightning imports (driver + worker), so the grids here are
tiny, the smoke grid's output is shared by the tests that only read it, and only the smoke
grid and the killed driver are processes of their own: the other grids call the driver's
``main`` here, which pays the worker's import alone.
"""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import lit_seq.fit
from lit_seq.ablate.__main__ import main
from lit_seq.ablate.grid import load_grid
from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.run_one import execute_run
from lit_seq.record import FitResult, read_records
from tests.helpers import (
    REPO,
    SMOKE,
    alive,
    children,
    driver,
    driver_workers,
    echo_rnn_runs,
    write_grid,
)


def record_files(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "records").iterdir())


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("smoke") / "out"
    started = time.perf_counter()
    result = driver(SMOKE, "--out", out, "--workers", "1", "--wandb", "off")
    print(f"smoke grid: {time.perf_counter() - started:.1f} s wall")
    return out, result


@pytest.mark.integration
def test_smoke_grid_end_to_end(smoke):
    out, result = smoke
    assert result.returncode == 0, result.stderr[-2000:]
    _, runs = load_grid(SMOKE)
    assert record_files(out) == sorted(f"{r.run_id}.json" for r in runs)
    table = pd.read_csv(out / "runs.csv")
    assert list(table["run_id"]) == [r.run_id for r in runs]
    assert set(table["status"]) == {"ok"}
    every = ["arch", "pos_mode", "seed", "params", "steps", "train_seconds", "samples_per_second"]
    every += ["wandb_run", "best_checkpoint", "test/acc", "test_len20/acc", "test_len40/acc"]
    assert set(every) <= set(table.columns)
    assert (table["steps"] == 20).all()
    aggregate = pd.read_parquet(out / "aggregate.parquet")
    assert list(aggregate["n"]) == [1, 1, 1]
    assert "test_len40/acc_mean" in aggregate.columns
    assert (out / "aggregate.md").read_text().startswith("# Aggregate: the main metrics per cell")
    assert (out / "plots" / "echo_arch.png").stat().st_size > 0
    assert "[3/3] ok" in result.stdout and "echo: acc" in result.stdout


@pytest.mark.integration
def test_report_rebuilds_identical_tables(smoke, tmp_path):
    out, _ = smoke
    copy = tmp_path / "copy"
    (copy / "records").mkdir(parents=True)
    for path in (out / "records").iterdir():
        (copy / "records" / path.name).write_bytes(path.read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "lit_seq.report", str(copy)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    for name in ("runs.csv", "aggregate.csv", "runs.md", "aggregate.md"):
        assert (copy / name).read_bytes() == (out / name).read_bytes(), name
    assert (copy / "plots" / "echo_arch.png").exists()


@pytest.mark.integration
def test_a_grid_resumes_in_another_checkout_from_its_records_alone(smoke, tmp_path, capsys):
    """What a results page commits (records, grid.yaml, fingerprint.json; no run folders)
    is enough to resume the grid elsewhere: finished runs stay, the missing one runs."""
    out, _ = smoke
    moved = tmp_path / "moved"
    (moved / "records").mkdir(parents=True)
    for name in ("grid.yaml", "fingerprint.json"):
        (moved / name).write_bytes((out / name).read_bytes())
    kept, missing = record_files(out)[:-1], record_files(out)[-1]
    for name in kept:
        (moved / "records" / name).write_bytes((out / "records" / name).read_bytes())
    assert main([str(SMOKE), "--out", str(moved), "--workers", "1", "--wandb", "off"]) == 0
    said = capsys.readouterr()
    assert f"{len(kept)} already done, 1 to run" in said.out + said.err
    assert record_files(moved) == record_files(out) and (moved / "records" / missing).exists()
    for name in kept:  # untouched
        assert (moved / "records" / name).read_bytes() == (out / "records" / name).read_bytes()


@pytest.mark.integration
def test_a_grid_that_gained_seeds_resumes_in_its_folder_and_keeps_its_records(
    smoke, tmp_path, capsys
):
    """More seeds on a finished grid: the new runs train, the folder's records stay as
    they were, and the folder's grid files now describe the larger grid."""
    out, _ = smoke
    grown = tmp_path / "grown"
    (grown / "records").mkdir(parents=True)
    for name in ("grid.yaml", "fingerprint.json"):
        (grown / name).write_bytes((out / name).read_bytes())
    for name in record_files(out):
        (grown / "records" / name).write_bytes((out / "records" / name).read_bytes())
    more = tmp_path / "smoke.yaml"
    more.write_text(SMOKE.read_text().replace("seeds: [0]", "seeds: [0, 1]"))
    assert main([str(more), "--out", str(grown), "--dry-run"]) == 0
    assert "out folder would grow by 3 run(s)" in capsys.readouterr().out
    assert main([str(more), "--out", str(grown), "--workers", "1", "--wandb", "off"]) == 0
    said = capsys.readouterr().out
    assert "out folder grows by 3 run(s) the grid gained" in said
    assert "its 3 earlier run(s) are unchanged" in said and "3 already done, 3 to run" in said
    for name in record_files(out):  # untouched
        assert (grown / "records" / name).read_bytes() == (out / "records" / name).read_bytes()
    assert len(record_files(grown)) == 6
    marker = json.loads((grown / "fingerprint.json").read_text())
    assert marker["runs"] == 6 and len(marker["run_digests"]) == 6
    assert "seed=1" in (grown / "grid.yaml").read_text()
    # the grown folder resumes with the grown grid, and refuses the grid it grew from now
    assert main([str(more), "--out", str(grown), "--workers", "1", "--wandb", "off"]) == 0
    assert "6 already done, 0 to run" in capsys.readouterr().out
    assert main([str(SMOKE), "--out", str(grown), "--wandb", "off"]) == 2
    assert "is no longer in the grid" in capsys.readouterr().err


@pytest.mark.integration
def test_changed_grid_is_refused_before_training(smoke, tmp_path, capsys):
    out, _ = smoke
    changed = tmp_path / "smoke.yaml"
    changed.write_text(SMOKE.read_text().replace("steps: 20", "steps: 21"))
    before = sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*"))
    assert main([str(changed), "--out", str(out), "--wandb", "off"]) == 2
    assert "was made by a different grid" in capsys.readouterr().err
    assert sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*")) == before


def _wait_for(condition, what: str, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.time() + timeout
    while not condition():
        assert proc.poll() is None, f"driver ended before {what}"
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _any_record(out: Path, error: str) -> bool:
    """Whether a record with ``error`` in its error exists ("" means: an ok record)."""
    records = read_records(out).values() if (out / "records").is_dir() else []
    return any(error in r.error and bool(error) == (not r.ok) for r in records)


@pytest.mark.integration
@pytest.mark.slow
def test_sigkill_of_a_worker_then_the_driver_loses_and_duplicates_nothing(tmp_path):
    blocks = "blocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    # four runs: one killed with its worker, at least one finished before the driver dies
    grid = write_grid(tmp_path, "killme", f"seeds: [0, 1, 2, 3]\n{blocks}")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "lit_seq.ablate", str(grid), "--out", str(out)]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    # each run alone (--pack off): a population would put all eight on one worker
    flags = ["--workers", "2", "--wandb", "off", "--pack", "off"]
    proc = subprocess.Popen([*command, *flags], cwd=REPO, **quiet)
    try:
        # a worker killed while it holds a run: that run is failed, a new worker takes over
        _wait_for(lambda: len(driver_workers(proc.pid)) == 2, "two workers", proc)
        # each holds a run by now, and is still importing Lightning (seconds on any machine)
        time.sleep(1.5)
        os.kill(driver_workers(proc.pid)[0], signal.SIGKILL)
        _wait_for(lambda: _any_record(out, "worker died"), "the dead worker's record", proc)
        _wait_for(lambda: _any_record(out, ""), "a finished run", proc)
        # then the driver, mid-grid
        workers = children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    deadline = time.time() + 15
    while any(alive(pid) for pid in workers) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in workers), "a worker outlived the driver"
    finished = {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in (out / "records").glob("*.json")
        if json.loads(p.read_text())["status"] == "ok"
    }
    ids = [r.run_id for r in load_grid(grid)[1]]
    assert 1 <= len(finished) < len(ids), "the grid was not killed mid-way"

    assert main([str(grid), "--out", str(out), *flags]) == 0
    assert record_files(out) == sorted(f"{i}.json" for i in ids)  # once each, no temp files
    assert sorted(pd.read_csv(out / "runs.csv")["run_id"]) == sorted(ids)
    assert set(pd.read_csv(out / "runs.csv")["status"]) == {"ok"}
    for name, (content, mtime) in finished.items():
        path = out / "records" / name
        assert path.read_bytes() == content and path.stat().st_mtime_ns == mtime


@pytest.mark.integration
@pytest.mark.slow
def test_failing_runs_are_recorded_and_offline_wandb_runs_stay_apart(tmp_path, capsys):
    # a real NaN divergence mid-training, then two good runs, all on one worker: the diverged
    # run's open W&B run must not swallow the next one
    blocks = """blocks:
- {name: nan, axes: {task: [echo], arch: [transformer], lr: [1.0e+30]}}
- {name: good, axes: {task: [echo], arch: [rnn, lstm]}}
"""
    grid = write_grid(tmp_path, "wbgrid", blocks)
    out = tmp_path / "out"
    assert main([str(grid), "--out", str(out), "--wandb", "offline"]) == 1
    said = capsys.readouterr().out
    records = read_records(out)
    nan = records["nan__task=echo__arch=transformer__lr=1e+30__seed=0"]
    assert nan.status == "failed" and nan.error.startswith("FloatingPointError")
    assert nan.task == "echo" and nan.arch == "transformer"  # known from the up-front check
    table = pd.read_csv(out / "runs.csv")
    assert list(table["status"]) == ["failed", "ok", "ok"]
    assert "FAILED" in said and "1 of 3 runs failed" in said
    aggregate = pd.read_csv(out / "aggregate.csv")
    assert list(aggregate["failed"]) == [1, 0, 0] and list(aggregate["n"]) == [0, 1, 1]

    for run_id in ("good__task=echo__arch=rnn__seed=0", "good__task=echo__arch=lstm__seed=0"):
        record = records[run_id]
        assert Path(record.wandb_run).is_relative_to(out / "runs" / run_id)
        run_files = list((out / "runs" / run_id / "wandb").glob("offline-run-*/*.wandb"))
        assert len(run_files) == 1  # its own W&B run, nothing merged into another
        data = run_files[0].read_bytes()
        assert b"wbgrid" in data and f"arch={record.arch}".encode() in data  # group, tag
    summary = list((out / "wandb").glob("offline-run-*/*.wandb"))
    assert len(summary) == 1 and b"wbgrid-summary" in summary[0].read_bytes()


def test_execute_run_never_raises_and_catches_divergence(tmp_path, monkeypatch):
    [run] = echo_rnn_runs()
    job = GridJob(tmp_path, "g", "off")

    def diverge(args):
        raise FloatingPointError("val/loss is nan at step 3: training diverged")

    monkeypatch.setattr(lit_seq.fit, "cli_main", diverge)
    record = execute_run(run, job)
    assert record.status == "failed"
    assert record.error.startswith("FloatingPointError: val/loss is nan")
    assert record.task == "echo" and record.arch == "rnn" and record.metrics == {}

    def nan_test_loss(args):
        return FitResult(task="echo", metrics={"test/loss": math.nan, "test/acc": 0.5})

    monkeypatch.setattr(lit_seq.fit, "cli_main", nan_test_loss)
    record = execute_run(run, job)
    assert record.status == "failed" and "test/loss is nan" in record.error
    json.dumps(record.to_json())  # records are plain JSON


@pytest.mark.integration
def test_a_wandb_failure_is_handled_in_the_fit_and_never_retrains(tmp_path, monkeypatch):
    import wandb

    def no_network(*args, **kwargs):
        raise ConnectionError("api.wandb.ai unreachable")

    fits = []
    real_fit = lit_seq.fit.cli_main
    monkeypatch.setattr(wandb, "init", no_network)
    monkeypatch.setattr(lit_seq.fit, "cli_main", lambda args: fits.append(args) or real_fit(args))
    [run] = echo_rnn_runs(tiny=True)
    record = execute_run(run, GridJob(tmp_path, "g", "online"))
    assert len(fits) == 1  # trained once: W&B trouble never costs a rerun
    assert record.ok and record.steps == 6 and "test/acc" in record.metrics
    assert (
        record.wandb_run == "" and "ConnectionError: api.wandb.ai unreachable" in record.wandb_error
    )
    assert record.warning == f"W&B: {record.wandb_error}"
    assert FitResult.read(record.run_dir).wandb_error == record.wandb_error


@pytest.mark.integration
def test_a_grid_naming_a_paper_writes_its_rows_beside_the_papers(tmp_path):
    body = """paper: deletang2023
blocks:
- name: parity
  config: configs/deletang/parity_check/rnn.yaml
  overrides: {data.init_args.length: 8, model.init_args.d_model: 8, range_eval.max_factor: 2,
              range_eval.step: 4, range_eval.n: 8, range_eval.sub_batch: 8}
"""
    out = tmp_path / "out"
    assert (
        main([str(write_grid(tmp_path, "paper", body)), "--out", str(out), "--wandb", "off"]) == 0
    )
    rows = pd.read_csv(out / "paper.csv")
    assert list(zip(rows["task"], rows["arch"], rows["paper"], strict=True)) == [
        ("parity_check", "rnn", 100.0)
    ]
    # N = 8, range evaluation every 4th length up to 2 N: the score averages lengths 12 and 16
    page = (out / "paper.md").read_text()
    assert "| parity_check | rnn | lengths 12-16 every 4, chance 50 | 100.0 |" in page
