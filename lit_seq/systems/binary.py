"""Per-step binary prediction: a bit at every position (``echo``)."""

import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MetricCollection

from lit_seq.models import PerStepHead
from lit_seq.systems.base import SequenceSystem
from lit_seq.systems.metrics import masked_mean, step_metrics


class StepBinary(SequenceSystem):
    """Backbone + per-step logit, trained with BCE on the scored positions only.

    The batch's ``mask`` marks the scored positions (echo: t >= lag, where the target is
    defined by the input); ``acc`` is per-step accuracy there and ``exact`` the fraction
    of sequences right at every scored position.
    """

    task_kind = "binary"
    main_metric = "acc"
    per_step = True

    def __init__(self, causal: bool = True, **kwargs) -> None:
        """
        Args:
            causal: Position t sees only positions <= t.
            **kwargs: Backbone and optimizer options of :class:`SequenceSystem`.
        """
        super().__init__(**kwargs)
        hp = self.hparams
        self.net = PerStepHead(
            self.make_backbone(causal=causal),
            in_features=hp.in_features,
            out_features=1,
            d_model=hp.d_model,
            **self.head_options,
        )

    @property
    def chance_level(self) -> float:
        return 0.5

    def build_metrics(self) -> MetricCollection:
        return step_metrics()

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x).squeeze(-1)  # (B, T) logits

    def step_hits(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """(B, T) booleans: the thresholded logit is right; positions under ``mask`` count."""
        hits = (self(batch["x"]) > 0).to(batch["y"].dtype) == batch["y"]
        return hits, batch["mask"]

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        logits, mask = self(batch["x"]), batch["mask"]
        per_step = F.binary_cross_entropy_with_logits(logits, batch["y"], reduction="none")
        return masked_mean(per_step, mask)

    def evaluate(self, batch: dict[str, Tensor], metrics: MetricCollection) -> Tensor:
        logits, y, mask = self(batch["x"]), batch["y"], batch["mask"]
        metrics.update((logits > 0).to(y.dtype), y, mask=mask)
        return masked_mean(F.binary_cross_entropy_with_logits(logits, y, reduction="none"), mask)
