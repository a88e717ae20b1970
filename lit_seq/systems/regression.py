"""Per-step regression: a real-valued target at every position (``parity_sum``)."""

import torch
import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MeanAbsoluteError, MeanSquaredError, MetricCollection

from lit_seq.models import PerStepHead
from lit_seq.systems.base import SequenceSystem
from lit_seq.systems.metrics import SequenceExactMatch, StepAccuracy


class StepRegression(SequenceSystem):
    """Backbone + per-step linear head, trained with MSE on scaled targets.

    The network predicts ``y / target_scale`` so that the loss is O(1) whatever the
    sums grow to; every metric is reported on the raw scale. ``acc`` is the fraction of
    positions that are exactly right after rounding, ``exact`` the fraction of sequences
    right at every position.
    """

    task_kind = "regression"
    main_metric = "acc"
    per_step = True

    def __init__(self, causal: bool = True, target_scale: float = 1.0, **kwargs) -> None:
        """
        Args:
            causal: Position t sees only positions <= t (the "summing transformer").
            target_scale: Targets are divided by this for the loss; predictions are
                multiplied back before any metric.
            **kwargs: Backbone and optimizer options of :class:`SequenceSystem`.
        """
        super().__init__(**kwargs)
        if target_scale <= 0:
            raise ValueError(f"target_scale={target_scale} must be > 0")
        hp = self.hparams
        self.net = PerStepHead(
            self.make_backbone(causal=causal),
            in_features=hp.in_features,
            out_features=1,
            d_model=hp.d_model,
            **self.head_options,
        )

    def build_metrics(self) -> MetricCollection:
        return MetricCollection(
            {
                "mse": MeanSquaredError(),
                "mae": MeanAbsoluteError(),
                "acc": StepAccuracy(),
                "exact": SequenceExactMatch(),
            },
            compute_groups=False,
        )

    def forward(self, x: Tensor) -> Tensor:
        """Predictions on the raw target scale, (B, T)."""
        return self.net(x).squeeze(-1) * self.hparams.target_scale

    def step_hits(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """(B, T) booleans: the rounded prediction is exact; every position counts."""
        hits = torch.round(self(batch["x"])) == batch["y"]
        return hits, torch.ones_like(hits)

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        scale = self.hparams.target_scale
        return F.mse_loss(self.net(batch["x"]).squeeze(-1), batch["y"] / scale)

    def evaluate(self, batch: dict[str, Tensor], metrics: MetricCollection) -> Tensor:
        pred, y = self(batch["x"]), batch["y"]
        metrics["mse"].update(pred, y)
        metrics["mae"].update(pred, y)
        for name in ("acc", "exact", "acc_ood"):  # acc_ood on the longer test sets only
            if name in metrics:
                metrics[name].update(torch.round(pred), y)
        return F.mse_loss(pred / self.hparams.target_scale, y / self.hparams.target_scale)
