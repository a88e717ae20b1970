"""The Python API (``lit_seq.fit_one``, ``lit_seq.run_grid``): typed results, re-runnable in
one process, deaf to ``sys.argv``, quiet for the call only, light to import."""

import logging
import subprocess
import sys

import pytest
import yaml

import lit_seq
from lit_seq.fit import BadInput
from lit_seq.util.assets import config_file
from lit_seq.util.runtime import QUIET_LOGGERS
from tests.helpers import REPO, TINY, TINY_GRID

# helpers.TINY as a mapping, with the grid keys' short names where there is one
TINY_AS_MAPPING = {
    "steps": 6,
    "val_every": 3,
    "trainer.limit_val_batches": 2,
    "trainer.limit_test_batches": 2,
    "trainer.enable_progress_bar": False,
    "trainer.enable_model_summary": False,
    "wandb.mode": "off",
}


def test_importing_lit_seq_and_its_api_loads_no_torch():
    code = "import sys, lit_seq, lit_seq.api; lit_seq.fit_one; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_resume_needs_its_run_folder():
    with pytest.raises(ValueError, match="give its run folder"):
        lit_seq.fit_one("configs/echo/rnn.yaml", resume=True)


@pytest.mark.integration
def test_two_fits_in_one_process_two_folders_same_metrics(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default run folders: runs/ here
    monkeypatch.setattr(sys, "argv", ["ipykernel_launcher.py", "-f", "/junk/kernel.json"])
    levels = [logging.getLogger(n).level for n in QUIET_LOGGERS]
    first = lit_seq.fit_one("configs/echo/rnn.yaml", TINY)
    # the same config again, as a dict; its overrides as a mapping
    content = yaml.safe_load(config_file("configs/echo/rnn.yaml").read_text())
    second = lit_seq.fit_one(content, TINY_AS_MAPPING)
    assert first.run_dir != second.run_dir
    assert first.run_dir.parent == second.run_dir.parent == tmp_path / "runs"
    assert first.metrics == second.metrics and "test/acc" in first.metrics
    assert first.val_metrics == second.val_metrics
    assert first.last_checkpoint.is_file() and first.best_checkpoint.is_file()
    assert first.run_dir == (tmp_path / first.record.run_dir).absolute()
    assert [logging.getLogger(n).level for n in QUIET_LOGGERS] == levels  # quiet for the call
    with pytest.raises(BadInput, match="already holds a finished run"):  # no silent overwrite
        lit_seq.fit_one("configs/echo/rnn.yaml", TINY, run_dir=first.run_dir)


@pytest.mark.integration
def test_a_grid_from_a_dict_returns_its_runs_table_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["junk", "--workers", "9", "not-a-grid.yaml"])
    grid = {
        "name": "api",
        "seeds": [0],
        **yaml.safe_load(TINY_GRID),
        "blocks": [{"config": "configs/echo/rnn.yaml", "axes": {"lr": [0.003, 0.03]}}],
    }
    done = lit_seq.run_grid(grid, out=tmp_path / "out", wandb="off")
    assert done.status == 0 and done.failed == []
    assert list(done.runs["run_id"]) == ["block0__lr=0.003__seed=0", "block0__lr=0.03__seed=0"]
    assert done.runs["test/acc"].between(0, 1).all()
    assert len(done.aggregate) == 2  # one row per cell
    again = lit_seq.run_grid(grid, out=tmp_path / "out", wandb="off")  # a resume: 0 to run
    assert again.status == 0 and again.runs.equals(done.runs)


@pytest.mark.integration
def test_the_python_api_example_runs(tmp_path):
    example = REPO / "examples" / "python_api.py"
    done = subprocess.run(
        [sys.executable, str(example), str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "fit: test/acc" in done.stdout
    assert "block0__lr=0.001__seed=0" in done.stdout and "block0__lr=0.01__seed=0" in done.stdout
    assert (tmp_path / "grid" / "runs.csv").is_file() and (tmp_path / "fit").is_dir()
