"""Every bad input is one clear line naming the field and what is allowed, before training."""

import os
import subprocess
import sys

import pytest

from lit_seq.fit import BadInput, build_cli
from tests.helpers import REPO

SIGNAL = str(REPO / "configs" / "signal" / "transformer.yaml")
ECHO = str(REPO / "configs" / "echo" / "lstm.yaml")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--config", SIGNAL, "--model.arch=gru"],
            r"arch='gru' is not one of \['transformer', 'rnn', 'lstm'\]",
        ),
        (["--config", SIGNAL, "--model.pos_mode=rotary"], r"pos_mode='rotary' is not one of"),
        (["--config", SIGNAL, "--model.readout=max"], r"readout='max' is not one of"),
        (["--config", SIGNAL, "--model.n_heads=5"], r"d_model.*n_heads"),
        (["--config", SIGNAL, "--model.schedule=step"], r"schedule='step' is not one of"),
        (
            ["--config", ECHO, "--model.init_args.causal=true", "--model.bidirectional=true"],
            r"bidirectional",
        ),
        (["--config", SIGNAL, "--data.length=0"], r"length"),
        (["--config", SIGNAL, "--wandb=maybe"], r"wandb='maybe' is not one of"),
        (["--config", "configs/nope/transformer.yaml"], r"nope"),
        (["--config", SIGNAL, "--data", "lit_seq.data.NoSuchTask"], r"NoSuchTask"),
        (
            ["--config", ECHO, "--model=lit_seq.systems.StepRegression"],
            r"model=StepRegression trains 'regression' tasks, but task 'echo' is 'binary'",
        ),
    ],
)
def test_bad_input_is_one_clear_line(args, expected, tmp_path):
    with pytest.raises(BadInput, match=expected) as error:
        build_cli([*args, f"--run_dir={tmp_path / 'run'}"])
    assert "\n" not in str(error.value)


def test_malformed_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(BadInput) as error:
        build_cli(["--config", str(bad), f"--run_dir={tmp_path / 'run'}"])
    assert "\n" not in str(error.value)


def test_unwritable_run_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(BadInput, match="run_dir=.* is not writable"):
        build_cli(["--config", SIGNAL, f"--run_dir={blocker / 'run'}"])


@pytest.mark.integration
def test_command_line_prints_one_line_and_exits_2(tmp_path):
    env = {**os.environ, "WANDB_MODE": "offline"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lit_seq.fit",
            "--config",
            SIGNAL,
            "--model.arch=gru",
            f"--run_dir={tmp_path / 'run'}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == ["lit_seq.fit: error: arch='gru' is not one of ['transformer', 'rnn', 'lstm']"]
    assert "Traceback" not in result.stdout + result.stderr
