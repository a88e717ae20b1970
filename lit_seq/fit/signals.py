"""SIGTERM (a preempted job) and SIGINT (Ctrl-C) end a fit at a step boundary, resumably.

A fit stopped by a signal saves ``last.ckpt`` of the step it stopped at and exits with
128 + the signal (143, 130) and no ``metrics.json``, so a job scheduler sees a failure and
``--ckpt_path last`` finishes the run exactly as if it had never stopped.
"""

import contextlib
import signal
import threading
from collections.abc import Callable

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)  # a preempted job, Ctrl-C


class FitInterrupted(SystemExit):
    """A fit stopped by SIGTERM or SIGINT; its exit status is 128 + the signal (143, 130).

    ``step``: the step ``last.ckpt`` was saved at as the fit stopped, or None when it stopped
    at once (outside training, or on a second signal). ``resumable``: ``last.ckpt`` exists.
    """

    def __init__(self, signum: int, step: int | None, resumable: bool) -> None:
        super().__init__(128 + signum)
        self.signum, self.step, self.resumable = signum, step, resumable

    def __str__(self) -> str:
        name = signal.Signals(self.signum).name
        if self.step is not None:
            return f"stopped by {name} at step {self.step}, saved in last.ckpt"
        if self.resumable:
            return f"stopped by {name} at once; last.ckpt holds the newest saved step"
        return f"stopped by {name} before the first checkpoint"


class SignalCatcher:
    """SIGTERM or SIGINT end a fit at a step boundary with ``last.ckpt`` of that step saved.

    During training a signal is only noted (:attr:`signum`), never acted on mid-step: the
    loop's adapter (``fit.keeper.BookKeeper`` for a solo fit, the population's for its
    members) saves ``last.ckpt`` at the end of the running step and calls :meth:`stop` before
    the next one, or after a validation and its checkpoints. Outside training (set-up, test)
    and on a second signal it stops at once; checkpoints are written atomically, so none is
    spoilt. The handlers are installed by :meth:`handling_signals`, in the main thread only,
    and a signal ignored then (a grid worker ignores Ctrl-C, its driver's) stays ignored.

    Args:
        resumable: whether a ``last.ckpt`` exists now (said by a stop outside training).
    """

    def __init__(self, resumable: Callable[[], bool]) -> None:
        self.resumable = resumable
        self.signum: int | None = None
        self.training = False
        self._handled: list[int] = []

    @contextlib.contextmanager
    def handling_signals(self):
        """While the block runs, SIGTERM and SIGINT stop the fit as described above."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
        self._handled = [s for s, handler in previous.items() if handler is not signal.SIG_IGN]
        for signum in self._handled:
            signal.signal(signum, self._on_signal)
        try:
            yield
        finally:
            for signum in self._handled:
                signal.signal(signum, previous[signum])
            self._handled = []

    def start_training(self) -> None:
        # Lightning installs its own SIGTERM handler as the fit starts; during training it
        # would stop the fit mid-validation (or leave with exit status 0): take it back
        for signum in self._handled:
            signal.signal(signum, self._on_signal)
        self.training = True

    def _on_signal(self, signum: int, frame) -> None:
        first = self.signum is None
        self.signum = signum
        if not (self.training and first):
            raise FitInterrupted(signum, None, self.resumable())

    def stop(self, step: int) -> None:
        """Raise FitInterrupted at optimizer ``step``, whose ``last.ckpt`` is saved."""
        assert self.signum is not None
        raise FitInterrupted(self.signum, step, True)
