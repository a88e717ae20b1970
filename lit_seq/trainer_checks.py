"""The Trainer settings a fit refuses before anything is built: one line each, like the rest.

Lightning accepts values that cannot be meant (``max_steps=0`` trains nothing and still writes
a result; a validation interval longer than the run never validates, so no best checkpoint
exists) or fails on them with a traceback mid-set-up. A grid checks every cell without
building a Trainer, so these checks read the parsed ``trainer`` section instead.
"""

import re

import torch

from lit_seq.checks import check_choice, check_float, check_int

PRECISIONS = ("32-true", "64-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true")
PRECISIONS += ("32", "64", "16", "bf16", 32, 64, 16)  # Lightning's short spellings
_DURATION = re.compile(r"^(\d+):(\d+):(\d+):(\d+)$")  # max_time as DD:HH:MM:SS


def _seconds(max_time: object) -> float | None:
    """``max_time`` in seconds (a DD:HH:MM:SS string or a dict of timedelta parts), if known."""
    if isinstance(max_time, str) and (match := _DURATION.match(max_time)):
        days, hours, minutes, seconds = map(int, match.groups())
        return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if isinstance(max_time, dict):
        units = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
        return sum(units.get(k, 0) * float(v) for k, v in max_time.items())
    return None


def check_trainer(trainer) -> None:
    """ValueError naming the field for a ``trainer`` section that cannot give a real run."""
    max_steps = trainer.get("max_steps")
    if max_steps is not None and max_steps != -1:
        check_int("trainer.max_steps", max_steps, 1, allowed=">= 1 (or -1: no step limit)")
    if (seconds := _seconds(trainer.get("max_time"))) is not None and seconds <= 0:
        raise ValueError(f"trainer.max_time={trainer.get('max_time')!r} must be longer than 0")
    interval = trainer.get("val_check_interval")
    if isinstance(interval, int) and not isinstance(interval, bool):
        check_int("trainer.val_check_interval", interval, 1, allowed=">= 1 (steps) or a fraction")
        validates = trainer.get("limit_val_batches") != 0  # 0: validation off on purpose
        if validates and max_steps and max_steps > 0 and interval > max_steps:
            raise ValueError(
                f"trainer.val_check_interval={interval} is longer than trainer.max_steps="
                f"{max_steps}: the run would never validate (and keep no best checkpoint)"
            )
    if trainer.get("gradient_clip_val") is not None:
        check_float("trainer.gradient_clip_val", trainer.get("gradient_clip_val"), 0.0)
    if trainer.get("precision") is not None:
        check_choice("trainer.precision", trainer.get("precision"), PRECISIONS)
    if trainer.get("accelerator") in ("gpu", "cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"trainer.accelerator={trainer.get('accelerator')!r} but no CUDA device is visible "
            "here; use 'auto' (a GPU when there is one) or 'cpu'"
        )
