"""A W&B sweep's trial, run as ``wandb agent`` runs it: the agent owns the run's id and project.

The agent (``wandb/wandb_agent.py``, ``_command_run``) turns the sweep's ``command`` into a
command line (``${env}`` -> ``/usr/bin/env``, ``${args}`` -> ``--name=value`` of the trial's
values, by wandb's own ``create_sweep_command_args``), writes the values into
``WANDB_SWEEP_PARAM_PATH`` and starts it with ``WANDB_SWEEP_ID`` and ``WANDB_RUN_ID`` set.
The test does the same with ``examples/wandb_sweep.yaml`` (offline: no server here) and
reads the real offline run files back.
"""

import json
import os
import platform
import subprocess
import sys

import pytest
import yaml
from wandb.sdk.launch.sweeps.utils import create_sweep_command_args
from wandb.sdk.lib import config_util

from lit_seq.fit.run_folder import WANDB_ID_FILE
from lit_seq.fit.wandb_sweep import SWEEP_FILE
from tests.helpers import REPO, TINY
from tests.test_wandb_files import read_runs

SWEEP = REPO / "examples" / "wandb_sweep.yaml"


def agent_command(sweep: dict, values: dict) -> list[str]:
    """The command line ``wandb agent`` runs for one trial of ``sweep`` with ``values``
    (parameter -> value), as its ``_command_run`` builds it."""
    command = {"args": {name: {"value": v} for name, v in values.items()}}
    sweep_vars = create_sweep_command_args(command)
    sweep_vars["interpreter"] = ["python"]
    sweep_vars["program"] = [sweep["program"]]
    if platform.system() != "Windows":
        sweep_vars["env"] = ["/usr/bin/env"]
    out = []
    for chunk in map(str, sweep["command"]):
        if chunk.startswith("${") and chunk.endswith("}"):
            out += sweep_vars.get(chunk[2:-1]) or []
        else:
            out.append(chunk)
    return out


def test_the_agents_command_line_passes_the_trials_values_as_fit_options():
    sweep = yaml.safe_load(SWEEP.read_text())
    assert agent_command(sweep, {"model.init_args.lr": 0.003}) == [
        "/usr/bin/env", "python", "-m", "lit_seq.fit", "--config", "configs/echo/rnn.yaml",
        "--model.init_args.lr=0.003",
    ]  # fmt: skip
    # the metric a sweep optimises is the plain number lit_seq logs for it
    assert sweep["metric"] == {"name": "best/val/acc", "goal": "maximize"}


@pytest.mark.integration
def test_a_sweep_trial_logs_into_the_run_the_agent_names(tmp_path):
    sweep = yaml.safe_load(SWEEP.read_text())
    [(name, spec)] = sweep["parameters"].items()
    values = {name: spec["values"][1]}  # a grid's second trial: lr 0.003
    param_path = tmp_path / "wandb" / "sweep-sw12ab34" / "config-tr1al001.yaml"
    config_util.save_config_file_from_dict(
        str(param_path), {n: {"value": v} for n, v in values.items()}
    )
    env = {
        **os.environ,
        "WANDB_SWEEP_ID": "sw12ab34",
        "WANDB_RUN_ID": "tr1al001",
        "WANDB_PROJECT": "sweep-project",
        "WANDB_SWEEP_PARAM_PATH": str(param_path),
        "WANDB_DIR": str(tmp_path),
        "WANDB_MODE": "offline",
        # `/usr/bin/env python` finds this interpreter, which imports this checkout
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
    }
    run_dir = tmp_path / "run"
    tiny = [a for a in TINY if not a.startswith("--wandb")] + [f"--run_dir={run_dir}"]
    done = subprocess.run(
        agent_command(sweep, values) + tiny,
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [view] = read_runs(run_dir)
    # the agent's id and project, not lit_seq's own (which wandb.init would have ignored)
    assert (view.id, view.project, view.state) == ("tr1al001", "sweep-project", "finished")
    assert (run_dir / WANDB_ID_FILE).read_text().strip() == "tr1al001"
    owner = json.loads((run_dir / SWEEP_FILE).read_text())
    assert (owner["sweep_id"], owner["run_id"], owner["project"]) == (
        "sw12ab34", "tr1al001", "sweep-project",
    )  # fmt: skip
    # the trial's value built the model; the sweep's metric is a plain number in the summary
    assert view.config["cli"]["model"]["init_args"]["lr"] == 0.003
    best = view.summary["best/val/acc"]
    assert isinstance(best, float) and 0.0 <= best <= 1.0
    assert view.summary["val/acc"] == {"max": best}
