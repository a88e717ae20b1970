"""The optimizers a system trains with, their options' check, and the optimizer it builds.

One rule for every caller: the system's constructor and a grid's cells that differ only in
these options (``lit_seq.ablate.shapes``) check them with :func:`check_optimizer_options`;
``SequenceSystem.build_optimizer`` (Lightning's, the benchmark's) builds with
:func:`build_optimizer`.
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


def build_optimizer(
    module: nn.Module, hp, total_steps: int, device: torch.device, clips: bool = False
):
    """(optimizer, per-step LambdaLR) over ``module``'s parameters (on ``device``) for
    ``total_steps``, from the options in ``hp`` (a system's hyperparameters)."""
    # fused kernels exist only for CUDA, and Lightning's mixed precision refuses to clip
    # an optimizer that unscales its own gradients (fused): a clipped run takes foreach
    fused = {"fused": True} if device.type == "cuda" and not clips else {}
    optimizer = OPTIMIZERS[hp.optimizer](
        module.parameters(), lr=hp.lr, weight_decay=hp.weight_decay, **fused
    )
    factor = schedule_factor(hp.schedule, hp.warmup_steps, total_steps)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
