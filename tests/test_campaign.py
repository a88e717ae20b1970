"""The device campaign (lit_seq.campaign): its grid, its time limits, its records' trip back
and forth, and the whole campaign in its tiny mode on this CPU, so that the one script a GPU
loan runs cannot rot between loans."""

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lit_seq.ablate import folder
from lit_seq.ablate.spec import expand, load_spec
from lit_seq.campaign import archive
from lit_seq.campaign.__main__ import main as campaign_main
from lit_seq.campaign.archive import ArchiveError, import_archive, merge_grid, pack_grid
from lit_seq.campaign.limited import run_limited
from lit_seq.campaign.tiny import TINY_BLOCKS, tiny_grid
from lit_seq.record import RunRecord, read_records, write_record
from lit_seq.results.paper import MEMORY_ARCHS, NEW_TASKS
from tests.helpers import REPO

GRID = REPO / "ablations" / "chomsky_gpu.yaml"
STRING_TASKS = {"reverse_string", "stack_manipulation", "duplicate_string", "odds_first"}
STRING_TASKS |= {"binary_addition"}
ARCHS = ("rnn", "lstm", "transformer", *MEMORY_ARCHS)


def test_the_device_grid_is_the_rows_a_cpu_cannot_decide_at_10000_steps_and_their_middle_rate():
    runs = expand(load_spec(GRID))
    assert len(runs) == 68 * 10 and len({r.cell for r in runs}) == 68
    assert {r.seed for r in runs} == set(range(10))
    # configs/deletang/<task>/<arch>.yaml: their protocol's configs, one row each
    rows = {tuple(Path(r.config).parts[-2:]) for r in runs}
    strings = {(t, f"{a}.yaml") for t in STRING_TASKS for a in ARCHS}
    added = {(t, f"{a}.yaml") for t in NEW_TASKS for a in ARCHS}
    assert all(r.config.startswith("configs/deletang/") for r in runs)
    assert rows - strings - added == {
        ("parity_check", "transformer.yaml"),
        ("modular_arithmetic", "transformer.yaml"),
    }
    assert strings | added <= rows
    for run in runs:
        args = dict(a.lstrip("-").split("=", 1) for a in run.overrides if "=" in a)
        assert args["trainer.max_steps"] == "10000"
        assert args["model.init_args.lr"] == "0.0003"  # the middle of their 1e-4, 3e-4, 5e-4


def test_the_campaign_names_a_grid_folders_files_as_the_driver_does():
    assert (archive.FINGERPRINT, archive.GRID_FILE) == (folder.FINGERPRINT, folder.GRID_FILE)


def _record(run_id: str, status: str, cell: str = "c") -> RunRecord:
    return RunRecord(run_id=run_id, cell=cell, status=status, grid="g", finished_at=status)


def _grid_folder(path: Path, fingerprint: str, records: dict[str, str]) -> Path:
    (path / "records").mkdir(parents=True)
    (path / "fingerprint.json").write_text(json.dumps({"fingerprint": fingerprint, "runs": 9}))
    (path / "grid.yaml").write_text("name: g\nruns: []\n")
    for run_id, status in records.items():
        write_record(path, _record(run_id, status))
        (path / "logs").mkdir(exist_ok=True)
        (path / "logs" / f"{run_id}.pack.log").write_text(f"log of {run_id}")
    return path


def test_an_archive_brought_back_adds_new_and_retried_runs_and_keeps_committed_ones(tmp_path):
    device = _grid_folder(
        tmp_path / "device", "f1", {"a__seed=0": "ok", "a__seed=1": "ok", "a__seed=2": "failed"}
    )
    (device / "runs" / "a__seed=0").mkdir(parents=True)  # checkpoints stay on the device
    committed = _grid_folder(
        tmp_path / "committed", "f1", {"a__seed=0": "ok", "a__seed=1": "failed"}
    )
    write_record(committed, RunRecord(run_id="a__seed=0", status="ok", finished_at="first"))
    assert pack_grid(device, tmp_path / "out" / "g.tar.gz") == 3
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["g.tar.gz"]  # no temp file left

    merged = import_archive(tmp_path / "out" / "g.tar.gz", committed)

    assert (merged.taken, merged.kept, merged.failed) == (2, 1, 1)
    records = read_records(committed)
    assert records["a__seed=0"].finished_at == "first"  # an ok run already committed is kept
    assert records["a__seed=1"].ok and not records["a__seed=2"].ok  # retried: now ok
    assert (committed / "logs" / "a__seed=1.pack.log").read_text() == "log of a__seed=1"
    assert not (committed / "runs").exists()


def test_records_of_another_grid_version_are_refused_not_merged(tmp_path, capsys):
    device = _grid_folder(tmp_path / "device", "new", {"a__seed=0": "ok"})
    committed = _grid_folder(tmp_path / "committed", "old", {})
    with pytest.raises(ArchiveError, match="different versions of the grid"):
        merge_grid(device, committed)
    pack_grid(device, tmp_path / "g.tar.gz")
    assert campaign_main(["import", str(tmp_path / "g.tar.gz"), "--into", str(committed)]) == 2
    assert "fingerprint old" in capsys.readouterr().err
    assert not list((committed / "records").iterdir())
    (tmp_path / "junk.tar.gz").write_text("not a tar")
    assert campaign_main(["import", str(tmp_path / "junk.tar.gz"), "--into", str(committed)]) == 2


def _with_digests(folder: Path, digests: dict[str, str]) -> Path:
    marker = {"fingerprint": "-".join(sorted(digests)), "run_digests": digests}
    (folder / "fingerprint.json").write_text(json.dumps(marker))
    (folder / "grid.yaml").write_text(f"name: g\nruns: {sorted(digests)}\n")
    return folder


def test_a_grid_that_only_gained_runs_merges_both_ways_and_the_larger_grid_stays(tmp_path):
    # as the driver's growth rule: seed 2 added, seeds 0 and 1 unchanged
    small = {"a__seed=0": "d0", "a__seed=1": "d1"}
    large = {**small, "a__seed=2": "d2"}
    device = _with_digests(
        _grid_folder(tmp_path / "device", "", {"a__seed=1": "ok", "a__seed=2": "ok"}), large
    )
    committed = _with_digests(_grid_folder(tmp_path / "committed", "", {"a__seed=0": "ok"}), small)
    merged = merge_grid(device, committed)
    assert (merged.taken, merged.kept) == (2, 0)
    assert sorted(read_records(committed)) == sorted(large)
    assert json.loads((committed / "fingerprint.json").read_text())["run_digests"] == large
    assert "a__seed=2" in (committed / "grid.yaml").read_text()

    older = _with_digests(_grid_folder(tmp_path / "older", "", {"a__seed=0": "ok"}), small)
    assert merge_grid(older, committed).kept == 1  # the smaller grid's records into the larger
    assert json.loads((committed / "fingerprint.json").read_text())["run_digests"] == large

    changed = _with_digests(
        _grid_folder(tmp_path / "changed", "", {"a__seed=3": "ok"}),
        {**large, "a__seed=0": "other", "a__seed=3": "d3"},
    )
    with pytest.raises(ArchiveError, match="not one that only gained runs"):
        merge_grid(changed, committed)  # seed 0 computes something else there
    assert "a__seed=3.json" not in {p.name for p in (committed / "records").iterdir()}


def test_a_child_past_its_limit_is_stopped_and_its_streamed_output_is_on_disk(tmp_path):
    log = tmp_path / "child.log"
    child = "import time; print('first line', flush=True); time.sleep(60)"
    start = time.monotonic()
    outcome = run_limited([sys.executable, "-c", child], log, limit_s=1.5)
    assert outcome.stopped == "limit" and outcome.code is None
    assert time.monotonic() - start < 20
    assert "first line" in log.read_text()


def test_a_child_is_stopped_as_soon_as_its_condition_holds(tmp_path):
    flag = tmp_path / "flag"
    child = f"import time, pathlib; pathlib.Path({str(flag)!r}).touch(); time.sleep(60)"
    ticks = []
    outcome = run_limited(
        [sys.executable, "-c", child],
        tmp_path / "child.log",
        limit_s=60.0,
        on_tick=lambda: ticks.append(1),
        stop_when=flag.exists,
        group=False,
    )
    assert outcome.stopped == "condition" and outcome.seconds < 30 and ticks


def test_the_tiny_grid_is_the_device_grid_cut_down(tmp_path):
    path = tiny_grid(GRID, tmp_path)
    runs = expand(load_spec(path))
    assert {r.block for r in runs} == set(TINY_BLOCKS) and {r.seed for r in runs} == {0, 1}
    assert all("--trainer.max_steps=2" in r.overrides for r in runs)
    assert all(r.config.startswith("configs/deletang/reverse_string/") for r in runs)


_FILE_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


@pytest.mark.integration
@pytest.mark.slow  # ~60 s of CPU: two grid drivers, their workers, pytest and the speed rows
def test_the_whole_campaign_runs_on_a_cpu_in_its_tiny_mode_and_resumes(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    command = [sys.executable, "-m", "lit_seq.campaign", "run", "--tiny"]
    done = subprocess.run(
        [*command, "--out", str(out), "--work", str(work)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tests"]["passed"]
    assert summary["speed"]["rows"] == 2 and summary["speed"]["errors"] == 0
    check = summary["chomsky"]
    assert check["passed"], check
    # call A was stopped mid-grid; call B, started from the imported records, trained the rest
    assert 0 < check["ok_after_call_a"] < check["call_b"]["runs"] == 4
    assert check["call_b"]["seeded"] == check["ok_after_call_a"]
    records = read_records(work / "committed")
    assert len(records) == 4 and all(r.ok for r in records.values())
    assert max(r.pack_size for r in records.values()) == 2  # the seeds trained as a population
    # what a device call brings back: at most 8 files, plain names, no folder deeper than 2
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= 8 and all(_FILE_NAME.match(p.name) for p in files)
    assert all(len(p.relative_to(out).parts) <= 3 for p in files)
    assert "chomsky_gpu.tar.gz" in {p.name for p in files}
