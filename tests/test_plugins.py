"""A user's own backbone and task, by import path, through fit and a grid (docs/plugins.md)."""

import json
from pathlib import Path

import pytest
import yaml

from lit_seq import evaluate
from lit_seq.ablate.grid import check_cells
from lit_seq.ablate.jobs import GridJob, RayOptions
from lit_seq.ablate.run_one import run_args
from lit_seq.ablate.spec import expand, parse_spec
from lit_seq.fit import BadInput, build_cli, check_config, cli_main
from tests.helpers import REPO, TINY, driver, tiny_fit, write_grid
from tests.test_wandb_files import read_runs

EXAMPLE = REPO / "examples" / "majority_gru.yaml"
CONV = "examples.plugins.ConvBackbone"


def test_the_example_builds_its_own_backbone_and_task():
    cli = check_config(["--config", str(EXAMPLE)])
    assert type(cli.model.net.backbone).__name__ == "GRUBackbone"
    assert cli.datamodule.name == "majority" and cli.model.arch_name == "gru"
    assert cli.model.net.backbone.causal is False  # the classifier's backbone reads it all


@pytest.mark.parametrize(
    ("backbone", "expected"),
    [
        ("examples.plugins.NoSuch", r"backbone='examples.plugins.NoSuch' cannot be imported"),
        ("examples.plugins.majority_labels", r"is not an nn.Module class"),
        ("torch.nn.ReLU", r"backbone='torch.nn.modules.activation.ReLU' must take a causal"),
    ],
)
def test_a_backbone_that_is_no_backbone_is_one_line(backbone, expected, tmp_path):
    with pytest.raises(BadInput, match=expected) as error:
        build_cli(["--config", str(EXAMPLE), f"--model.backbone={backbone}", *TINY])
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    "options",
    [
        ["--model.backbone", CONV, "--model.backbone.init_args.kernel", "5"],
        ["--model.init_args.backbone", CONV, "--model.backbone.kernel", "5"],
        ["--model.backbone", json.dumps({"class_path": CONV, "init_args": {"kernel": 5}})],
    ],
    ids=["init_args", "short", "json"],
)
def test_a_plugin_backbone_takes_its_own_options_as_lightning_cli_does(options):
    cli = check_config(["--config", str(EXAMPLE), *options])
    backbone = cli.model.net.backbone
    assert type(backbone).__name__ == "ConvBackbone" and backbone.kernel == 5
    assert len(backbone.convs) == cli.model.hparams.n_layers  # a shared option: the system's
    assert cli.model.arch_name == "conv"
    # what checkpoints and config.yaml keep: plain values, not a class
    assert cli.model.hparams.backbone == {"class_path": CONV, "init_args": {"kernel": 5}}


def test_a_config_names_a_plugin_by_class_path_and_init_args(tmp_path):
    config = yaml.safe_load(EXAMPLE.read_text())
    config["model"]["init_args"]["backbone"] = {"class_path": CONV, "init_args": {"kernel": 7}}
    path = tmp_path / "conv.yaml"
    path.write_text(yaml.safe_dump(config))
    cli = check_config(["--config", str(path)])
    assert cli.model.net.backbone.kernel == 7 and cli.model.arch_name == "conv"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            ["--model.pos_mode=rotary"],
            "pos_mode='rotary' does not apply to backbone examples.plugins.GRUBackbone: of the "
            "backbone options it takes ['bidirectional', 'd_model', 'dropout', 'n_layers']; "
            "leave pos_mode at its default 'sinusoidal'",
        ),
        (["--model.n_heads=3"], "n_heads=3 does not apply to backbone examples.plugins.GRUB"),
        (
            ["--model.arch=lstm"],
            "arch='lstm' and backbone='examples.plugins.GRUBackbone': give one",
        ),
        (
            [f"--model.backbone={CONV}", "--model.backbone.init_args.n_layers=3"],
            "model.backbone.init_args.n_layers: n_layers is an option of the system, shared "
            "with the backbone; set it as model.n_layers",
        ),
        (
            [f"--model.backbone={CONV}", "--model.backbone.init_args.kernl=3"],
            "model.backbone.init_args.kernl: ConvBackbone takes no option 'kernl'; its own "
            "options are ['kernel']",
        ),
        (
            [f"--model.backbone={CONV}", "--model.backbone.init_args.kernel=0"],
            "kernel must be an integer >= 1, got 0",
        ),
    ],
    ids=["pos_mode", "n_heads", "arch", "shared", "unknown", "bad-value"],
)
def test_what_a_plugin_does_not_take_is_refused_in_one_line(options, expected):
    with pytest.raises(BadInput) as error:
        check_config(["--config", str(EXAMPLE), *options])
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_a_plugin_and_its_options_are_grid_axes_that_reach_the_model():
    conv = {"class_path": CONV, "init_args": {"kernel": 5}}
    spec = {
        "name": "g",
        "blocks": [
            {
                "name": "plugin",
                "config": str(EXAMPLE),
                "axes": {"model.init_args.backbone": ["examples.plugins.GRUBackbone", conv]},
            },
            {
                "name": "kernel",
                "config": str(EXAMPLE),
                "overrides": {"model.init_args.backbone": CONV},
                "axes": {"model.init_args.backbone.init_args.kernel": [3, 9]},
            },
        ],
    }
    runs = check_cells(expand(parse_spec(spec)), "g")
    assert [(r.cell, r.arch) for r in runs] == [
        ("plugin__model.backbone=examples.plugins.GRUBackbone", "gru"),
        ("plugin__model.backbone=ConvBackbone_kernel=5", "conv"),
        ("kernel__model.backbone.kernel=3", "conv"),
        ("kernel__model.backbone.kernel=9", "conv"),
    ]
    kernels = [
        check_config(["--config", str(EXAMPLE), *r.overrides]).model.net.backbone for r in runs
    ]
    assert [getattr(b, "kernel", None) for b in kernels] == [None, 5, 3, 9]
    assert len({r.digest for r in runs}) == 4  # each value is a different computation
    # W&B tags: a class value is its arch and the options it sets (one tag of its whole
    # class_path and init_args, 93 characters, was cut inside the class name at W&B's 64)
    job = GridJob(Path("out"), "g", "off", 1, RayOptions())
    flag = "--wandb.tags="
    given = [next(a for a in run_args(r, job) if a.startswith(flag)) for r in runs]
    assert [json.loads(a[len(flag) :])[:-2] for a in given] == [  # block and seed follow
        ["arch=gru"],
        ["arch=conv", "kernel=5"],
        ["model.init_args.backbone.init_args.kernel=3"],
        ["model.init_args.backbone.init_args.kernel=9"],
    ]


@pytest.mark.integration
def test_a_plugin_is_named_by_its_class_in_header_record_wandb_and_evaluates(tmp_path, capsys):
    run_dir = tmp_path / "run"
    options = [f"--model.backbone={CONV}", "--model.backbone.init_args.kernel=5"]
    offline = [*TINY[:-1], "--wandb=offline"]
    result = cli_main(["--config", str(EXAMPLE), f"--run_dir={run_dir}", *offline, *options])
    header = capsys.readouterr().out.splitlines()
    model_line = next(line for line in header if line.startswith("model: "))
    assert model_line.startswith(f"model: SequenceClassification / conv = {CONV}(kernel=5), "), (
        model_line
    )
    assert (result.arch, json.loads((run_dir / "metrics.json").read_text())["arch"]) == (
        "conv",
        "conv",
    )
    [view] = read_runs(run_dir)
    assert view.summary["arch"] == "conv" and view.config["arch_name"] == "conv"
    # the checkpoint rebuilds the backbone with its own options (a kernel of 3 would not load)
    assert evaluate.main([str(run_dir), "--tag", "again"]) == 0
    again = json.loads((run_dir / "eval-again.json").read_text())["metrics"]
    assert 0 <= again["test/acc"] <= 1


@pytest.mark.integration
def test_the_example_trains_through_fit(tmp_path):
    result = tiny_fit(EXAMPLE, tmp_path / "run")
    assert (result.task, result.arch, result.steps) == ("majority", "gru", 6)
    assert "test_len60/acc" in result.metrics


@pytest.mark.integration
def test_the_example_runs_as_a_grid_axis(tmp_path):
    body = f"""seeds: [0]
blocks:
  - name: majority
    config: {EXAMPLE}
    axes:
      model.init_args.backbone: [examples.plugins.GRUBackbone]
      model.init_args.n_layers: [1, 2]
"""
    grid = write_grid(tmp_path, "plugins", body)
    result = driver(grid, "--out", tmp_path / "out", "--wandb", "off")
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert sorted(
        r["n_layers"] if "n_layers" in r else r["axes"]["model.init_args.n_layers"] for r in records
    ) == [1, 2]
    assert {(r["task"], r["arch"], r["status"]) for r in records} == {("majority", "gru", "ok")}
