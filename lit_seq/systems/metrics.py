"""Masked per-step accuracy and whole-sequence exact match.

Echo (bits), parity_sum (rounded sums) and seq2seq (greedy tokens) are all judged the
same way once their predictions are made discrete: how many scored positions are right,
and how many sequences are right at every scored position. The mask says which positions
are scored (echo skips t < lag, seq2seq skips padding).
"""

import torch
from torch import Tensor
from torchmetrics import Metric, MetricCollection


def _check_shapes(preds: Tensor, target: Tensor, mask: Tensor | None) -> Tensor:
    if preds.shape != target.shape:
        raise ValueError(f"preds shape {tuple(preds.shape)} != target shape {tuple(target.shape)}")
    if mask is None:
        return torch.ones_like(target, dtype=torch.bool)
    if mask.shape != target.shape:
        raise ValueError(f"mask shape {tuple(mask.shape)} != target shape {tuple(target.shape)}")
    return mask.bool()


class _Fraction(Metric):
    """A ratio ``correct / total`` accumulated over batches; subclasses define ``update``."""

    higher_is_better = True
    full_state_update = False

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_state("correct", default=torch.tensor(0.0), dist_reduce_fx="sum")
        self.add_state("total", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def compute(self) -> Tensor:
        return self.correct / self.total.clamp(min=1)


class StepAccuracy(_Fraction):
    """Fraction of scored positions where ``preds == target``; inputs (B, T).

    Args:
        from_position: count only positions t >= this (0: all). With the training length
            N it scores what a model never trained on: ``acc_ood`` of a test set of length
            2N is its accuracy on positions N .. 2N - 1 alone. Example: a model right at
            positions 0-9 and at chance after them scores acc 0.75 and acc_ood 0.5 at 2N = 20.
    """

    def __init__(self, from_position: int = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.from_position = from_position

    def update(self, preds: Tensor, target: Tensor, mask: Tensor | None = None) -> None:
        mask = _check_shapes(preds, target, mask)
        if self.from_position:
            mask = mask.clone()
            mask[:, : self.from_position] = False
        self.correct += ((preds == target) & mask).sum()
        self.total += mask.sum()


class SequenceExactMatch(_Fraction):
    """Fraction of sequences whose every scored position is right; inputs (B, T)."""

    def update(self, preds: Tensor, target: Tensor, mask: Tensor | None = None) -> None:
        mask = _check_shapes(preds, target, mask)
        # a position outside the mask counts as right
        row_ok = ((preds == target) | ~mask).all(dim=1)  # (B,)
        self.correct += row_ok.sum()
        self.total += row_ok.numel()


def step_metrics() -> MetricCollection:
    """The sequence-output tasks' metrics: ``acc`` (per scored position) and ``exact``."""
    return MetricCollection(
        {"acc": StepAccuracy(), "exact": SequenceExactMatch()}, compute_groups=False
    )


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``values`` over the positions where ``mask`` is True (same shapes).

    The mean of ``values[mask]``, written without boolean indexing (whose output shape
    depends on the data), so that a population can ``vmap`` it over its members.
    """
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum()
