"""Where a fit's seconds go: wall and CPU seconds by phase, what a grid's hours are made of.

A :class:`PhaseClock` is kept by a run's book (``RunBook.phases``) and read into its record
(``phase_seconds``, ``phase_cpu_seconds``). The phases (:data:`PHASES`):

- ``build``: parsing, building data, model and Trainer, generating the data splits, up to
  the first training step (a resume's checkpoint load included);
- ``train``: the training steps, less what the phases below take inside them;
- ``val``: the validations during training and the scores a grid selects on afterwards;
- ``test``: the test sets of the scored weights (their checkpoint's load included);
- ``range_eval``: the accuracy-vs-length curve (``lit_seq.fit.scoring.length_curve``);
- ``write``: checkpoints and ``metrics.csv`` rows.

Phases nest (a validation inside training, a checkpoint inside a validation) and each
second counts once, in the innermost phase open then: the phases add up to at most the
fit's wall time, and what none of them covers (W&B's start and finish, the record's own
write, Lightning's hand-over between loops) is the rest. CPU seconds are the process's
(``time.process_time``, every thread of it), so they mean one fit's only where a process
runs one fit at a time, as a grid's workers do; a CPU second above a wall second is a
second thread at work.
"""

from __future__ import annotations

import contextlib
import time

from lit_seq.record import PHASES


def now() -> tuple[float, float]:
    """(wall, CPU) seconds on the clocks a :class:`PhaseClock` reads."""
    return time.perf_counter(), time.process_time()


class PhaseClock:
    """Wall and CPU seconds by phase; a phase entered inside another pauses the outer one.

    Worked example: enter train at 0 s, enter val at 3 s, leave val at 5 s, leave train at
    9 s -> train 7 s, val 2 s.
    """

    def __init__(self) -> None:
        self.wall = dict.fromkeys(PHASES, 0.0)
        self.cpu = dict.fromkeys(PHASES, 0.0)
        self._open: list[str] = []  # the phases entered and not left, innermost last
        self._mark = now()  # when the innermost one was last charged

    def enter(self, phase: str, at: tuple[float, float] | None = None) -> None:
        """Start ``phase`` now (or at ``at``, a :func:`now` taken earlier: a phase that began
        before the clock was made), pausing the one open."""
        assert phase in PHASES, f"phase {phase!r} is not one of {PHASES}"
        assert at is None or not self._open, f"{phase} backdated inside {self._open}"
        self._charge(at)
        self._open.append(phase)

    def leave(self, phase: str) -> None:
        """End ``phase`` and any entered inside it (an error skipped their ends); nothing if
        it is not open."""
        if phase in self._open:
            self._charge()
            del self._open[len(self._open) - 1 - self._open[::-1].index(phase) :]

    @contextlib.contextmanager
    def timing(self, phase: str):
        """``phase`` open for the ``with`` block, however it ends."""
        self.enter(phase)
        try:
            yield
        finally:
            self.leave(phase)

    def add(self, wall: dict[str, float], cpu: dict[str, float], share: float = 1.0) -> None:
        """Count ``share`` of another clock's seconds (a population's shared phases, one
        member's share) as this clock's."""
        for phase in PHASES:
            self.wall[phase] += share * wall.get(phase, 0.0)
            self.cpu[phase] += share * cpu.get(phase, 0.0)

    def seconds(self) -> tuple[dict[str, float], dict[str, float]]:
        """(wall, CPU) seconds by phase so far, the open phases counted up to now; rounded
        to the millisecond, every phase present."""
        self._charge()
        return (
            {k: round(max(v, 0.0), 3) for k, v in self.wall.items()},
            {k: round(max(v, 0.0), 3) for k, v in self.cpu.items()},
        )

    def _charge(self, at: tuple[float, float] | None = None) -> None:
        """Give the seconds since the last mark to the innermost open phase; mark now."""
        mark = at or now()
        if self._open and at is None:
            phase = self._open[-1]
            self.wall[phase] += mark[0] - self._mark[0]
            self.cpu[phase] += mark[1] - self._mark[1]
        self._mark = mark
