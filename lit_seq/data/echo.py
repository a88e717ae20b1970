"""`echo`: repeat the input bit seen `lag` steps ago."""

import torch
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.start_marker import add_start_marker
from lit_seq.util.checks import check_int

# Which fixed-length split a training-length sequence belongs to: a hash of its bits, 0..7.
HELD_OUT = {"test": 0, "val": 1}  # 1/8 of the sequences each; training gets the other 6/8


def split_of(bits: Tensor) -> Tensor:
    """(B, N) bits -> (B,) hash class in 0..7: a fixed function of the sequence (any seed).

    The weights are drawn once from a fixed seed, so every data seed holds out the same
    sequences; with 20-bit weights the sum fits int64 at any length.
    """
    weights = torch.randint(0, 2**20, (bits.shape[1],), generator=torch.Generator().manual_seed(0))
    return (bits.long() * weights).sum(dim=1) % 8


def _draw_split(n: int, length: int, generator: torch.Generator, split: str) -> Tensor:
    """n random bit sequences (n, length) of ``split`` only (rejection sampling)."""
    kept, count = [], 0
    while count < n:
        bits = torch.randint(0, 2, (4 * n, length), generator=generator)
        cls = split_of(bits)
        ok = cls == HELD_OUT[split] if split in HELD_OUT else cls >= len(HELD_OUT)
        kept.append(bits[ok])
        count += int(ok.sum())
    return torch.cat(kept)[:n]


def echo_targets(bits: Tensor, lag: int) -> Tensor:
    """y_t = bits_{t - lag}, and 0 where t < lag: (B, N) -> (B, N).

    Example: bits [1, 0, 1, 1, 0], lag 2 -> [0, 0, 1, 0, 1].
    """
    n_steps = bits.shape[1]
    targets = torch.zeros_like(bits)
    # A shift right by `lag`; max() keeps a lag longer than the sequence an all-zero target.
    targets[:, lag:] = bits[:, : max(n_steps - lag, 0)]
    return targets


class EchoData(SyntheticDataModule):
    """Per-step binary task: output the input bit from `lag` steps earlier.

    x (B, N, 1) float random bits; y (B, N) float with y_t = x_{t - lag} and y_t = 0 for
    t < lag; `mask` (B, N) bool is t >= lag, the positions that are scored (before them the
    answer does not exist in the input). Worked example, lag 2: [1, 0, 1, 1, 0] -> [0, 0, 1, 0, 1].
    Every split draws fresh random sequences from its own seed. At the training length the
    splits are disjoint sets (``holdout``): at length 10 there are only 1024 sequences, and
    4000 independent draws for training hold nearly all of them (a training-length test set
    drawn alike was 97.8% training sequences), so a hash of the bits (:func:`split_of`)
    gives 1/8 of all sequences to the test set, 1/8 to validation and the rest to training.
    The longer generalisation sets are independent draws; their positions past the
    training length are unseen whatever their prefix.

    Args:
        length: time steps per training sequence; must exceed lag.
        lag: how many steps back the echoed bit lies (0 is the identity).
        start_marker: add an input channel that is 1 at position 0 only
            (``lit_seq.data.start_marker``): tells a model without positional encodings
            where the sequence begins.
        holdout: keep the training-length splits disjoint (see above); false draws each
            split independently (the behaviour before).
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "echo"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "binary"

    def __init__(
        self,
        length: int = 10,
        lag: int = 2,
        start_marker: bool = False,
        holdout: bool = True,
        n_train: int = 4000,
        **kwargs,
    ) -> None:
        self.start_marker = start_marker
        self.holdout = holdout
        self.length = check_int("length", length, 1)
        # lag < length, or no position of a training sequence would ever be scored.
        allowed = f"in [0, length - 1 = {length - 1}]"
        self.lag = check_int("lag", lag, 0, maximum=length - 1, allowed=allowed)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def shortest_length(self) -> int:
        return self.lag + 1  # a position t >= lag must exist to be scored

    @property
    def in_features(self) -> int:
        return 1 + int(self.start_marker)

    @property
    def out_features(self) -> int:
        return 1

    def _generate_split(
        self, n: int, length: int, generator: torch.Generator, *, split: str
    ) -> dict[str, Tensor]:
        if not self.holdout or length != self.length:
            return self._generate(n, length, generator)
        return self._examples(_draw_split(n, length, generator, split=split).float())

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        return self._examples(torch.randint(0, 2, (n, length), generator=generator).float())

    def _examples(self, bits: Tensor) -> dict[str, Tensor]:
        """The inputs, targets and scored positions of ``bits`` (B, N)."""
        n, length = bits.shape
        y = echo_targets(bits, self.lag)  # (B, N)
        mask = (torch.arange(length) >= self.lag).expand(n, length)  # (B, N)
        # contiguous(): an expanded view would share one row across the whole split.
        x = bits.unsqueeze(-1)  # (B, N, 1)
        x = add_start_marker(x) if self.start_marker else x
        return {"x": x, "y": y, "mask": mask.contiguous()}
