"""`cycle_navigation`: the state reached by moves left, stay, right on a cycle (Delétang 2023)."""

import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int

# Token t moves by t - 1, as Delétang's sampler (actions 0, 1, 2 -> steps -1, 0, +1).
LEFT, STAY, RIGHT = 0, 1, 2


def cycle_navigation_labels(actions: Tensor, cycle: int) -> Tensor:
    """The final state on a cycle of `cycle` states, from state 0: (B, N) -> (B,).

    Example (cycle 5): [2, 0, 1, 0, 0] -> +1 -1 0 -1 -1 = -2 -> state 3; [2, 2, 2, 0] ->
    +1 +1 +1 -1 = 2 -> state 2.
    """
    return (actions - 1).sum(dim=1) % cycle  # % takes the sign of the divisor: -2 -> 3


class CycleNavigationData(SyntheticDataModule):
    """Sequence classification: the state reached on a cycle after random moves.

    The regular task of Delétang et al. 2023 (google-deepmind/neural_networks_chomsky_hierarchy,
    tasks/regular/cycle_navigation.py): each token is a move, uniform over left (token 0),
    stay (1) and right (2), one-hot; the agent starts at state 0 of a cycle of `cycle`
    states (5 in the paper), and the class is the state after the last move. Worked
    example (cycle 5): tokens 2 0 1 0 0 -> moves +1 -1 0 -1 -1 -> -2 -> class 3. Batch
    keys: `x` (B, N, 3) float one-hot moves, `y` (B,) long. Length k x N is k x N moves.
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: moves per training sequence (N; the longest one with the curriculum).
        cycle: states on the cycle; the number of classes.
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "cycle_navigation"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "classification"

    def __init__(self, length: int = 20, cycle: int = 5, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        self.cycle = check_int("cycle", cycle, 2)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return 3  # left, stay, right

    @property
    def out_features(self) -> int:
        return self.cycle

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        actions = rng.integers("actions", 0, 3, (n, length))  # (B, N)
        x = F.one_hot(actions, num_classes=3).float()  # (B, N, 3)
        return {"x": x, "y": cycle_navigation_labels(actions, self.cycle)}
