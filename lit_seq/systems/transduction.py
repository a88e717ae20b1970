"""Transduction: a whole output sequence written at once on empty positions after the input.

Delétang et al. 2023's non-autoregressive setting for the tasks whose answer is a string
(reverse_string, stack_manipulation, duplicate_string, odds_first, binary_addition): the
network reads the input, then as many empty tokens as the output has symbols, and its
outputs at those appended positions are the answer. No decoder, no teacher forcing.
"""

import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MetricCollection

from lit_seq.models import AppendedOutputHead
from lit_seq.models.haiku_init import INITS
from lit_seq.systems.base import SequenceSystem
from lit_seq.systems.metrics import step_metrics


class Transduction(SequenceSystem):
    """Backbone over input + appended empty tokens; cross-entropy on the appended positions.

    A batch holds ``x`` (B, T, in_features) one-hot inputs, ``y`` (B, T_out) target symbols
    and ``mask`` (B, T_out), the positions scored (up to and with the end token for
    stack_manipulation and binary_addition; all of them otherwise). T_out (the number of
    appended positions) is read off ``y``. The loss is the mean cross-entropy over every
    appended position, padding after an end token included, as Delétang's (their loss
    ignores the accuracy mask); ``acc`` is the accuracy over the scored positions, pooled
    over the batch (their ``accuracy_fn``), and ``exact`` the fraction of sequences right
    at every scored position. The outputs at the input positions enter neither.
    """

    task_kind = "transduction"
    main_metric = "acc"
    inits = INITS  # it draws its network again as ``init`` says (``init_network``)

    def __init__(self, **kwargs) -> None:
        """
        Args:
            **kwargs: Backbone and optimizer options of :class:`SequenceSystem`. The
                transformer is an encoder (every position sees every other), as theirs.
        """
        super().__init__(**kwargs)
        hp = self.hparams
        self.net = AppendedOutputHead(
            # max_len is linked from the data: its longest input plus its appended positions
            self.make_backbone(causal=False),
            in_features=hp.in_features,
            out_features=hp.out_features,
            d_model=hp.d_model,
            **self.head_options,
        )
        self.init_network()  # haiku's draw, for init: haiku

    @property
    def chance_level(self) -> float:
        return 1.0 / self.hparams.out_features

    def build_metrics(self) -> MetricCollection:
        return step_metrics()

    def forward(self, x: Tensor, n_out: int) -> Tensor:
        return self.net(x, n_out)  # (B, n_out, C) logits

    def step_hits(self, batch: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """(B, T_out) booleans: the argmax symbol is right; positions under ``mask`` count."""
        y = batch["y"]
        return self(batch["x"], y.shape[1]).argmax(dim=-1) == y, batch["mask"]

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        y = batch["y"]
        logits = self(batch["x"], y.shape[1])  # (B, T_out, C)
        return F.cross_entropy(logits.transpose(1, 2), y)  # mean over (B, T_out)

    def evaluate(self, batch: dict[str, Tensor], metrics: MetricCollection) -> Tensor:
        y, mask = batch["y"], batch["mask"]
        logits = self(batch["x"], y.shape[1])
        metrics.update(logits.argmax(dim=-1), y, mask=mask)
        return F.cross_entropy(logits.transpose(1, 2), y)  # the training loss
