"""Randomized positional encodings (Ruoss et al. 2023): train on positions of longer sequences.

A length-T sequence gets the positions of a sorted random subset of size T of [0, L),
not 0 .. T-1, and the sinusoidal vectors of those positions are added to the input. L
is ``pos_range`` when given, else the model's ``max_len`` (the data's longest test length
unless given), so the positions of every test length (all < L) have been seen in training
even though the training sequences are short. Worked example, T=4, L=16: one draw is
[2, 5, 6, 13]; the four tokens then get the sinusoidal rows 2, 5, 6 and 13.

Ruoss et al. fix L (2048 by default, for test lengths up to 500; their code,
google-deepmind/randomized_positional_encodings, takes it as a constant). With L = max_len
the training draws depend on which test lengths a run asks for (a longer test set, a wider
range, other positions); a fixed ``pos_range`` keeps training the same whatever is tested.

Training draws a fresh subset per forward (one for the whole batch, as the paper's code)
from the global torch RNG, which Lightning seeds: the same seed gives the same draws.
Evaluation samples too, as the paper's code does (its repository,
google-deepmind/randomized_positional_encodings, draws in every forward, training or not),
but deterministically: each forward draws from a generator seeded with ``EVAL_SEED``, so a
length-T input always gets the same positions and evaluating never touches the global RNG.
(Positions 0 .. T-1 at test time would show the model consecutive positions it hardly ever
saw in training, where T << L spreads them out.) Positions are drawn for the padded
length, so padding (which trails) changes the positions real tokens get.

A decoder draws the positions of the whole target once (the teacher-forced length, or a
decoding's ``max_new_tokens``) and each step takes the next one, so a cached step sits
where the full-prefix pass puts it; cross-attention uses no positions, as in every mode.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .attention import PositionalEncoding

EVAL_SEED = 0


class RandomizedPositionalEncoding(PositionalEncoding):
    """Input encoding read at sorted random positions below ``pos_range`` (``pos_mode="randomized"``).

    Args:
        table: the encoding whose rows are read at the drawn positions, with a ``max_len``
            (the longest sequence the model reads) and ``forward(x, positions=...)``
            (``build_positional`` passes a ``SinusoidalPositionalEncoding``, the paper's
            main variant; it computes rows past its ``max_len`` on demand).
        pos_range: L, the positions are drawn from [0, L); None: the table's ``max_len``.
            At least ``max_len``: every sequence the model reads must fit in it.
    """

    def __init__(self, table: PositionalEncoding, pos_range: int | None = None) -> None:
        super().__init__()
        self.table = table
        # which option set the range: what the error of a too-long sequence tells to raise
        self.range_option = "max_len" if pos_range is None else "pos_range"
        self.pos_range: int = table.max_len if pos_range is None else pos_range
        if self.pos_range < table.max_len:
            raise ValueError(
                f"pos_range={pos_range} is shorter than the longest sequence the model reads, "
                f"max_len={table.max_len}; give pos_range >= {table.max_len} (or null: max_len)"
            )

    def positions(self, length: int, offset: int = 0, device: torch.device | None = None) -> Tensor:
        """A sorted random subset of size ``length`` of [0, pos_range): (T,) long, increasing.

        Fresh from the global RNG in training; the same for every call in evaluation.
        """
        if offset != 0:
            raise ValueError(
                "randomized positions are drawn per sequence: pass positions= (the draw for "
                f"the whole sequence) instead of offset={offset}"
            )
        if length > self.pos_range:
            name, limit = self.range_option, self.pos_range
            raise ValueError(
                f"sequence length {length} exceeds pos_mode='randomized''s range of {name}="
                f"{limit} positions (it draws them from [0, {limit})); raise {name} to at "
                f"least {length} (before training: its range is what it trained on)"
            )
        g = None if self.training else torch.Generator().manual_seed(EVAL_SEED)
        drawn = torch.randperm(self.pos_range, generator=g)[:length].sort().values  # on the CPU
        return drawn.to(device)

    def forward(self, x: Tensor, offset: int = 0, *, positions: Tensor | None = None) -> Tensor:
        """Add the table's rows at ``positions`` (T,) long, drawn here when None: (B, T, d)."""
        if positions is None:
            positions = self.positions(x.shape[1], offset, device=x.device)
        return self.table(x, positions=positions)
