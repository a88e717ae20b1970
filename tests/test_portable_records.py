"""Records name their files relative to their folder: a grid folder moved, copied or cloned
elsewhere still reports the same tables and evaluates its runs (issue 55 item 5)."""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.evaluate import evaluate
from lit_seq.record import FitResult, RunRecord, read_records, write_record
from lit_seq.results.report import build_report
from lit_seq.util.folder_paths import relative_to_folder, resolve_in_folder
from tests.helpers import REPO, write_grid

_SPEC = importlib.util.spec_from_file_location("portable", REPO / "scripts/portable_records.py")
portable = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(portable)

COMMITTED = REPO / "docs" / "results" / "mixers_modular_6k"  # 32 records, absolute paths


def _strings(value) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _outputs(out_dir: Path) -> dict[str, bytes]:
    """The report's tables of ``out_dir``: every csv and md file it holds."""
    return {
        p.name: p.read_bytes() for p in sorted(out_dir.glob("*.csv")) + sorted(out_dir.glob("*.md"))
    }


def test_a_path_inside_the_folder_is_stored_relative_and_read_back_where_the_folder_is(tmp_path):
    grid = tmp_path / "grid"
    assert relative_to_folder(str(grid / "runs/a/last.ckpt"), grid) == "runs/a/last.ckpt"
    assert relative_to_folder("/elsewhere/my.yaml", grid) == "/elsewhere/my.yaml"  # not its own
    assert relative_to_folder("", grid) == ""
    moved = tmp_path / "moved"
    assert resolve_in_folder("runs/a/last.ckpt", moved) == str(moved / "runs/a/last.ckpt")
    # an old record's absolute path, written in /old/grid: the same place in the folder read
    old = "/old/grid/runs/a/last.ckpt"
    assert resolve_in_folder(old, moved, Path("/old/grid")) == str(moved / "runs/a/last.ckpt")
    assert resolve_in_folder("/elsewhere/my.yaml", moved, Path("/old/grid")) == "/elsewhere/my.yaml"


def test_a_record_written_in_one_folder_reads_its_paths_in_a_copy(tmp_path):
    out = tmp_path / "out"
    record = RunRecord(
        run_id="a",
        run_dir=str(out / "runs/a"),
        best_checkpoint=str(out / "runs/a/checkpoints/best-step=4.ckpt"),
        last_checkpoint=str(out / "runs/a/checkpoints/last.ckpt"),
        log=str(out / "logs/a.log"),
        wandb_run=str(out / "runs/a/wandb/offline-run-20250101_000000-x1"),
        config="configs/echo/rnn.yaml",
        status="ok",
    )
    stored = json.loads(write_record(out, record).read_text())
    assert stored["run_dir"] == "runs/a" and stored["log"] == "logs/a.log"
    assert stored["best_checkpoint"] == "runs/a/checkpoints/best-step=4.ckpt"
    assert stored["wandb_run"] == "runs/a/wandb/offline-run-20250101_000000-x1"
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(out, copy)
    read = read_records(copy)["a"]
    assert read.run_dir == str(copy / "runs/a") and read.log == str(copy / "logs/a.log")
    assert read.last_checkpoint == str(copy / "runs/a/checkpoints/last.ckpt")
    assert read.wandb_run == str(copy / "runs/a/wandb/offline-run-20250101_000000-x1")
    # online, wandb_run is entity/project/id: no path, stored and read as it is
    online = RunRecord(run_id="b", run_dir=str(out / "runs/b"), wandb_run="me/proj/abc123")
    write_record(out, online)
    assert read_records(out)["b"].wandb_run == "me/proj/abc123"


def test_a_run_folders_metrics_json_is_relative_to_the_run_folder(tmp_path):
    run = tmp_path / "run"
    result = FitResult(
        run_dir=str(run),
        best_checkpoint=str(run / "checkpoints/best-step=4.ckpt"),
        last_checkpoint=str(run / "checkpoints/last.ckpt"),
    )
    stored = json.loads(result.write(run).read_text())
    assert (stored["run_dir"], stored["last_checkpoint"]) == (".", "checkpoints/last.ckpt")
    moved = tmp_path / "moved"
    run.rename(moved)
    read = FitResult.read(moved)
    assert read.run_dir == str(moved)
    assert read.best_checkpoint == str(moved / "checkpoints/best-step=4.ckpt")


def _as_written_before(data: dict, root: str) -> dict:
    """A committed record as the grid wrote it before paths were relative: each path absolute
    under ``root``, the machine's folder (the committed records were once all this form)."""
    fields = [k for k in RunRecord.from_json(data).path_fields() if data.get(k)]
    absolute = {k: data[k] if data[k].startswith("/") else f"{root}/{data[k]}" for k in fields}
    return {**data, **absolute}


def test_the_rewrite_of_old_records_changes_paths_alone_and_reports_the_same(tmp_path):
    old = tmp_path / "old"
    (old / "records").mkdir(parents=True)
    machine = "/work/main/docs/results/mixers_modular_6k"  # not a folder here
    for path in (COMMITTED / "records").iterdir():
        data = _as_written_before(json.loads(path.read_text()), machine)
        (old / "records" / path.name).write_text(json.dumps(data, indent=2, sort_keys=True))
    new = tmp_path / "elsewhere" / "new"  # the rewritten copy, in another place and name
    shutil.copytree(old, new)
    before = {p.name: json.loads(p.read_text()) for p in (new / "records").iterdir()}
    assert portable.main([str(new)]) == 0
    after = {p.name: json.loads(p.read_text()) for p in (new / "records").iterdir()}
    assert before.keys() == after.keys() and len(after) == 32
    paths = set(portable.PATH_FIELDS)
    for name, data in after.items():
        assert {k: v for k, v in data.items() if k not in paths} == {
            k: v for k, v in before[name].items() if k not in paths
        }, name  # every metric, curve and setting equal
        assert not any(s.startswith("/") for s in _strings(data)), name
        run_id = data["run_id"]
        assert data["run_dir"] == f"runs/{run_id}" and data["log"] == f"logs/{run_id}.log"
        # the committed file is the rewritten form, byte for byte
        assert (COMMITTED / "records" / name).read_text() == (new / "records" / name).read_text()
    assert portable.rewrite_folder(new) == 0  # once: a second pass has nothing to change
    build_report(old)
    build_report(new)
    assert _outputs(new) == _outputs(old) and len(_outputs(old)) >= 10
    assert "runs/modular_mixers__arch=mamba__lr=0.01__seed=101/checkpoints/best-step=" in (
        (new / "runs.csv").read_text()
    )


@pytest.mark.integration
def test_a_tiny_grid_holds_no_absolute_path_and_reports_and_evaluates_when_moved(tmp_path):
    body = "seeds: [0]\nblocks:\n- {name: e, axes: {task: [echo], arch: [rnn]}}\n"
    out = tmp_path / "out"
    assert (
        main([str(write_grid(tmp_path, "portable", body)), "--out", str(out), "--wandb", "off"])
        == 0
    )
    [record_file] = (out / "records").iterdir()
    run_id = record_file.stem
    for stored in (record_file, out / "runs" / run_id / "metrics.json"):
        data = json.loads(stored.read_text())
        assert not [s for s in _strings(data) if s.startswith("/")], stored.name
    tables = _outputs(out)
    assert f"runs/{run_id}/checkpoints/best-step=" in tables["runs.csv"].decode()
    moved = tmp_path / "elsewhere" / "renamed"
    shutil.move(out, moved)
    build_report(moved)
    assert _outputs(moved) == tables
    record = read_records(moved)[run_id]
    assert Path(record.best_checkpoint).is_file() and Path(record.log).is_file()
    path, result = evaluate(Path(record.run_dir))
    assert path.parent == moved / "runs" / run_id
    assert Path(result["checkpoint"]).is_relative_to(moved)
