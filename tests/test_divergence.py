"""A diverged fit ends in one line, ``status: diverged``, exit 1: every architecture alike.

The rule (``lit_seq.systems.base.divergence``): a loss that is not finite, or more than
``DIVERGED_FACTOR`` x the first training loss. Before it, echo / transformer at lr 1e30 ended
in a 50-line traceback and echo / rnn (loss 2.8e30, finite) ended ``status: ok``, exit 0.
"""

import math
import os
import subprocess
import sys

import pytest

from lit_seq.systems.base import DIVERGED_FACTOR, divergence
from tests.helpers import REPO


def test_the_rule_names_what_diverged():
    assert divergence(math.nan, 0.7) == "is nan"
    assert divergence(math.inf, None) == "is inf"
    assert divergence(2.8e30, 0.693) == ("is 2.8e+30 (over 1e+06 x the first training loss, 0.693)")
    # a first loss below 1 does not make a small loss a divergence: the bound is >= 1e6
    assert divergence(10.0, 1e-9) == ""
    assert divergence(0.99 * DIVERGED_FACTOR, 0.5) == ""
    assert divergence(5.0, None) == ""  # no first loss known: only non-finite counts


@pytest.mark.integration
@pytest.mark.parametrize("arch", ["rnn", "lstm", "transformer"])
def test_a_diverged_fit_is_one_line_status_diverged_exit_1(arch, tmp_path):
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "lit_seq.fit",
        "--config",
        f"configs/echo/{arch}.yaml",
        "--model.lr=1e30",
        "--trainer.max_steps=20",
        "--trainer.val_check_interval=10",
        "--data.init_args.n_train=256",
        "--trainer.limit_val_batches=2",
        "--trainer.enable_progress_bar=false",
        "--wandb=off",
        f"--run_dir={run_dir}",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith("lit_seq.fit: status: diverged: ")
    assert "at step 10: training diverged" in lines[0]
    assert lines[0].endswith(f"; run folder {run_dir}")
    assert "Traceback" not in result.stdout + result.stderr
    assert not (run_dir / "metrics.json").exists()
