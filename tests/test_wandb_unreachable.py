"""W&B with an API key but no reachable server: a short wait, then real offline run files.

Real wandb, no mocks of it: the key is a dummy and the server is a closed local port, so
every online attempt is refused (no request ever leaves this machine).
"""

import time

import pytest

from lit_seq.fit.wandb_logger import start_wandb_logger
from lit_seq.fit.wandb_modes import WANDB_INIT_TIMEOUT_S
from lit_seq.record import METRICS_FILE
from tests.helpers import REPO, tiny_fit

CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens there

# far above the bounded start (WANDB_INIT_TIMEOUT_S plus start-ups on a shared, slow
# machine), far below the ~100 s+ that an unbounded wandb.init waits without a server
BOUND_S = 60.0


@pytest.fixture
def unreachable_server(monkeypatch):
    """A W&B API key is configured, and the W&B server cannot be reached."""
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef" * 2 + "01234567")  # 40 characters
    monkeypatch.setenv("WANDB_BASE_URL", CLOSED_PORT)
    monkeypatch.delenv("WANDB_MODE", raising=False)  # tests/conftest.py forces offline


def test_the_online_bound_is_a_few_seconds():
    assert 0 < WANDB_INIT_TIMEOUT_S <= 15


@pytest.mark.integration
def test_online_without_a_server_falls_back_to_offline_run_files(tmp_path, unreachable_server):
    started = time.perf_counter()
    logger, note = start_wandb_logger("online", project="p", name="n", save_dir=str(tmp_path))
    seconds = time.perf_counter() - started
    print(f"start_wandb_logger('online') without a server: {seconds:.1f} s")
    assert seconds < BOUND_S
    assert logger is not None, note
    # wandb words the failure its own way (connection refused, deadline exceeded, ...)
    assert note.startswith("W&B online failed (")
    [run] = (tmp_path / "wandb").glob("offline-run-*")
    assert f"logged offline instead: wandb sync {run} uploads it" in note
    assert logger.run_path() == str(run)
    logger.log_metrics({"train/loss": 0.5}, step=1)
    logger.finish()
    assert not logger.error
    assert list(run.glob("run-*.wandb")), "no offline W&B run file was written"


@pytest.mark.integration
def test_a_fit_without_a_server_trains_and_logs_offline(tmp_path, unreachable_server):
    run_dir = tmp_path / "run"
    result = tiny_fit(REPO / "configs" / "echo" / "rnn.yaml", run_dir, "--wandb=online")
    assert result.steps == 6 and (run_dir / METRICS_FILE).is_file()
    assert "W&B online failed" in result.wandb_error
    [run] = (run_dir / "wandb").glob("offline-run-*")
    assert list(run.glob("run-*.wandb")), "no offline W&B run file was written"
    assert result.wandb_run == str(run)
