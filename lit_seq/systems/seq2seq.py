"""Sequence-to-sequence: tokens in, tokens out (``seq2seq`` copy / reverse / sort)."""

import torch.nn.functional as F
from torch import Tensor
from torchmetrics import MetricCollection

from lit_seq.data.seq2seq import BOS, EOS, PAD
from lit_seq.models import build_seq2seq
from lit_seq.systems.base import SequenceSystem
from lit_seq.systems.metrics import step_metrics


class Seq2Seq(SequenceSystem):
    """Encoder-decoder trained with teacher forcing, judged by greedy decoding.

    Training uses label-smoothed cross-entropy on the teacher-forced next token. Every
    metric comes from greedy autoregressive decoding (no teacher forcing): ``acc`` is
    token accuracy over the target positions (EOS included), ``exact`` the fraction of
    sequences decoded exactly.
    """

    task_kind = "seq2seq"
    main_metric = "exact"
    per_step = True

    def __init__(
        self, label_smoothing: float = 0.1, share_embeddings: bool = True, **kwargs
    ) -> None:
        """
        Args:
            label_smoothing: Mass spread uniformly over the vocabulary in the target.
            share_embeddings: One embedding table for source, target and output layer.
            **kwargs: Backbone and optimizer options of :class:`SequenceSystem`.
        """
        super().__init__(**kwargs)
        hp = self.hparams
        self.net = build_seq2seq(
            hp.arch,
            self.backbone_options,
            vocab_size=hp.in_features,
            max_len=hp.max_len,
            share_embeddings=share_embeddings,
            pad_id=PAD,
        )

    def build_metrics(self) -> MetricCollection:
        return step_metrics()

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        return self.net(src, tgt_in)  # (B, T, V) logits

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        src, tgt = batch["src"], batch["tgt"]
        logits = self(src, tgt[:, :-1])  # predict token t+1 from tokens <= t
        return F.cross_entropy(
            logits.flatten(0, 1),
            tgt[:, 1:].flatten(),
            ignore_index=PAD,
            label_smoothing=self.hparams.label_smoothing,
        )

    def evaluate(self, batch: dict[str, Tensor], metrics: MetricCollection) -> Tensor:
        target = batch["tgt"][:, 1:]  # (B, T): the answer followed by EOS and padding
        decoded = self.net.greedy_decode(
            batch["src"], bos_id=BOS, eos_id=EOS, max_new_tokens=target.size(1)
        )
        # decoding may stop early (all sequences hit EOS): pad to the target's length
        decoded = F.pad(decoded, (0, target.size(1) - decoded.size(1)), value=PAD)
        metrics.update(decoded, target, mask=target != PAD)
        return self.loss(batch)
