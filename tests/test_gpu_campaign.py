"""``scripts/gpu_campaign.py``: the GPU grid's records packed on a time-limited machine and
taken back here, and its grid stage run on this CPU, so that the script a GPU machine runs
cannot rot between uses."""

import importlib.util
import json
from pathlib import Path

import pytest

from lit_seq.ablate import folder
from lit_seq.record import RunRecord, read_records, write_record
from tests.helpers import REPO, write_grid

_SPEC = importlib.util.spec_from_file_location("gpu_campaign", REPO / "scripts/gpu_campaign.py")
campaign = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(campaign)


def test_the_script_names_a_grid_folders_files_as_the_driver_does():
    assert campaign.FOLDER_FILES == (folder.FINGERPRINT, folder.GRID_FILE)


def _grid_folder(path: Path, records: dict[str, str], digests: dict[str, str]) -> Path:
    """A grid folder with ``records`` (run id -> status) and a fingerprint of ``digests``."""
    (path / "records").mkdir(parents=True)
    marker = {"fingerprint": "-".join(f"{k}:{v}" for k, v in sorted(digests.items()))}
    (path / "fingerprint.json").write_text(json.dumps({**marker, "run_digests": digests}))
    (path / "grid.yaml").write_text(f"name: g\nruns: {sorted(digests)}\n")
    (path / "logs").mkdir()
    for run_id, status in records.items():
        write_record(path, RunRecord(run_id=run_id, cell="c", status=status, finished_at=status))
        (path / "logs" / f"{run_id}.pack.log").write_text(f"log of {run_id}")
    return path


DIGESTS = {"a__seed=0": "d0", "a__seed=1": "d1", "a__seed=2": "d2"}


def test_an_archive_brought_back_adds_new_and_retried_runs_and_keeps_committed_ones(tmp_path):
    device = _grid_folder(
        tmp_path / "device", {"a__seed=0": "ok", "a__seed=1": "ok", "a__seed=2": "failed"}, DIGESTS
    )
    (device / "runs" / "a__seed=0").mkdir(parents=True)  # checkpoints stay on the device
    committed = _grid_folder(tmp_path / "committed", {"a__seed=1": "failed"}, DIGESTS)
    write_record(committed, RunRecord(run_id="a__seed=0", status="ok", finished_at="first"))
    assert campaign.pack(device, tmp_path / "g.tar.gz") == 3

    assert campaign.main(["import", str(tmp_path / "g.tar.gz"), "--into", str(committed)]) == 0

    records = read_records(committed)
    assert records["a__seed=0"].finished_at == "first"  # an ok run already committed is kept
    assert records["a__seed=1"].ok and not records["a__seed=2"].ok  # retried: now ok
    assert (committed / "logs" / "a__seed=1.pack.log").read_text() == "log of a__seed=1"
    assert not (committed / "runs").exists()


def test_a_grid_that_gained_runs_is_taken_and_another_version_is_refused(tmp_path, capsys):
    small = {k: v for k, v in DIGESTS.items() if k != "a__seed=2"}
    committed = _grid_folder(tmp_path / "committed", {"a__seed=0": "ok"}, small)
    grown = _grid_folder(tmp_path / "grown", {"a__seed=2": "ok"}, DIGESTS)  # seed 2 added
    campaign.pack(grown, tmp_path / "grown.tar.gz")
    assert campaign.import_archive(tmp_path / "grown.tar.gz", committed) == (1, 0)
    assert json.loads((committed / "fingerprint.json").read_text())["run_digests"] == DIGESTS

    other = _grid_folder(tmp_path / "other", {"a__seed=1": "ok"}, {**DIGESTS, "a__seed=0": "x"})
    campaign.pack(other, tmp_path / "other.tar.gz")
    assert campaign.main(["import", str(tmp_path / "other.tar.gz"), "--into", str(committed)]) == 2
    assert "another version of the grid" in capsys.readouterr().err
    assert sorted(read_records(committed)) == ["a__seed=0", "a__seed=2"]
    (tmp_path / "junk.tar.gz").write_text("not a tar")
    assert campaign.main(["import", str(tmp_path / "junk.tar.gz"), "--into", str(committed)]) == 2


@pytest.mark.integration
def test_the_grid_stage_runs_a_grid_to_its_archive_on_a_cpu(tmp_path):
    grid = write_grid(
        tmp_path, "tiny", "seeds: [0, 1]\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    )
    out, into = tmp_path / "out", tmp_path / "device_copy"
    flags = ["--stages", "grid", "--grid", str(grid), "--into", str(into), "--out", str(out)]
    assert campaign.main(["run", *flags, "--workers", "1", "--compile", "off"]) == 0
    # what comes back: the grid's console and one archive, not a folder of files
    assert sorted(p.name for p in out.iterdir()) == ["chomsky_gpu.log", "chomsky_gpu.tar.gz"]
    committed = tmp_path / "committed"
    assert campaign.import_archive(out / "chomsky_gpu.tar.gz", committed) == (2, 0)
    records = read_records(committed)
    assert len(records) == 2 and all(r.ok for r in records.values())
    assert max(r.pack_size for r in records.values()) == 2  # the seeds as one population
