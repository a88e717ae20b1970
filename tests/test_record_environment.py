"""Every record says where its numbers came from: commit, versions, device, threads,
precision, determinism; records written before these fields still read."""

import dataclasses
import json
import platform
import subprocess

import lightning
import pytest
import torch

from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.run_one import execute_run
from lit_seq.record import ENVIRONMENT_FIELDS, FitResult, RunRecord
from lit_seq.results.tables import runs_table
from lit_seq.util.assets import PACKAGE_DIR
from lit_seq.util.environment import cpu_model, fit_environment, git_revision
from tests.helpers import REPO, echo_rnn_runs, tiny_fit

ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=PACKAGE_DIR, capture_output=True, text=True, check=True
    ).stdout.strip()


def _expected_on_this_machine() -> dict:
    """What a CPU fit in this process must record (the commit: see the git test)."""
    return {
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "lightning_version": lightning.__version__,
        "device": "cpu",
        "device_name": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cuda_version": "",
        "cudnn_version": "",
        "torch_threads": torch.get_num_threads(),
        "precision": "32-true",
        "deterministic": torch.are_deterministic_algorithms_enabled(),
    }


def test_the_environment_fields_are_the_records_fields():
    fields = {f.name for f in dataclasses.fields(FitResult)}
    assert set(ENVIRONMENT_FIELDS) <= fields
    environment = fit_environment(torch.device("cpu"), "32-true")
    assert list(environment) == ENVIRONMENT_FIELDS
    assert environment | _expected_on_this_machine() == environment  # every value as expected
    assert environment["cpu_capability"] in {
        "DEFAULT",
        "NO AVX",
        "AVX2",
        "AVX512",
        "VSX",
        "ZVECTOR",
    }
    assert environment["device_name"]  # a CPU model, never blank
    json.dumps(environment)  # plain JSON, as records are


def test_the_commit_is_the_checkouts_and_dirty_ignores_untracked_files():
    commit, dirty = git_revision()
    assert commit == _git("rev-parse", "--short", "HEAD")
    assert dirty == bool(_git("status", "--porcelain", "--untracked-files=no"))


def test_a_record_written_before_these_fields_reads_with_blanks():
    old = {"task": "echo", "metrics": {"test/acc": 0.5}, "run_id": "x", "status": "ok"}
    record = RunRecord.from_json(old)
    assert (record.torch_version, record.torch_threads, record.lit_seq_dirty) == ("", None, None)
    table = runs_table([record])
    assert set(ENVIRONMENT_FIELDS) <= set(table.columns)
    assert table.loc[0, "torch_version"] == ""


@pytest.mark.integration
def test_a_fits_metrics_json_and_a_grid_record_carry_the_environment(tmp_path):
    commit, dirty = git_revision()
    expected = _expected_on_this_machine() | {"lit_seq_commit": commit, "lit_seq_dirty": dirty}
    tiny_fit(ECHO_RNN, tmp_path / "fit")
    written = json.loads((tmp_path / "fit" / "metrics.json").read_text())
    assert {k: written[k] for k in ENVIRONMENT_FIELDS} == expected
    [run] = echo_rnn_runs(tiny=True)
    record = execute_run(run, GridJob(tmp_path / "grid", "g", "off"))
    assert record.ok, record.error
    assert {k: getattr(record, k) for k in ENVIRONMENT_FIELDS} == expected
    row = runs_table([record]).iloc[0]  # and runs.csv shows them
    assert (row["torch_version"], row["device"], row["precision"]) == (
        torch.__version__,
        "cpu",
        "32-true",
    )
