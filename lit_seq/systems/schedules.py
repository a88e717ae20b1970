"""Learning-rate schedules as multiplicative factors for ``LambdaLR``.

Each factor multiplies the optimizer's base ``lr``, so ``lr`` is always the peak rate
and the schedules stay comparable across model widths.
"""

import math
from collections.abc import Callable

from lit_seq.util.checks import check_choice

SCHEDULES = ("noam", "cosine", "constant")


def noam_factor(warmup_steps: int) -> Callable[[int], float]:
    """Noam schedule (Vaswani et al. 2017): linear warm-up, then decay as 1/sqrt(step).

    The paper's ``d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)`` peaks at
    step == warmup; dividing by that peak gives factor 1.0 there, so ``lr`` sets the peak.
    """
    warmup = max(1, warmup_steps)

    def factor(step: int) -> float:
        step = step + 1  # LambdaLR counts from 0; Noam from 1
        return min(step / warmup, math.sqrt(warmup / step))

    return factor


def cosine_factor(warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """Linear warm-up, then cosine decay to zero at ``total_steps``."""
    warmup = max(1, warmup_steps)
    total = max(total_steps, warmup + 1)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / (total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


def schedule_factor(name: str, warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """The factor function for schedule ``name`` (one of :data:`SCHEDULES`)."""
    if name == "noam":
        return noam_factor(warmup_steps)
    if name == "cosine":
        return cosine_factor(warmup_steps, total_steps)
    check_choice("schedule", name, SCHEDULES)
    return lambda step: 1.0  # constant
