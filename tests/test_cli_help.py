"""``python -m lit_seq.fit --help`` shows lit_seq's own options, with their allowed values."""

import subprocess
import sys
import typing

import pytest
from jsonargparse import ArgumentParser

from lit_seq.data import TASKS
from lit_seq.fit import BadInput, build_cli
from lit_seq.fit.header import options_help
from lit_seq.models import BACKBONES, POS_MODES, READOUTS
from lit_seq.systems import SequenceClassification, SequenceSystem
from lit_seq.systems.optimizers import OPTIMIZERS
from lit_seq.systems.schedules import SCHEDULES
from tests.helpers import REPO

SIGNAL = str(REPO / "configs" / "signal" / "transformer.yaml")


def _choices(values) -> str:
    return "{" + ",".join(values) + "}"


def test_help_lists_the_model_and_task_options_with_their_allowed_values():
    text = options_help()
    for name, values in (
        ("arch", BACKBONES),
        ("pos_mode", POS_MODES),
        ("optimizer", OPTIMIZERS),
        ("schedule", SCHEDULES),
        ("readout", READOUTS),
    ):
        [line] = [line for line in text.splitlines() if line.split()[:1] == [name]]
        assert _choices(values) in line, line
    assert "--model.help CLASS" in text and "--data.help CLASS" in text
    assert "signal (lit_seq.data.SignalData): length, freqs, noise" in text
    assert max(len(line) for line in text.splitlines()) <= 100


@pytest.mark.parametrize("task", list(TASKS.values()), ids=list(TASKS))
def test_data_help_lists_the_shared_options_with_their_docs(task):
    """A task hands the shared options to SyntheticDataModule through **kwargs; the parser
    follows them, so --data.help lists each one with its doc (and none a task keeps back)."""
    parser = ArgumentParser()
    parser.add_class_arguments(task)
    text = " ".join(parser.format_help().split())
    for option, doc in (
        ("--batch_size", "examples per batch in every split."),
        ("--seed", "seed of the data generation and of the training shuffle order."),
        ("--gen_factors", "length-generalisation test sets at k x the training length"),
    ):
        assert f"{option} " in text and doc in text
    offers = task.name not in ("signal", "seq2seq")  # the two tasks without a curriculum
    assert ("--curriculum " in text) == offers
    assert ("--n_val " in text) == (task.name != "signal")  # signal counts per class


def test_the_choice_fields_are_typed_by_the_registries():
    hints = typing.get_type_hints(SequenceSystem.__init__)
    assert typing.get_args(hints["arch"]) == tuple(BACKBONES)
    assert typing.get_args(hints["pos_mode"]) == POS_MODES
    readout = typing.get_type_hints(SequenceClassification.__init__)["readout"]
    assert typing.get_args(readout) == READOUTS


@pytest.mark.integration
def test_the_command_line_help_opens_with_them():
    result = subprocess.run(
        [sys.executable, "-m", "lit_seq.fit", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == "usage: python -m lit_seq.fit [--config FILE ...] [--SECTION.KEY VALUE ...]"
    assert "  wandb (--wandb.NAME VALUE):" in lines[:16]  # W&B on the first screen
    assert any(line.split()[:1] == ["arch"] for line in lines[:60])
    assert "--optimizer" not in result.stdout  # the systems configure their own


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("--model.readout=clss", "readout='clss' is not one of ['mean', 'cls', 'last', 'empty']"),
        ("--model.optimizer=sgd", "optimizer='sgd' is not one of ['adam', 'adamw']"),
    ],
)
def test_print_config_refuses_a_bad_choice_in_one_line(option, expected, capsys):
    with pytest.raises(BadInput) as error:
        build_cli(["--config", SIGNAL, option, "--print_config"])
    assert str(error.value) == expected
    assert "readout: clss" not in capsys.readouterr().out


def test_a_bad_choice_leaves_no_run_folder_behind(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where the default runs/<task>-<arch>-<time> would go
    with pytest.raises(BadInput, match="readout='clss'"):
        build_cli(["--config", SIGNAL, "--model.readout=clss"])
    with pytest.raises(BadInput, match="readout='clss'"):
        build_cli(["--config", SIGNAL, "--model.readout=clss", f"--run_dir={tmp_path / 'r'}"])
    assert list(tmp_path.iterdir()) == []


def test_help_leads_with_the_run_and_wandb_options_and_the_plain_fits_defaults():
    """lit_seq's own options come first, W&B among them, and a model option shows the value
    a plain ``python -m lit_seq.fit`` runs with (its default config), the class's beside it."""
    text = options_help()
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith(("  wandb (", "model options"))]
    assert len(heads) == 2 and heads[0] < heads[1]  # W&B before the model
    assert any(line.split()[:3] == ["mode", "str", "="] for line in lines[heads[0] : heads[1]])
    assert "    tags             list = []  W&B run tags" in text  # a factory's value, shown
    [lr] = [line for line in lines if line.split()[:1] == ["lr"]]
    [dropout] = [
        line for line in lines if line.split()[:1] == ["dropout"] and "Delétang" not in line
    ]
    # configs/signal/transformer.yaml trains at lr 0.01 without dropout
    assert "float = 0.01 (class: 0.001)" in lr and "float = 0.0 (class: 0.1)" in dropout
    assert "A validation metric, e.g. val/acc" in text  # "e.g." ends no sentence
    assert max(len(line) for line in lines) <= 100
