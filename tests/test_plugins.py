"""A user's own backbone and task, by import path, through fit and a grid (docs/plugins.md)."""

import json

import pytest

from lit_seq.fit import BadInput, build_cli, check_config
from tests.helpers import REPO, TINY, driver, tiny_fit, write_grid

EXAMPLE = REPO / "examples" / "majority_gru.yaml"


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
        ("torch.nn.Linear", r"backbone='torch.nn.Linear' must take a causal argument"),
    ],
)
def test_a_backbone_that_is_no_backbone_is_one_line(backbone, expected, tmp_path):
    with pytest.raises(BadInput, match=expected) as error:
        build_cli(["--config", str(EXAMPLE), f"--model.backbone={backbone}", *TINY])
    assert "\n" not in str(error.value)


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
