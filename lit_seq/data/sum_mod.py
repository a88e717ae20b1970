"""`sum_mod`: at each step, the running sum mod k of the values at positions of t's parity."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.start_marker import add_start_marker
from lit_seq.util.checks import check_int


def sum_mod_targets(values: Tensor, modulus: int) -> Tensor:
    """Per-step sums mod `modulus` of the values at k <= t with k % 2 == t % 2: (B, N) -> (B, N).

    Example, modulus 5: [1, 2, 3, 4, 4] -> sums [1, 2, 1+3, 2+4, 1+3+4] = [1, 2, 4, 6, 8]
    -> [1, 2, 4, 1, 3].
    """
    targets = torch.empty_like(values)
    # Even and odd positions form two independent streams: a cumulative sum over each.
    targets[:, 0::2] = values[:, 0::2].cumsum(dim=1)
    targets[:, 1::2] = values[:, 1::2].cumsum(dim=1)
    return targets % modulus


class SumModData(SyntheticDataModule):
    """Per-step k-way classification: `parity_sum`'s running sums, taken mod `modulus`.

    The per-step form of parity check (modulus 2, one stream) and of modular arithmetic:
    values uniform in {0, .., modulus - 1}; at step t the target is the sum mod `modulus` of
    the values at positions k <= t with k % 2 == t % 2. Unlike `parity_sum` the output
    alphabet is the same at every length (chance is 1 / modulus everywhere), so a longer test
    set tests the algorithm, not extrapolation in value. Kazemnejad et al. 2023
    (McGill-NLP/length-generalization, scripts/dataset_builders/make_sum_dataset.py with
    --modular) ship a per-sequence `sum_mod`: values in 1..9, one label, the sum of all of
    them mod 10; this is its per-step, two-stream variant.
    Input x (B, N, modulus + 1) float: the one-hot value, then t % 2 (as parity_sum's
    [value, t % 2]); with `start_marker` one more channel, 1 at position 0 only. Target y
    (B, N) long; `mask` (B, N) bool, all True (every step scored). Worked example, modulus 5:
    [1, 2, 3, 4, 4] -> [1, 2, 4, 1, 3]; with the marker, x[0] = [0, 1, 0, 0, 0, 0, 1] (one-hot
    1, parity 0, marker 1) and x[1] = [0, 0, 1, 0, 0, 1, 0], the targets the same. Length
    k x N: k x N values.

    Args:
        length: time steps per training sequence (N; the longest with the curriculum).
        modulus: the modulus k: values and classes are 0 .. k - 1.
        start_marker: add an input channel that is 1 at position 0 only
            (``lit_seq.data.start_marker``): tells a model without positional encodings
            where the sequence begins, as a causal LM's BOS token does.
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "sum_mod"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "step_classification"

    def __init__(
        self,
        length: int = 20,
        modulus: int = 5,
        start_marker: bool = False,
        n_train: int = 5000,
        **kwargs,
    ) -> None:
        self.start_marker = start_marker
        self.length = check_int("length", length, 1)
        self.modulus = check_int("modulus", modulus, 2)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return self.modulus + 1 + int(self.start_marker)  # one-hot value, t % 2, marker

    @property
    def out_features(self) -> int:
        return self.modulus

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        values = torch.randint(0, self.modulus, (n, length), generator=generator)  # (B, N)
        one_hot = F.one_hot(values, num_classes=self.modulus).float()  # (B, N, k)
        parity = (
            (torch.arange(length) % 2).float().view(1, length, 1).expand(n, -1, -1)
        )  # (B, N, 1)
        x = torch.cat([one_hot, parity], dim=-1)  # (B, N, k + 1)
        x = add_start_marker(x) if self.start_marker else x  # (B, N, k + 2) with it
        mask = torch.ones(n, length, dtype=torch.bool)  # every step has a defined answer
        return {"x": x, "y": sum_mod_targets(values, self.modulus), "mask": mask}
