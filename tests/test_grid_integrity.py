"""A grid folder is never mixed, never touched by a refused driver, never reported short;
a full disk stops a grid or a fit in one line, and the rerun resumes."""

import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.folder import FINGERPRINT, check_out_dir, init_out_dir
from lit_seq.ablate.grid import load_grid
from lit_seq.fit.cli import resume_command
from lit_seq.report import main as report_main
from lit_seq.results.report import NoRecords, build_report
from tests.helpers import REPO, SMOKE, driver, write_grid


def _grid_with_own_base(tmp_path: Path, d_model: int) -> Path:
    base = tmp_path / "base.yaml"
    text = (REPO / "configs" / "echo" / "rnn.yaml").read_text()
    base.write_text(text.replace("d_model: 32", f"d_model: {d_model}"))
    grid = tmp_path / "own.yaml"
    grid.write_text(f"name: own\nseeds: [0, 1]\nblocks:\n- {{name: b, config: {base}}}\n")
    return grid


def test_editing_a_base_config_changes_the_runs_identity_and_the_resume_is_refused(tmp_path):
    # the reported repro: same ids and arguments, other contents; a resume must not mix them
    grid = _grid_with_own_base(tmp_path, d_model=32)
    out = tmp_path / "out"
    spec, runs = load_grid(grid)
    init_out_dir(out, spec, runs)
    assert check_out_dir(out, "own", runs)  # the same grid: resumable

    edited = _grid_with_own_base(tmp_path, d_model=8)
    _, edited_runs = load_grid(edited)
    assert [r.run_id for r in edited_runs] == [r.run_id for r in runs]
    assert [r.overrides for r in edited_runs] == [r.overrides for r in runs]
    with pytest.raises(ValueError, match=r"b__seed=0, b__seed=1 would compute something else"):
        check_out_dir(out, "own", edited_runs)


def test_only_a_grid_that_gained_runs_grows_a_folder(tmp_path):
    # the growth rule: runs added, none dropped, none changed
    grid = _grid_with_own_base(tmp_path, d_model=32)
    out = tmp_path / "out"
    spec, runs = load_grid(grid)
    assert init_out_dir(out, spec, runs) == []  # a new folder gains nothing: it is made
    grid.write_text(grid.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2]"))
    spec3, runs3 = load_grid(grid)
    assert check_out_dir(out, "own", runs3)
    assert init_out_dir(out, spec3, runs3) == ["b__seed=2"]
    assert init_out_dir(out, spec3, runs3) == []  # grown once: the same grid now
    assert set(json.loads((out / FINGERPRINT).read_text())["run_digests"]) == {
        r.run_id for r in runs3
    }
    with pytest.raises(ValueError, match=r"b__seed=2 would compute something else or is no "):
        check_out_dir(out, "own", runs)  # dropping a run is refused
    edited = _grid_with_own_base(tmp_path, d_model=8)
    edited.write_text(edited.read_text().replace("seeds: [0, 1]", "seeds: [0, 1, 2, 3]"))
    _, edited_runs = load_grid(edited)
    with pytest.raises(ValueError, match=r"b__seed=0, b__seed=1, b__seed=2 would compute"):
        check_out_dir(out, "own", edited_runs)  # gaining a run does not excuse a change


def test_adding_a_selection_seed_or_rate_changes_the_selected_runs_and_is_refused(tmp_path):
    # reported runs trained at the value chosen on seeds 100-102; more selection seeds could
    # choose another, so those runs would compute something else
    body = (
        "seeds: [0]\nblocks:\n- name: b\n  axes: {task: [echo], arch: [rnn], lr: [0.001, 0.003, 0.01, 0.03]}"
        "\n  select: {axis: lr, seeds: [100, 101, 102]}\n"
    )
    grid = write_grid(tmp_path, "sel", body)
    out = tmp_path / "out"
    spec, runs = load_grid(grid)
    init_out_dir(out, spec, runs)
    text = grid.read_text()
    grid.write_text(text.replace("101, 102]", "101, 102, 103]"))
    _, more_seeds = load_grid(grid)
    grid.write_text(text.replace("0.03]", "0.03, 0.1]"))  # a candidate rate added
    _, more_rates = load_grid(grid)
    for more in (more_seeds, more_rates):  # each adds runs, and each changes the waiting one
        assert len(more) > len(runs)
        with pytest.raises(ValueError, match=r"b__task=echo__arch=rnn__lr=selected__seed=0 woul"):
            check_out_dir(out, "sel", more)


def test_a_folder_from_before_run_digests_is_still_checked_by_its_fingerprint(tmp_path):
    spec, runs = load_grid(SMOKE)
    out = tmp_path / "out"
    init_out_dir(out, spec, runs)
    marker = json.loads((out / FINGERPRINT).read_text())
    del marker["run_digests"]  # as an older lit_seq wrote it
    (out / FINGERPRINT).write_text(json.dumps(marker))
    assert check_out_dir(out, spec["name"], runs)
    with pytest.raises(ValueError, match="made by a different grid"):
        check_out_dir(out, spec["name"], runs[:-1])


def test_a_truncated_fingerprint_is_named_in_one_line(tmp_path):
    spec, runs = load_grid(SMOKE)
    out = tmp_path / "out"
    init_out_dir(out, spec, runs)
    (out / FINGERPRINT).write_text('{"grid": "sm')
    with pytest.raises(ValueError, match="fingerprint.json' is unreadable"):
        check_out_dir(out, spec["name"], runs)


def test_a_driver_refused_for_a_folder_in_use_changes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    spec, runs = load_grid(SMOKE)
    init_out_dir(out, spec, runs)
    planted = out / "records" / ".smoke_run.json.tmp"  # the running driver's in-flight record
    planted.write_text("half")
    with open(out / ".lock", "a") as held:  # the running driver's lock
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*"))
        assert main([str(SMOKE), "--out", str(out), "--wandb", "off"]) == 2
    assert "is in use by another lit_seq.ablate" in capsys.readouterr().err
    assert planted.read_text() == "half"
    assert sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*")) == before


def test_report_refuses_a_folder_with_an_unreadable_record(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "records").mkdir(parents=True)
    (out / "records" / "a__seed=0.json").write_text('{"run_id": "a__seed=0", "status": "ok"}')
    (out / "records" / "a__seed=1.json").write_text('{"run_id": "a__se')  # truncated
    with pytest.raises(NoRecords, match=r"1 record\(s\) .* cannot be read \(a__seed=1.json\)"):
        build_report(out)
    assert report_main([str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (out / "runs.csv").exists()


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB filesystem of its own (tmpfs; needs root, as CI has), unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)]).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)])


@pytest.mark.integration
def test_a_full_disk_stops_a_grid_in_one_line_and_the_rerun_resumes(small_disk, tmp_path):
    grid = write_grid(
        tmp_path, "full", "seeds: [0, 1]\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    )
    out = small_disk / "out"
    filler = small_disk / "filler"
    filler.write_bytes(b"x" * (3 * 1024 * 1024 - 64 * 1024))  # 64 KB left: no room for a run
    result = driver(grid, "--out", out, "--wandb", "off")
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        f"lit_seq.ablate: error: the disk holding {out} is full; free space, then run the "
        "same command to resume"
    ]
    for record in (out / "records").glob("*.json"):  # whatever is there is whole
        json.loads(record.read_text())
    filler.unlink()
    shutil.rmtree(out / "logs", ignore_errors=True)
    # the rerun: the driver's code in this process (the failed call's one line is a process's)
    assert main([str(grid), "--out", str(out), "--wandb", "off"]) == 0
    assert len(list((out / "records").glob("*.json"))) == 2


@pytest.mark.integration
def test_two_drivers_started_at_once_give_one_grid_and_one_clear_in_use(tmp_path):
    grid = write_grid(
        tmp_path, "twice", "seeds: [0, 1, 2, 3]\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    )
    out = tmp_path / "out"
    command = [sys.executable, "-m", "lit_seq.ablate", str(grid), "--out", str(out)]
    procs = [
        subprocess.Popen(
            [*command, "--wandb", "off"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    errors = [err for code, _, err in results if code == 2]
    assert codes == [0, 2], results
    assert errors[0].strip().endswith("is in use by another lit_seq.ablate"), errors
    assert len(list((out / "records").glob("*.json"))) == 4


@pytest.mark.integration
def test_a_full_disk_stops_a_fit_in_one_line_and_the_resume_finishes_it(small_disk):
    run_dir = small_disk / "run"
    command = [sys.executable, "-m", "lit_seq.fit", "--config", "configs/echo/rnn.yaml"]
    command += ["--trainer.max_steps=40", "--trainer.val_check_interval=10", "--wandb=off"]
    command += [f"--run_dir={run_dir}", "--trainer.enable_progress_bar=false"]
    filler = small_disk / "filler"
    filler.write_bytes(b"x" * (3 * 1024 * 1024 - 40 * 1024))  # room for the start, not the run
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"lit_seq.fit: error: the disk holding {run_dir} is full; free space, then resume with: "
        f"{resume_command(run_dir)}"
    )
    assert "Traceback" not in result.stderr
    assert not (run_dir / "metrics.json").exists()
    filler.unlink()
    resumed = subprocess.run(
        [*command, "--ckpt_path=last"]
        if (run_dir / "checkpoints" / "last.ckpt").exists()
        else command,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run_dir / "metrics.json").read_text())["steps"] == 40


def test_a_digest_ignores_options_at_none_so_a_new_null_option_keeps_a_folder_resumable():
    from lit_seq.ablate.grid import config_digest
    from lit_seq.fit import check_config

    config = check_config(["--config", "configs/echo/rnn.yaml"]).config
    before = config_digest(config)
    newer = config.clone()
    newer.model.init_args["an_option_added_later"] = None  # its default: the old behaviour
    assert config_digest(newer) == before
    newer.model.init_args["an_option_added_later"] = 4  # set: the run computes otherwise
    assert config_digest(newer) != before


def test_report_of_a_grid_still_on_its_selection_seeds_has_no_cells_yet(tmp_path):
    from lit_seq.record import RunRecord, write_record

    out = tmp_path / "out"
    for i, seed in enumerate([100, 101]):
        write_record(
            out,
            RunRecord(
                run_id=f"b__lr=0.01__seed={seed}", block="b", cell="b__lr=0.01", task="echo",
                arch="rnn", axes={"lr": 0.01}, axis_order=["lr"], seed=seed, status="ok",
                main_metric="acc", metrics={"test/acc": 0.5}, select_axis="lr",
                select_metric="val/acc", select_group="b__lr=selected", select_seeds=[100, 101],
                index=i,
            ),
        )  # fmt: skip
    runs, aggregate, _ = build_report(out)
    assert len(runs) == 2 and aggregate.empty
    assert "Nothing to test" in (out / "comparisons.md").read_text()
