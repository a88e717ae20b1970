"""`parity_sum`: at each step, the running sum of the values at positions of the same parity."""

import torch
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.start_marker import add_start_marker
from lit_seq.util.checks import check_int


def parity_sum_targets(values: Tensor) -> Tensor:
    """Per-step sums of the values at k <= t with k % 2 == t % 2: (B, N) -> (B, N).

    Example: [1, 2, 3, 4, 5] -> [1, 2, 1+3, 2+4, 1+3+5] = [1, 2, 4, 6, 9].
    """
    targets = torch.empty_like(values)
    # Even and odd positions form two independent streams: a cumulative sum over each.
    targets[:, 0::2] = values[:, 0::2].cumsum(dim=1)
    targets[:, 1::2] = values[:, 1::2].cumsum(dim=1)
    return targets


class ParitySumData(SyntheticDataModule):
    """Per-step regression: the running sum of the values whose index has the parity of t.

    Input x (B, N, 2) float: [value, t % 2], value a uniform integer in [1, max_val].
    Target y (B, N) float. Worked examples:
    [1, 2, 3, 4, 5] -> [1, 2, 4, 6, 9] and [1, 5, 2, 1, 5, 1, 3] -> [1, 5, 3, 6, 8, 7, 11].
    Targets grow with the length, so the length-generalisation sets also test extrapolation
    in value, not only in position.

    Args:
        length: time steps per training sequence.
        max_val: values are integers drawn uniformly from [1, max_val].
        start_marker: add an input channel that is 1 at position 0 only
            (``lit_seq.data.start_marker``): tells a model without positional encodings
            where the sequence begins.
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "parity_sum"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "regression"

    def __init__(
        self,
        length: int = 20,
        max_val: int = 10,
        start_marker: bool = False,
        n_train: int = 5000,
        **kwargs,
    ) -> None:
        self.start_marker = start_marker
        # two parity streams need two positions: length 1 has no odd stream to sum
        self.length = check_int("length", length, 2)
        self.max_val = check_int("max_val", max_val, 1)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def shortest_length(self) -> int:
        return 2  # two parity streams need two positions

    @property
    def in_features(self) -> int:
        return 2 + int(self.start_marker)

    @property
    def out_features(self) -> int:
        return 1

    @property
    def target_scale(self) -> float:
        """max_val * length / 2: the size of the largest targets at training length.

        The regression system may divide targets by it so the loss starts near 1.
        """
        return self.max_val * self.length / 2

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        values = torch.randint(1, self.max_val + 1, (n, length), generator=generator)  # (B, N)
        parity = (torch.arange(length) % 2).expand(n, length)  # (B, N)
        x = torch.stack([values, parity], dim=-1).float()  # (B, N, 2)
        x = add_start_marker(x) if self.start_marker else x
        # Integer sums first, then float: exact as long as they stay below 2**24.
        y = parity_sum_targets(values).float()  # (B, N)
        return {"x": x, "y": y}
