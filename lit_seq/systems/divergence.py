"""When a fit has diverged: the one rule of every fit and of a population's members."""

import math

# A loss this many times the first training loss (or than this itself, when the first loss
# is below 1) is a diverged run: the losses here start at O(1), so a million times that is
# no model any more (echo / rnn at lr 1e30 reaches 1e30, finite: unbounded, it ends "ok").
DIVERGED_FACTOR = 1e6


def divergence(loss: float, first_loss: float | None) -> str:
    """Why ``loss`` says that training diverged, as the words that follow the loss's name
    (``is nan``, ``is 2.8e+30 (over 1e+06 x the first training loss, 0.693)``), else "".

    The one rule of every run, solo or a population's member (``lit_seq.fit.book``, for
    ``val/loss`` and the latest ``train/loss`` at every validation): not finite, or more than
    ``DIVERGED_FACTOR`` x ``first_loss`` (the first training step's loss; None when not
    known: then only the first part applies).
    """
    if not math.isfinite(loss):
        return f"is {loss}"
    known = first_loss is not None and math.isfinite(first_loss)
    if known and loss > DIVERGED_FACTOR * max(first_loss, 1.0):
        return (
            f"is {loss:.3g} (over {DIVERGED_FACTOR:.0e} x the first training loss, "
            f"{first_loss:.3g})"
        )
    return ""
