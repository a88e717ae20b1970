"""A sweep from the command line (``lit_seq.ablate.inline``): ``--config`` with ``--axis``,
``--seeds`` and fit overrides is a grid file's grid, run, resumed and reported as one."""

import pytest
import yaml

from lit_seq.ablate.__main__ import build_parser, main
from lit_seq.ablate.folder import GRID_FILE
from lit_seq.ablate.inline import split_overrides, sweep_spec
from lit_seq.ablate.spec import parse_spec
from lit_seq.record import format_value, read_records
from lit_seq.report import main as report_main
from tests.helpers import TINY_GRID

# the tiny grid settings of every test grid, as a sweep's fit overrides
TINY_FLAGS = [f"--{k}={format_value(v)}" for k, v in yaml.safe_load(TINY_GRID)["overrides"].items()]
SWEEP = ["--config", "configs/echo/rnn.yaml", "--axis", "model.lr=0.003,0.03", "--seeds", "0"]


def test_a_sweep_is_the_grid_file_it_stands_for():
    argv = [*SWEEP[:4], "--axis", "d_model=8,16", "--seeds", "0,1", "--steps", "50", "--lr=0.1"]
    known = set(build_parser()._option_string_actions)
    kept, extra = split_overrides([*argv, "--workers", "2"], known)
    assert extra == ["--steps", "50", "--lr=0.1"]  # the driver's own --workers stays its own
    args = build_parser().parse_args(kept)
    raw = sweep_spec(args.config, args.axis, args.seeds, extra, args.name)
    assert raw == {
        "name": "echo-rnn-sweep",
        "seeds": [0, 1],
        "overrides": {"steps": 50, "lr": 0.1},
        "blocks": [
            {
                "name": "rnn",
                "config": "configs/echo/rnn.yaml",
                "axes": {"model.lr": [0.003, 0.03], "d_model": [8, 16]},
            }
        ],
    }
    assert sweep_spec(args.config, [], None, [], "mine")["name"] == "mine"
    parse_spec(raw)  # a grid as any grid file's


BAD = {
    "no '='": (["--axis", "lr"], "--axis 'lr': write KEY=V1,V2,..."),
    "an empty value": (["--axis", "lr=0.1,"], "no empty value"),
    "a list value": (["--axis", "arch=[lstm,rnn]"], "a list or mapping value needs a grid file"),
    "the same axis twice": (["--axis", "lr=0.1", "--axis", "lr=0.2"], "given twice"),
    "an unknown key": (["--axis", "depth=1,2"], "unknown key 'depth'"),
    "a bad value": (["--axis", "lr=fast"], "lr"),
    "bad seeds": (["--seeds", "0,x"], "--seeds '0,x': write integers"),
    "an override with no value": (["--steps"], "--steps: give it a value"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_sweep_is_one_line_before_anything(case, tmp_path, capsys):
    flags, expected = BAD[case]
    out = tmp_path / "out"
    assert main([*SWEEP[:2], *flags, "--out", str(out), "--wandb", "off"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lit_seq.ablate: error: "), err
    assert expected in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["ablations/smoke.yaml", "--axis", "lr=0.1"], "--axis is for a sweep without a grid"),
        (["ablations/smoke.yaml", "--steps", "5"], "--steps is for a sweep without a grid"),
        (["--axis", "lr=0.1"], "give a grid file, or --config CONFIG"),
    ],
)
def test_a_sweep_and_a_grid_file_do_not_mix(argv, expected, capsys):
    assert main([*argv, "--dry-run"]) == 2
    assert expected in capsys.readouterr().err


@pytest.mark.integration
def test_an_inline_sweep_runs_reports_and_resumes(tmp_path, capsys):
    out = tmp_path / "out"
    command = [*SWEEP, *TINY_FLAGS, "--out", str(out), "--wandb", "off"]
    assert main(command) == 0
    records = read_records(out)
    assert sorted(records) == ["rnn__model.lr=0.003__seed=0", "rnn__model.lr=0.03__seed=0"]
    assert all(r.ok for r in records.values())
    written = yaml.safe_load((out / GRID_FILE).read_text())  # the grid, as a grid file's
    assert written["name"] == "echo-rnn-sweep"
    assert written["blocks"][0]["axes"] == {"model.lr": [0.003, 0.03]}
    assert written["overrides"]["steps"] == 6
    capsys.readouterr()
    assert report_main([str(out)]) == 0
    assert "0.03" in capsys.readouterr().out
    assert main(command) == 0  # the same command: a resume with nothing left to run
    assert "2 runs, 2 already done, 0 to run" in capsys.readouterr().out


def test_help_says_how_to_sweep_without_a_grid_file():
    text = build_parser().format_help()
    assert "--axis KEY=V1,V2,..." in text and "--config CONFIG" in text
    assert "--axis model.lr=0.001,0.003,0.01" in text  # the worked command


def test_an_axis_reads_values_as_a_fit_does_exponents_included():
    from lit_seq.ablate.inline import parse_axis

    assert parse_axis("model.lr=1e-3,3E-4,0.01") == ("model.lr", [0.001, 0.0003, 0.01])
    assert parse_axis("model.pos_mode=none,rotary") == ("model.pos_mode", ["none", "rotary"])
