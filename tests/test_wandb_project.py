"""Where W&B runs go: project and entity from an option, a grid key or the environment.

First found wins: an explicit option (a fit's ``--wandb.project`` / ``--wandb.entity``, or
their old spellings ``--wandb_project`` / ``--wandb_entity``, the
grid driver's ``--wandb-project`` / ``--wandb-entity``), the grid's ``wandb:`` key, then
``WANDB_PROJECT`` / ``WANDB_ENTITY``, then ``lit_seq``. A grid folder has one summary run,
updated by a re-run that trains something, never duplicated. Read back from the offline run
files that real wandb wrote.
"""

import pytest

from lit_seq.ablate.__main__ import build_parser, main, plan
from lit_seq.fit import cli_main
from lit_seq.record import RECORDS
from tests.helpers import REPO, TINY, write_grid
from tests.test_wandb_files import read_runs

ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"
OFFLINE = [*TINY[:-1], "--wandb=offline"]


def _fit(run_dir, *extra: str) -> None:
    cli_main(["--config", str(ECHO_RNN), f"--run_dir={run_dir}", *OFFLINE, *extra])


@pytest.mark.integration
def test_a_fit_takes_project_and_entity_from_the_environment_unless_given(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_PROJECT", "envproj")
    monkeypatch.setenv("WANDB_ENTITY", "envteam")
    _fit(tmp_path / "env")
    [view] = read_runs(tmp_path / "env")
    assert (view.project, view.entity) == ("envproj", "envteam")

    _fit(tmp_path / "given", "--wandb.project=optproj", "--wandb.entity=optteam")
    [view] = read_runs(tmp_path / "given")
    assert (view.project, view.entity) == ("optproj", "optteam")

    _fit(tmp_path / "old", "--wandb_project=oldproj", "--wandb_entity", "oldteam")
    [view] = read_runs(tmp_path / "old")
    assert (view.project, view.entity) == ("oldproj", "oldteam")


def test_without_either_the_project_is_lit_seq(tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    monkeypatch.delenv("WANDB_ENTITY", raising=False)
    grid = write_grid(tmp_path, "g", "blocks:\n- {axes: {task: [echo], arch: [rnn]}}\n")
    found = plan(build_parser().parse_args([str(grid), "--out", str(tmp_path / "out")]))
    assert (found.wandb_project, found.wandb_entity) == ("lit_seq", None)
    assert found.runs[0].overrides[-1] == "--wandb.project=lit_seq"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], ("gridproj", "gridteam")),  # the grid key wins over the environment
        (["--wandb-project", "cliproj"], ("cliproj", "gridteam")),  # the option over both
        (["--wandb-entity", "cliteam"], ("gridproj", "cliteam")),
    ],
)
def test_a_grid_key_wins_over_the_environment_and_the_option_over_both(
    flags, expected, tmp_path, monkeypatch
):
    monkeypatch.setenv("WANDB_PROJECT", "envproj")
    monkeypatch.setenv("WANDB_ENTITY", "envteam")
    body = "wandb: {project: gridproj, entity: gridteam}\n"
    body += "blocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    grid = write_grid(tmp_path, "g", body)
    found = plan(build_parser().parse_args([str(grid), "--out", str(tmp_path / "out"), *flags]))
    assert (found.wandb_project, found.wandb_entity) == expected
    # what each run is told: its fit arguments end with them
    project, entity = expected
    assert found.runs[0].overrides[-2:] == (
        f"--wandb.project={project}",
        f"--wandb.entity={entity}",
    )


@pytest.mark.integration
def test_one_summary_run_per_grid_folder_updated_by_a_rerun(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WANDB_PROJECT", "envproj")
    body = "wandb: {project: gridproj}\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    grid = write_grid(tmp_path, "wbg", body)
    out = tmp_path / "out"
    args = [str(grid), "--out", str(out), "--wandb", "offline"]
    assert main(args) == 0
    assert "W&B offline, project gridproj" in capsys.readouterr().out
    [run_dir] = (out / "runs").iterdir()
    [train] = read_runs(run_dir)
    assert (train.project, train.job_type) == ("gridproj", "train")

    assert main(args) == 0  # nothing trained: nothing logged
    assert "W&B summary run unchanged" in capsys.readouterr().out
    for record in (out / RECORDS).glob("*.json"):  # a re-run that trains the run again
        record.unlink()
    assert main(args) == 0

    first, second = read_runs(out)  # two parts of one run: wandb sync uploads both into it
    assert first.id == second.id
    assert {(v.name, v.project, v.job_type) for v in (first, second)} == {
        ("wbg-summary", "gridproj", "summary")
    }
