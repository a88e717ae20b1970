"""Per-step classification: one of k classes at every scored position (``sum_mod``, MQAR)."""

import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MetricCollection

from lit_seq.models import PerStepHead
from lit_seq.systems.base import SequenceSystem
from lit_seq.systems.metrics import masked_mean, step_metrics


class StepClassification(SequenceSystem):
    """Backbone + per-step logits over ``out_features`` classes, cross-entropy on the mask.

    The batch's ``mask`` marks the scored positions (sum_mod: all of them; associative
    recall: the queries). ``acc`` is the accuracy of the argmax there and ``exact`` the
    fraction of sequences right at every scored position.
    """

    task_kind = "step_classification"
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
            out_features=hp.out_features,
            d_model=hp.d_model,
            **self.head_options,
        )

    @property
    def chance_level(self) -> float:
        return 1.0 / self.hparams.out_features

    def build_metrics(self) -> MetricCollection:
        return step_metrics()

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)  # (B, T, C) logits

    def step_hits(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """(B, T) booleans: the argmax class is right; positions under ``mask`` count."""
        hits = self(batch["x"]).argmax(dim=-1) == batch["y"]
        return hits, batch["mask"]

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        logits, mask = self(batch["x"]), batch["mask"]
        per_step = F.cross_entropy(logits.transpose(1, 2), batch["y"], reduction="none")  # (B, T)
        return masked_mean(per_step, mask)

    def evaluate(self, batch: dict[str, Tensor], metrics: MetricCollection) -> Tensor:
        logits, y, mask = self(batch["x"]), batch["y"], batch["mask"]
        metrics.update(logits.argmax(dim=-1), y, mask=mask)
        return masked_mean(F.cross_entropy(logits.transpose(1, 2), y, reduction="none"), mask)
