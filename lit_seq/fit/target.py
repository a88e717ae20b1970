"""Stop at the target: end a fit once a validation metric has reached a threshold.

Many runs reach their target long before ``max_steps`` (echo / rnn is at val acc 1.00 at
step 100 of 500), so a grid that stops there spends its time where it is needed. A target
is a validation metric, a threshold and how many consecutive validations must hold it::

    target: {metric: val/acc, threshold: 0.99, consecutive: 2}

Whether it stops or not (``stop: false`` only measures), the record says whether the
target was reached and at which optimizer step and training second it was first reached
in the streak that held (time-to-target). Off unless ``metric`` is given.
"""

from __future__ import annotations

from dataclasses import dataclass

from lit_seq.util.checks import BadInput, check_choice, check_int

TARGET_MODES = ("max", "min")


@dataclass
class Target:
    """What a fit aims at (the ``target`` section of a config).

    Args:
        metric: A validation metric, e.g. ``val/acc``; null (the default) turns it off.
        threshold: Reached when the metric is >= this (mode max) or <= this (mode min).
        consecutive: How many validations in a row must reach it.
        mode: ``max`` (higher is better) or ``min``.
        stop: End training once reached; false only records time-to-target.
    """

    metric: str | None = None
    threshold: float = 0.99
    consecutive: int = 1
    mode: str = "max"
    stop: bool = True

    def describe(self) -> str:
        """``val/acc>=0.99 x2`` (what the tables say the target was); "" when off."""
        if self.metric is None:
            return ""
        sign = ">=" if self.mode == "max" else "<="
        return f"{self.metric}{sign}{self.threshold:g} x{self.consecutive}"


def check_target(target: Target, validation_metrics: list[str]) -> None:
    """BadInput unless ``target`` names one of ``validation_metrics`` with sane settings."""
    if target.metric is None:
        return
    try:
        check_choice("target.metric", target.metric, sorted(validation_metrics))
        check_choice("target.mode", target.mode, TARGET_MODES)
        check_int("target.consecutive", target.consecutive, 1)
    except ValueError as err:
        raise BadInput(str(err)) from None


class StopAtTarget:
    """The target streak of a run: ``target.metric`` counted after every validation.

    Its state (the running streak, where it began, whether it held) is saved with every
    checkpoint (``fit.book.RunBook``), so a resumed fit counts on where it left off.
    """

    def __init__(self, target: Target) -> None:
        self.target = target
        self.streak = 0
        self.streak_start: tuple[int, float] | None = None  # (step, seconds) of its first
        self.reached: tuple[int, float] | None = None  # the streak that held

    def _hit(self, value: float) -> bool:
        t = self.target
        return value >= t.threshold if t.mode == "max" else value <= t.threshold

    def observe(self, value: float | None, step: int, seconds: float) -> bool:
        """Count one validation's ``value`` (at optimizer ``step``, training ``seconds``) into
        the streak; True when the target holds now and the fit is to stop."""
        if self.reached is not None:
            return False
        if value is None or not self._hit(value):
            self.streak, self.streak_start = 0, None
            return False
        if self.streak == 0:
            self.streak_start = (step, round(seconds, 3))
        self.streak += 1
        if self.streak >= self.target.consecutive:
            self.reached = self.streak_start
            return self.target.stop
        return False

    def state_dict(self) -> dict:
        return {"streak": self.streak, "streak_start": self.streak_start, "reached": self.reached}

    def load_state_dict(self, state_dict: dict) -> None:
        self.streak = int(state_dict["streak"])
        start, reached = state_dict["streak_start"], state_dict["reached"]
        self.streak_start = tuple(start) if start is not None else None
        self.reached = tuple(reached) if reached is not None else None
