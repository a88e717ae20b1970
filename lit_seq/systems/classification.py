"""Sequence classification: one label per sequence (the ``signal`` task)."""

from typing import Literal

import torch.nn.functional as F
from torch import Tensor, nn
from torchmetrics import MetricCollection
from torchmetrics.classification import (
    MulticlassAccuracy,
    MulticlassConfusionMatrix,
    MulticlassF1Score,
)

from lit_seq.models import READOUTS, SequenceClassifier
from lit_seq.models.haiku_init import INITS
from lit_seq.systems.base import SequenceSystem


class SequenceClassification(SequenceSystem):
    """Encoder + readout + linear head, trained with label-smoothed cross-entropy.

    Logs ``acc`` and macro ``f1``; the confusion matrix of every test set (the errors that
    matter are often at 2x and 4x the training length) is kept in ``self.confusion``, keyed
    by the test set's metric prefix (``test``, ``test_len128``), for the plotting callback.
    """

    task_kind = "classification"
    main_metric = "acc"
    inits = INITS  # it draws its network again as ``init`` says (``init_network``)

    def __init__(
        self, readout: Literal[READOUTS] = "mean", label_smoothing: float = 0.1, **kwargs
    ) -> None:
        """
        Args:
            readout: How the sequence becomes one vector: ``mean`` (average over real
                positions), ``cls`` (a learnable token prepended to the sequence), ``last``
                (the last real position) or ``empty`` (a learnable token appended to the
                sequence, read after the whole input: Delétang et al.'s models).
            label_smoothing: Mass spread uniformly over all classes in the target.
            **kwargs: Backbone and optimizer options of :class:`SequenceSystem`.
        """
        super().__init__(**kwargs)
        hp = self.hparams
        self.net = SequenceClassifier(
            # cls and empty add one token, so the positional table needs one more row
            self.make_backbone(causal=False, extra_positions=int(readout in ("cls", "empty"))),
            in_features=hp.in_features,
            num_classes=hp.out_features,
            d_model=hp.d_model,
            **self.head_options,
            readout=readout,
        )
        self.init_network()  # haiku's draw, for init: haiku
        self.confusion = nn.ModuleDict()  # test prefix -> its confusion matrix, in setup()

    def prepare_tests(self, datamodule) -> None:
        super().prepare_tests(datamodule)
        for prefix in self.test_metrics:
            if prefix not in self.confusion:
                n = self.hparams.out_features
                self.confusion[prefix] = MulticlassConfusionMatrix(num_classes=n)

    @property
    def chance_level(self) -> float:
        return 1.0 / self.hparams.out_features

    def build_metrics(self) -> MetricCollection:
        n = self.hparams.out_features
        return MetricCollection(
            {
                "acc": MulticlassAccuracy(num_classes=n, average="micro"),
                "f1": MulticlassF1Score(num_classes=n, average="macro"),
            }
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)  # (B, n_classes)

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        logits = self(batch["x"])
        return F.cross_entropy(logits, batch["y"], label_smoothing=self.hparams.label_smoothing)

    def evaluate(self, batch: dict[str, Tensor], metrics: MetricCollection) -> Tensor:
        logits = self(batch["x"])
        metrics.update(logits, batch["y"])
        prefix = (metrics.prefix or "").rstrip("/")
        if prefix in self.confusion:  # a test set (not validation, not a range evaluation)
            self.confusion[prefix].update(logits, batch["y"])
        return F.cross_entropy(logits, batch["y"], label_smoothing=self.hparams.label_smoothing)
