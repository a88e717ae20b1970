"""Every bad input is one clear line naming the field and what is allowed, before training."""

import os
import subprocess
import sys

import pytest

from lit_seq.fit import BadInput, build_cli, check_config, cli_main, size_limit
from tests.helpers import REPO, TINY

SIGNAL = str(REPO / "configs" / "signal" / "transformer.yaml")
ECHO = str(REPO / "configs" / "echo" / "lstm.yaml")
PARITY = str(REPO / "configs" / "parity_sum" / "transformer.yaml")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--config", SIGNAL, "--model.arch=gru"],
            r"arch='gru' is not one of \['transformer', 'rnn', 'lstm', 'mamba', 'linear_rnn', "
            r"'linear_attention', 'stack_rnn', 'ndstack_rnn', 'tape_rnn'\]",
        ),
        (["--config", SIGNAL, "--model.pos_mode=rotry"], r"pos_mode='rotry' is not one of"),
        (["--config", SIGNAL, "--model.readout=max"], r"readout='max' is not one of"),
        (["--config", SIGNAL, "--model.n_heads=5"], r"d_model.*n_heads"),
        (["--config", SIGNAL, "--model.schedule=step"], r"schedule='step' is not one of"),
        (
            ["--config", ECHO, "--model.init_args.causal=true", "--model.bidirectional=true"],
            r"bidirectional",
        ),
        (["--config", SIGNAL, "--data.length=0"], r"length"),
        (["--config", SIGNAL, "--wandb=maybe"], r"wandb.mode='maybe' is not one of"),
        (["--config", "configs/nope/transformer.yaml"], r"nope"),
        (["--config", SIGNAL, "--data", "lit_seq.data.NoSuchTask"], r"NoSuchTask"),
        (
            ["--config", ECHO, "--model=lit_seq.systems.StepRegression"],
            r"model=StepRegression trains 'regression' tasks, but task 'echo' is 'binary'",
        ),
        # the bad-input table of the integrity issue: silently accepted before
        (
            ["--config", SIGNAL, "--model.dropout=1.5"],
            r"dropout=1.5 must be a finite number >= 0.0 and < 1.0",
        ),
        (
            ["--config", SIGNAL, "--model.dropout=-0.1"],
            r"dropout=-0.1 must be a finite number >= 0.0",
        ),
        (["--config", SIGNAL, "--model.d_ff=0"], r"d_ff must be an integer >= 1 \(or null"),
        (["--config", SIGNAL, "--model.warmup_steps=-1"], r"warmup_steps must be an integer >= 0"),
        (
            ["--config", SIGNAL, "--trainer.gradient_clip_val=-1"],
            r"trainer.gradient_clip_val=-1(\.0)? must be a finite number >= 0.0",
        ),
        (
            ["--config", SIGNAL, "--trainer.max_steps=0"],
            r"trainer.max_steps must be an integer >= 1 \(or -1",
        ),
        (
            ["--config", SIGNAL, "--trainer.max_time=00:00:00:00"],
            r"trainer.max_time='00:00:00:00' must be longer than 0",
        ),
        (["--config", PARITY, "--data.length=1"], r"length must be an integer >= 2, got 1"),
        (
            ["--config", ECHO, "--model.pos_mode=none"],
            r"pos_mode='none' only applies to arch='transformer', not 'lstm'",
        ),
        (
            ["--config", ECHO, "--model.residual=false"],
            r"residual=False only applies to arch='transformer'",
        ),
        # tracebacks before
        (["--config", SIGNAL, "--model.n_layers=0"], r"n_layers must be an integer >= 1, got 0"),
        (
            ["--config", SIGNAL, "--trainer.max_steps=-5"],
            r"trainer.max_steps must be an integer >= 1",
        ),
        (
            ["--config", SIGNAL, "--model.weight_decay=-1"],
            r"weight_decay=-1.0 must be a finite number >= 0.0",
        ),
        (
            ["--config", SIGNAL, "--trainer.accelerator=gpu"],
            r"trainer.accelerator='gpu' but no CUDA device",
        ),
        # unclear before: now the field, the value and what is allowed
        (["--config", SIGNAL, "--model.d_model=0"], r"d_model must be an integer >= 1, got 0"),
        (["--config", SIGNAL, "--model.n_layers=-1"], r"n_layers must be an integer >= 1, got -1"),
        (["--config", SIGNAL, "--model.n_heads=0"], r"n_heads must be an integer >= 1, got 0"),
        (
            ["--config", SIGNAL, "--model.lr=nan"],
            r"model.lr: got 'nan', which is not a valid float",
        ),
        (
            ["--config", SIGNAL, "--model.lr=inf"],
            r"model.lr: got 'inf', which is not a valid float",
        ),
        (
            ["--config", SIGNAL, "--seed_everything=-1"],
            r"seed_everything must be an integer in \[0, 4294967295\]",
        ),
        (
            ["--config", SIGNAL, "--data=lit_seq.data.Sorting"],
            r"lit_seq.data.Sorting does not exist; one of \['lit_seq.data.SignalData'",
        ),
        (
            ["--config", SIGNAL, "--trainer.precision=fp8"],
            r"trainer.precision='fp8' is not one of \['32-true'",
        ),
        # round four: a traceback, a silent change, or no hint what to give before
        (
            ["--config", SIGNAL, "--trainer.accelerator=cpu", "--trainer.precision=16-mixed"],
            r"^trainer.precision='16-mixed' needs a CUDA GPU, and this fit runs on the CPU; "
            r"give one of \['32-true', '64-true', 'bf16-mixed', 'bf16-true'\]",
        ),
        (
            ["--config", SIGNAL, "--data.curriculum=true"],
            r"^data.curriculum: task 'signal' takes no option 'curriculum'; the tasks that take "
            r"it are \['parity_sum', 'echo', 'parity_check', .*'bucket_sort'\]$",
        ),
        (
            # 2 layers of 12 d^2 + 13 d (attention, feed-forward 4d, norms) + in/out layers
            ["--config", SIGNAL, "--model.d_model=100000"],
            r"^model.d_model=100000, model.n_layers=2: a model of "
            r"240,003,300,003 parameters \(960.0 GB of float32 weights, about 4x that to "
            r"train\), over the limit of 1,000,000,000; give smaller sizes, or set "
            r"LIT_SEQ_MAX_PARAMS=240003300003 to build it$",
        ),
    ],
)
def test_bad_input_is_one_clear_line(args, expected, tmp_path):
    with pytest.raises(BadInput, match=expected) as error:
        build_cli([*args, f"--run_dir={tmp_path / 'run'}"])
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", r"is empty; give at least model, data and trainer"),
        ("- model\n- data\n", r"must be a mapping of sections .*, got a list"),
        ("model: {}\nmodel: {}\n", r"key 'model' is given twice \(again at line 2\)"),
        (
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
                for p, n in zip("abcde", "bcdef", strict=True)
            ),
            r"YAML expands to more than 100,000 nodes",
        ),
    ],
    ids=["empty", "a list", "repeated key", "alias bomb"],
)
def test_a_config_file_that_is_no_config_is_one_line(content, expected, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(content)
    with pytest.raises(BadInput, match=expected) as error:
        build_cli(["--config", str(config), f"--run_dir={tmp_path / 'run'}"])
    assert "\n" not in str(error.value)
    assert not (tmp_path / "run").exists()


def test_malformed_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(BadInput) as error:
        build_cli(["--config", str(bad), f"--run_dir={tmp_path / 'run'}"])
    assert "\n" not in str(error.value)


def test_a_run_dir_that_is_or_sits_in_a_file_is_refused_in_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(BadInput, match=r"run_dir=.*: '.*file' is a file, not a folder"):
        build_cli(["--config", SIGNAL, f"--run_dir={blocker / 'run'}"])
    with pytest.raises(BadInput, match=r"run_dir=.*file' is a file; give a folder"):
        build_cli(["--config", SIGNAL, f"--run_dir={blocker}"])


def test_a_run_dir_name_longer_than_the_file_system_takes_is_one_line(tmp_path):
    name = "a" * 300
    with pytest.raises(BadInput) as error:
        build_cli(["--config", SIGNAL, f"--run_dir={tmp_path / name / 'run'}"])
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    assert str(error.value) == (
        f"run_dir='{'a' * 20}...{'a' * 12}': that name is 300 bytes, and the file system of "
        f"{str(tmp_path)!r} takes names of at most {limit}; give a shorter one"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_parameter_limit_is_stated_and_can_be_moved(monkeypatch, tmp_path):
    # echo/rnn: 2,209 parameters (test_fit's shipped configs build under the default limit)
    monkeypatch.setenv("LIT_SEQ_MAX_PARAMS", "2208")
    with pytest.raises(BadInput, match=r"a model of 2,209 parameters .* over the limit of 2,208"):
        check_config(["--config", str(REPO / "configs" / "echo" / "rnn.yaml")])
    monkeypatch.setenv("LIT_SEQ_MAX_PARAMS", "2209")
    assert check_config(["--config", str(REPO / "configs" / "echo" / "rnn.yaml")])
    monkeypatch.setenv("LIT_SEQ_MAX_PARAMS", "lots")
    with pytest.raises(BadInput, match=r"^LIT_SEQ_MAX_PARAMS='lots' must be a whole number"):
        check_config(["--config", ECHO])


def test_the_count_is_made_once_per_model_and_data_config(monkeypatch):
    # a population's members (one shape, other seeds) build on the meta device once
    monkeypatch.setattr(size_limit, "_COUNTS", {})
    counted = []
    real = size_limit._count_on_meta
    monkeypatch.setattr(size_limit, "_count_on_meta", lambda *a: counted.append(1) or real(*a))
    rnn = ["--config", str(REPO / "configs" / "echo" / "rnn.yaml")]
    monkeypatch.setenv("LIT_SEQ_MAX_PARAMS", "2209")  # echo/rnn's 2,209 parameters
    for seed in (1, 2):
        assert check_config([*rnn, f"--seed_everything={seed}"])
    assert len(counted) == 1
    with pytest.raises(BadInput, match=r"a model of 4,849 parameters"):  # its own count
        check_config([*rnn, "--model.init_args.d_model=48"])
    assert len(counted) == 2


@pytest.mark.parametrize(
    ("short", "full"),
    [
        (["--data.help", "parity_check"], ["--data.help", "lit_seq.data.ParityCheckData"]),
        (["--data.help=echo"], ["--data.help=lit_seq.data.EchoData"]),
        (["--model.help", "parity_check"], ["--model.help", "SequenceClassification"]),
        (["--model.help", "regression"], ["--model.help", "StepRegression"]),
        (["--model.help", "lstm"], ["--model.help", "lit_seq.systems.SequenceSystem"]),
    ],
)
def test_class_help_takes_the_short_names(short, full, capsys):
    texts = []
    for args in (short, full):
        with pytest.raises(SystemExit) as done:
            build_cli(args)
        assert done.value.code == 0
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1] and "--model." in texts[0] + texts[1].replace("--data.", "--model.")


def test_data_and_model_take_the_short_names(tmp_path):
    cli = check_config(["--config", SIGNAL, "--data", "parity_check", "--model=classification"])
    assert cli.datamodule.name == "parity_check"
    assert type(cli.model).__name__ == "SequenceClassification"


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
    assert lines == [
        "lit_seq.fit: error: arch='gru' is not one of ['transformer', 'rnn', 'lstm', 'mamba', "
        "'linear_rnn', 'linear_attention', 'stack_rnn', 'ndstack_rnn', 'tape_rnn']"
    ]
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--model.optimizer=sgd"], r"^optimizer='sgd' is not one of \['adam', 'adamw'\]$"),
        (
            ["--model.arch=gru"],
            r"^arch='gru' is not one of \['transformer', 'rnn', 'lstm', 'mamba', 'linear_rnn', "
            r"'linear_attention', 'stack_rnn', 'ndstack_rnn', 'tape_rnn'\]$",
        ),
        (["--checkpoint_every=0"], r"^checkpoint_every must be an integer >= 1, got 0$"),
        (["--wandb_config=[1, 2]"], r"wandb.config"),
        (
            ["--wandb.tags=[" + "x" * 65 + "]"],
            r"^wandb.tags: 'x+' is 65 characters; W&B takes at most 64$",
        ),
    ],
)
def test_choices_and_the_new_options_are_checked_by_the_parser(args, expected, tmp_path):
    with pytest.raises(BadInput, match=expected):
        build_cli(["--config", SIGNAL, *args, f"--run_dir={tmp_path / 'run'}"])
    assert not (tmp_path / "run").exists()


def fit_command(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """``python -m lit_seq.fit ARGS``, W&B off, from the repository."""
    env = {**os.environ, "WANDB_MODE": "offline", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "lit_seq.fit", *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout
    )


CONFIG_KEYS = (
    "['checkpoint_every', 'ckpt_path', 'compile', 'data', 'init_seed', 'model', 'range_eval', 'run_dir', "
    "'score_weights', 'scoring', "
    "'seed_everything', 'target', 'trainer', 'wandb']"
)


@pytest.mark.parametrize("where", ["file", "flag"])
def test_an_unknown_top_level_key_is_refused_with_the_keys_allowed(where, tmp_path):
    extra = tmp_path / "extra.yaml"
    extra.write_text("modle:\n  lr: 0.1\n")
    args = ["--config", str(extra)] if where == "file" else ["--modle.lr=0.1"]
    with pytest.raises(BadInput) as error:
        build_cli(["--config", ECHO, *args, f"--run_dir={tmp_path / 'run'}"])
    assert str(error.value) == f"unknown key 'modle'; the keys of a fit's config are {CONFIG_KEYS}"
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
def test_help_says_which_of_several_configs_and_flags_wins(tmp_path):
    result = fit_command("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert (
        "Which setting wins: arguments are read left to right and a later one wins. So with "
        "--config a.yaml --config b.yaml --model.lr 0.01, b.yaml wins over a.yaml and the flag "
        "over both; a flag placed before a --config is overridden by that file."
    ) in text
    # and that is what happens
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("model:\n  init_args:\n    lr: 0.1\n")
    b.write_text("model:\n  init_args:\n    lr: 0.2\n")
    lr = lambda *args: check_config(["--config", ECHO, *args]).model.hparams.lr  # noqa: E731
    assert lr("--config", str(a), "--config", str(b)) == 0.2
    assert lr("--config", str(a), "--config", str(b), "--model.lr=0.3") == 0.3
    assert lr("--model.lr=0.3", "--config", str(a)) == 0.1


@pytest.mark.integration
def test_a_quick_run_shrinks_the_validation_interval_and_says_so(tmp_path):
    # parity_sum / transformer validates every 250 steps: a 4-step run validated never
    run_dir = tmp_path / "run"
    result = fit_command(
        "--config",
        PARITY,
        "--trainer.max_steps",
        "4",
        "--data.init_args.n_train=64",
        "--data.init_args.n_val=32",
        "--data.init_args.n_test=32",
        "--trainer.enable_progress_bar=false",
        "--wandb=off",
        f"--run_dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    note = (
        "note: trainer.val_check_interval=250 is longer than trainer.max_steps=4: validating "
        "every 4 steps instead"
    )
    assert note in result.stdout.splitlines()
    assert (run_dir / "checkpoints" / "best-step=4.ckpt").is_file()
    # a grid checks its cells with check_config: the same interval, so the same run
    cli = check_config(["--config", PARITY, "--trainer.max_steps=4"])
    assert cli.config.trainer.val_check_interval == 4


@pytest.mark.integration
def test_a_batch_larger_than_the_training_set_is_capped_with_a_note(tmp_path, capsys):
    small = ["--data.init_args.n_train=100", "--data.init_args.batch_size=512"]
    result = cli_main(["--config", ECHO, f"--run_dir={tmp_path / 'run'}", *TINY, *small])
    header = capsys.readouterr().out.splitlines()
    assert (
        "note: data.batch_size=512 is more than data.n_train=100: every training batch is the "
        "whole training set (100 sequences), and samples/s counts 100"
    ) in header
    # throughput of the batches trained (100 each), not of the configured 512
    assert result.samples_per_second * result.train_seconds <= 100 * result.steps * 1.01
