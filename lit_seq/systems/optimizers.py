"""The optimizers a system trains with, their options' check, and the optimizer it builds.

One rule for every caller: the system's constructor and a grid's cells that differ only in
these options (``lit_seq.ablate.shapes``) check them with :func:`check_optimizer_options`;
``SequenceSystem.build_optimizer`` (Lightning's, the benchmark's) builds with
:func:`build_optimizer`, its kernels chosen for the device by :func:`optimizer_options`.
"""

import torch
from torch import nn

from lit_seq.systems.schedules import SCHEDULES, schedule_factor
from lit_seq.util.checks import check_choice, check_float, check_int

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def check_optimizer_options(
    optimizer: object, lr: object, weight_decay: object, schedule: object, warmup_steps: object
) -> None:
    """ValueError naming the first of the optimizer's options that is not allowed."""
    check_choice("optimizer", optimizer, OPTIMIZERS)
    check_choice("schedule", schedule, SCHEDULES)
    check_float("lr", lr, 0.0, low_open=True)
    check_float("weight_decay", weight_decay, 0.0)
    check_int("warmup_steps", warmup_steps, 0)


def optimizer_options(device_type: str, clips: bool) -> dict[str, bool]:
    """The kernels of a run's Adam / AdamW on ``device_type`` (``"cuda"``, ``"cpu"``), its
    gradients clipped before each step or not.

    - a GPU, unclipped: ``{"fused": True}``, one kernel for every parameter's update;
    - a GPU, clipped: ``{"foreach": True}`` (torch's own default there, stated). Lightning's
      mixed-precision plugin refuses to clip the gradients of an optimizer that unscales
      them itself, which a fused one does: given fused Adam, every clipped solo fit failed
      on the first GPU it met (an H200, bf16-mixed; fixed in commit 1349981);
    - elsewhere: ``{}``, torch's defaults (what every CPU figure was measured with).
    """
    if device_type != "cuda":
        return {}
    return {"foreach": True} if clips else {"fused": True}


def build_optimizer(
    module: nn.Module, hp, total_steps: int, device: torch.device, clips: bool = False
):
    """(optimizer, per-step LambdaLR) over ``module``'s trained parameters for ``total_steps``,
    from the options in ``hp`` (a system's hyperparameters), with the kernels of a run on
    ``device`` (:func:`optimizer_options`). A frozen parameter (``requires_grad`` False: the
    LSTM's ``single_bias`` constant) is left out: no step, no weight decay, no state."""
    optimizer = OPTIMIZERS[hp.optimizer](
        [p for p in module.parameters() if p.requires_grad],
        lr=hp.lr,
        weight_decay=hp.weight_decay,
        **optimizer_options(torch.device(device).type, clips),
    )
    factor = schedule_factor(hp.schedule, hp.warmup_steps, total_steps)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
