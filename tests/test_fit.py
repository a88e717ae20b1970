"""End-to-end behaviour of ``python -m lit_seq.fit`` (in-process, tiny sizes)."""

import dataclasses
import json

import pytest
import torch

from lit_seq.data import TASKS
from lit_seq.fit import BadInput, build_cli, check_config
from lit_seq.models import BACKBONES, BackboneOptions
from lit_seq.record import METRICS_FILE
from lit_seq.systems import SYSTEMS
from tests.helpers import CONFIGS, REPO, tiny_fit


def test_every_task_and_arch_has_a_config():
    shipped = {(p.parent.name, p.stem) for p in CONFIGS}
    assert shipped == {(task, arch) for task in TASKS for arch in ("transformer", "rnn", "lstm")}


@pytest.mark.integration
@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_every_shipped_config_trains_and_tests(config, tmp_path):
    record = tiny_fit(config, tmp_path / "run")
    task = config.parent.name
    assert record.task == task and record.arch == config.stem
    assert record.steps == 6
    datamodule = TASKS[task]()
    # one key per test set: the training length and every length-generalisation length
    for prefix in datamodule.test_prefixes:
        value = record.metrics[f"{prefix}/{record.main_metric}"]
        assert 0.0 <= value <= 1.0
    assert len(datamodule.test_prefixes) == 3
    on_disk = json.loads((tmp_path / "run" / METRICS_FILE).read_text())
    assert on_disk["metrics"] == record.metrics
    assert SYSTEMS[datamodule.task_kind].__name__ == record.system


@pytest.mark.integration
def test_same_seed_gives_identical_metrics(tmp_path):
    config = REPO / "configs" / "echo" / "lstm.yaml"
    args = ("--trainer.deterministic=true",)
    first = tiny_fit(config, tmp_path / "a", *args).metrics
    second = tiny_fit(config, tmp_path / "b", *args).metrics
    other = tiny_fit(config, tmp_path / "c", *args, "--seed_everything=1").metrics
    assert first == second
    assert first != other


@pytest.mark.integration
def test_checkpoint_alone_rebuilds_the_model(tmp_path):
    config = REPO / "configs" / "signal" / "transformer.yaml"
    record = tiny_fit(config, tmp_path / "run", "--model.readout=cls")
    ckpt = record.best_checkpoint
    # plain tensors and primitives only: loadable without unpickling code
    torch.load(ckpt, weights_only=True)
    model = SYSTEMS["classification"].load_from_checkpoint(ckpt, weights_only=True)
    assert model.hparams.readout == "cls"
    assert model.net.readout.mode == "cls"
    x = torch.randn(2, 64, 1)
    assert model.eval()(x).shape == (2, 3)


@pytest.mark.integration
def test_fit_resumes_from_last_checkpoint(tmp_path):
    config = REPO / "configs" / "echo" / "rnn.yaml"
    run_dir = tmp_path / "run"
    tiny_fit(config, run_dir)
    (run_dir / METRICS_FILE).unlink()  # pretend the first session died after its checkpoint
    record = tiny_fit(config, run_dir, "--ckpt_path=last", "--trainer.max_steps=9")
    assert record.steps == 9


@pytest.mark.integration
def test_finished_run_dir_is_never_overwritten(tmp_path):
    config = REPO / "configs" / "echo" / "rnn.yaml"
    tiny_fit(config, tmp_path / "run")
    before = (tmp_path / "run" / METRICS_FILE).read_text()
    with pytest.raises(ValueError, match="already holds a finished run"):
        tiny_fit(config, tmp_path / "run")
    assert (tmp_path / "run" / METRICS_FILE).read_text() == before


@pytest.mark.integration
def test_real_fit_writes_an_offline_wandb_run(tmp_path):
    config = REPO / "configs" / "echo" / "lstm.yaml"
    record = tiny_fit(config, tmp_path / "run", "--wandb=offline", "--wandb_group=g1")
    runs = list((tmp_path / "run" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("*.wandb")), "no W&B run file was written"
    assert record.wandb_run == str(runs[0])


def test_help_documents_the_model_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_cli(
            [
                "--config",
                str(REPO / "configs/signal/transformer.yaml"),
                "--model.help",
                "lit_seq.systems.SequenceClassification",
            ]
        )
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--model.pos_mode", "--model.readout", "learnable", "cls"):
        assert option in text


def test_no_config_means_signal_transformer(tmp_path):
    cli = build_cli(["--wandb=off", f"--run_dir={tmp_path / 'run'}"])
    assert type(cli.datamodule).__name__ == "SignalData"
    assert cli.model.hparams.arch == "transformer"


def test_registries_are_keyed_by_the_names_their_classes_carry():
    assert all(cls.name == name for name, cls in TASKS.items())
    assert all(cls.task_kind == kind for kind, cls in SYSTEMS.items())
    assert sorted(SYSTEMS) == sorted({cls.task_kind for cls in TASKS.values()})
    for name, build in BACKBONES.items():
        assert build(d_model=8, n_layers=1).arch == name


@pytest.mark.parametrize("system", list(SYSTEMS.values()), ids=lambda s: s.__name__)
def test_the_network_is_built_from_the_saved_hyperparameters(system):
    """The options that build the network are the checkpoint's hparams, field for field, so
    a reloaded checkpoint (``system(**hparams)``) builds the same network."""
    model = system(
        out_features=3, d_model=16, n_layers=1, n_heads=2, d_ff=24, dropout=0.2, pos_mode="rotary"
    )
    saved = {f.name: model.hparams[f.name] for f in dataclasses.fields(BackboneOptions)}
    assert dataclasses.asdict(model.backbone_options) == saved
    assert saved["d_ff"] == 24 and saved["pos_mode"] == "rotary"


def test_a_system_of_another_kind_is_refused_in_one_line_before_any_run_folder(tmp_path):
    config = REPO / "configs" / "echo" / "rnn.yaml"
    with pytest.raises(BadInput, match="trains 'regression' tasks, but task 'echo' is 'binary'"):
        build_cli(
            ["--config", str(config), "--model=lit_seq.systems.StepRegression", "--wandb=off"]
            + [f"--run_dir={tmp_path / 'run'}"]
        )
    assert not (tmp_path / "run").exists()


def test_check_config_builds_what_fit_builds_without_a_run_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # shipped configs are found from any folder
    built = check_config(["--config", "configs/echo/transformer.yaml"])
    datamodule, system = built.datamodule, built.model
    assert datamodule.name == "echo" and system.hparams.arch == "transformer"
    assert system.hparams.max_len == datamodule.max_len  # the links of a real fit
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BadInput, match="d_model=32 is not divisible by n_heads=5"):
        check_config(["--config", "configs/echo/transformer.yaml", "--model.n_heads=5"])
