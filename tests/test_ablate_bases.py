"""Any backbone on any task in a grid: an arch with no config of its own for the task trains
at its family's base config, with only the backbone changed (``lit_seq.ablate.bases``)."""

import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.spec import expand, parse_spec
from lit_seq.record import read_records
from tests.helpers import write_grid

ARCHS = "{task: [echo], arch: [lstm, mamba, linear_rnn]}"


def _runs(axes: dict) -> dict:
    spec = parse_spec({"name": "g", "blocks": [{"name": "m", "axes": axes}]})
    return {run.axes["arch"]: run for run in expand(spec)}


def test_an_arch_without_a_config_takes_its_familys_base_with_only_the_backbone_changed():
    archs = ["lstm", "mamba", "linear_rnn", "stack_rnn", "examples.plugins.GRUBackbone"]
    runs = _runs({"task": ["echo"], "arch": archs})
    # a shipped config wins, and its runs are as before: no arch option added
    assert runs["lstm"].config == "configs/echo/lstm.yaml"
    assert not any("arch" in o or "backbone" in o for o in runs["lstm"].overrides)
    # the mixers at the transformer's config, the memory RNNs at the rnn's
    for arch, base in [
        ("mamba", "transformer"),
        ("linear_rnn", "transformer"),
        ("stack_rnn", "rnn"),
    ]:
        assert runs[arch].config == f"configs/echo/{base}.yaml"
        assert f"--model.init_args.arch={arch}" in runs[arch].overrides
    # a plug-in replaces the lstm config's backbone
    plugin = runs["examples.plugins.GRUBackbone"]
    assert plugin.config == "configs/echo/lstm.yaml"
    assert "--model.init_args.backbone=examples.plugins.GRUBackbone" in plugin.overrides
    assert "--model.init_args.arch=transformer" in plugin.overrides  # the system's default
    assert plugin.run_id == "m__task=echo__arch=examples.plugins.GRUBackbone__seed=0"


@pytest.mark.parametrize(
    ("arch", "expected"),
    [
        ("mamba", "arch='mamba' cannot train task='seq2seq': its system builds encoder-decoders"),
        ("gru", "arch='gru' is not one of ['transformer', 'rnn', 'lstm', 'mamba'"),
    ],
)
def test_an_arch_no_base_fits_is_refused_in_one_line(arch, expected, tmp_path, capsys):
    with pytest.raises(BadGrid, match="give the block a config:" if arch == "mamba" else "plug-in"):
        _runs({"task": ["seq2seq"], "arch": [arch]})
    grid = tmp_path / "g.yaml"
    grid.write_text(f"name: g\nblocks:\n- {{name: m, axes: {{task: [seq2seq], arch: [{arch}]}}}}\n")
    assert main([str(grid), "--out", str(tmp_path / "out"), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err
    assert not (tmp_path / "out").exists()


@pytest.mark.integration
def test_a_grid_of_archs_on_echo_states_its_bases_and_trains_each(tmp_path, capsys):
    grid = write_grid(tmp_path, "archs", f"seeds: [0]\nblocks:\n- {{name: m, axes: {ARCHS}}}\n")
    out = tmp_path / "out"
    assert main([str(grid), "--out", str(out), "--dry-run"]) == 0
    listing = capsys.readouterr().out
    for arch, base in [("lstm", "lstm"), ("mamba", "transformer"), ("linear_rnn", "transformer")]:
        assert f"m__task=echo__arch={arch}  [configs/echo/{base}.yaml]" in listing
    assert main([str(grid), "--out", str(out), "--workers", "1", "--wandb", "off"]) == 0
    records = read_records(out)
    assert {r.arch: (r.status, r.config) for r in records.values()} == {
        "lstm": ("ok", "configs/echo/lstm.yaml"),
        "mamba": ("ok", "configs/echo/transformer.yaml"),
        "linear_rnn": ("ok", "configs/echo/transformer.yaml"),
    }
    # the record names the backbone it trained, on top of its base
    mamba = next(r for r in records.values() if r.arch == "mamba")
    assert "--model.init_args.arch=mamba" in mamba.overrides
