"""`seq2seq`: copy, reverse or sort a variable-length token sequence."""

import torch
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.util.checks import check_int

PAD, BOS, EOS = 0, 1, 2
N_SPECIAL = 3  # ordinary symbols start after the special tokens
OPS = ("copy", "reverse", "sort")


def seq2seq_targets(src: Tensor, lengths: Tensor, op: str) -> Tensor:
    """Decoder targets [BOS] + op(src[:length]) + [EOS] + PAD...: (B, S) -> (B, S + 2).

    `src` holds PAD after each row's `lengths` (B,). Example, src [[5, 3, 4, 0]], lengths [3]:
    copy -> [[BOS, 5, 3, 4, EOS, PAD]], reverse -> [[BOS, 4, 3, 5, EOS, PAD]],
    sort -> [[BOS, 3, 4, 5, EOS, PAD]].
    """
    if op not in OPS:
        raise ValueError(f"op must be one of {list(OPS)}, got {op!r}")
    n, width = src.shape
    pos = torch.arange(width, device=src.device)  # (S,)
    valid = pos < lengths.unsqueeze(1)  # (B, S)
    if op == "copy":
        out = src
    elif op == "reverse":
        # Position t of a row of length L reads position L - 1 - t; padding reads 0, masked below.
        idx = (lengths.unsqueeze(1) - 1 - pos).clamp(min=0)  # (B, S)
        out = src.gather(1, idx)
    else:
        # Padding sorts last when it is larger than every symbol; it is restored below.
        out = src.masked_fill(~valid, torch.iinfo(src.dtype).max).sort(dim=1).values
    out = out.masked_fill(~valid, PAD)  # (B, S)
    tgt = torch.full((n, width + 2), PAD, dtype=src.dtype, device=src.device)  # (B, S + 2)
    tgt[:, 0] = BOS
    tgt[:, 1 : width + 1] = out
    tgt[torch.arange(n, device=src.device), lengths + 1] = EOS
    return tgt


class Seq2SeqData(SyntheticDataModule):
    """Sequence-to-sequence on tokens: the target is the copy, reverse or sort of the source.

    Ordinary symbols have ids N_SPECIAL .. N_SPECIAL + vocab - 1 after PAD, BOS, EOS = 0, 1, 2.
    Worked examples, src [5, 3, 4]: copy -> [BOS, 5, 3, 4, EOS], reverse -> [BOS, 4, 3, 5, EOS],
    sort -> [BOS, 3, 4, 5, EOS]. Batch keys: `src` (B, S) long, PAD after each row's length and
    no BOS/EOS; `tgt` (B, S + 2) long, [BOS] + op(src) + [EOS] then PAD; `length` (B,) long.
    S is the split's longest length: max_length for train/val/test, k * max_length for the
    length-generalisation set at factor k, whose lengths are drawn from [max_length + 1,
    k * max_length] so that every one of its sequences is longer than any seen in training.

    Args:
        op: what the target does to the source: "copy", "reverse" or "sort".
        vocab: number of ordinary symbols (the model's vocabulary adds the 3 special tokens).
        min_length: shortest training source sequence.
        max_length: longest training source sequence.
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`) but the
            curriculum; gen_factors k give test sets of lengths up to k x max_length.
    """

    name = "seq2seq"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "seq2seq"

    def __init__(
        self,
        op: str = "reverse",
        vocab: int = 10,
        min_length: int = 2,
        max_length: int = 10,
        n_train: int = 10000,
        **kwargs,
    ) -> None:
        if op not in OPS:
            raise ValueError(f"op must be one of {list(OPS)}, got {op!r}")
        self.op = op
        self.vocab = check_int("vocab", vocab, 1)
        self.min_length = check_int("min_length", min_length, 1)
        allowed = f">= min_length ({min_length})"
        self.max_length = check_int("max_length", max_length, min_length, allowed=allowed)
        # No curriculum: a training split already mixes every length min_length..max_length.
        # Naming it here also keeps it out of this task's options.
        super().__init__(n_train=n_train, curriculum=False, **kwargs)

    @property
    def train_length(self) -> int:
        return self.max_length

    @property
    def shortest_length(self) -> int:
        return self.min_length  # the shortest source a training-length split draws

    @property
    def in_features(self) -> int:
        return self.vocab + N_SPECIAL

    @property
    def out_features(self) -> int:
        return self.vocab + N_SPECIAL

    @property
    def max_len(self) -> int:
        """Longest target: the longest gen-set source plus BOS and EOS."""
        return max(self.test_lengths) + 2

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        # Training-length splits span [min_length, max_length]; gen sets start beyond it.
        shortest = self.min_length if length <= self.max_length else self.max_length + 1
        lengths = torch.randint(shortest, length + 1, (n,), generator=generator)  # (B,)
        high = N_SPECIAL + self.vocab
        tokens = torch.randint(N_SPECIAL, high, (n, length), generator=generator)  # (B, S)
        valid = torch.arange(length) < lengths.unsqueeze(1)  # (B, S)
        src = tokens.masked_fill(~valid, PAD)
        return {"src": src, "tgt": seq2seq_targets(src, lengths, self.op), "length": lengths}
