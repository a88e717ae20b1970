"""A fit started by a W&B sweep agent: the agent owns the run's id, project and entity.

``wandb agent SWEEP`` starts each trial as a process with ``WANDB_SWEEP_ID``,
``WANDB_RUN_ID`` (and ``WANDB_PROJECT`` / ``WANDB_ENTITY``) in its environment, and hands the
trial's values to the command line as ``--name=value`` (its ``${args}``:
``--model.init_args.lr=0.003``). Under a sweep ``wandb.init`` ignores the ``id=``,
``project=`` and ``entity=`` of its caller (with a warning that lit_seq's quiet W&B never
prints), so a fit that kept its own id would name a run that does not exist. Under a sweep a
fit passes none of them, and its run folder keeps the run that ``wandb.init`` made:
``wandb_id`` its real id, ``wandb_sweep.json`` the sweep that owns it.
"""

import os
from pathlib import Path

from lit_seq.util.io import atomic_write_json

SWEEP_FILE = "wandb_sweep.json"  # in a run folder: the sweep that owns its W&B run
# what wandb.init takes from a sweep agent's environment instead of from its caller
AGENT_OWNS = ("id", "project", "entity")


def sweep_id() -> str:
    """The id of the W&B sweep whose agent started this process; "" outside a sweep."""
    return os.environ.get("WANDB_SWEEP_ID", "")


def record_sweep_run(run_dir: Path, run, sweep: str) -> None:
    """Write in ``run_dir`` that ``sweep`` owns the W&B ``run`` (``wandb.init``'s), by the
    id, project and entity the agent gave it."""
    atomic_write_json(
        Path(run_dir) / SWEEP_FILE,
        {
            "sweep_id": sweep,
            "run_id": run.id,
            "project": run.project,
            "entity": run.entity or "",
            "owner": "the W&B sweep agent set this run's id, project and entity",
        },
    )
