"""`stack_manipulation`: run POP / PUSH 0 / PUSH 1 on a given stack, write the final stack
top first (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int

# Input tokens, as Delétang's: the stack's bits 0 and 1, then the actions.
POP, PUSH_0, PUSH_1 = 2, 3, 4
END = 2  # the output symbol after the final stack (outputs are 0, 1 and END)


def stack_manipulation_targets(tokens: Tensor) -> tuple[Tensor, Tensor]:
    """The final stack top to bottom, END, zeros: (B, N) -> targets and mask, both (B, N + 1).

    Bits 0 and 1 (the initial stack, given bottom to top) push themselves, PUSH_0 and
    PUSH_1 push 0 and 1, POP removes the top (nothing on an empty stack). The mask holds
    the positions up to and with END (those Delétang's accuracy counts). Example: [1, 0,
    PUSH_1, POP, PUSH_0] -> stack 1 0, then 1 0 1, 1 0, 1 0 0 -> targets [0, 0, 1, END, 0,
    0], mask [1, 1, 1, 1, 0, 0].

    No loop: the stack's height after token t is the walk of +1 (push) / -1 (pop) steps
    reflected at 0, ``S_t - min(0, min_{s <= t} S_s)`` with S the running sum; a symbol
    pushed at t, at height H_t, is still on the stack at the end when the height never
    falls below H_t after t, and it then sits at index H_t - 1 from the bottom.
    """
    B, N = tokens.shape
    push = tokens != POP  # (B, N)
    walk = torch.where(push, 1, -1).cumsum(dim=1)  # (B, N) the unreflected height
    height = walk - walk.cummin(dim=1).values.clamp(max=0)  # (B, N) after each token
    # the lowest height after t (the final height for the last token, which is >= its own)
    after = height.flip(dims=[1]).cummin(dim=1).values.flip(dims=[1])  # min over s >= t
    lowest_later = torch.cat([after[:, 1:], height[:, -1:]], dim=1)  # min over s > t
    kept = push & (lowest_later >= height)  # (B, N) pushed at t and never popped
    value = torch.where(tokens <= 1, tokens, tokens - PUSH_0)  # the symbol a push puts on
    # every kept symbol at its index from the bottom; the others to columns N.. apart (so
    # that no two writes meet: the scatter is deterministic on every device)
    t = torch.arange(N, device=tokens.device)
    stack = tokens.new_zeros(B, 2 * N + 1).scatter_(1, torch.where(kept, height - 1, N + t), value)
    final = height[:, -1:]  # (B, 1)
    i = torch.arange(N + 1, device=tokens.device).unsqueeze(0)  # (1, N + 1) output positions
    from_top = stack.gather(1, (final - 1 - i).clamp(min=0))  # (B, N + 1)
    targets = torch.where(i < final, from_top, torch.where(i == final, END, 0))
    return targets, i <= final


class StackManipulationData(SyntheticDataModule):
    """Transduction: a stack and actions in, the final stack out (top first), on N + 1
    empty positions after the input.

    The deterministic context-free task of Delétang et al. 2023
    (google-deepmind/neural_networks_chomsky_hierarchy, tasks/dcf/stack_manipulation.py):
    an input of length N >= 2 is a stack of S bits (S uniform in 1..N-1, the bits uniform,
    bottom to top) followed by N - S actions uniform over POP (2), PUSH 0 (3), PUSH 1 (4);
    one of length 1 is a single bit. Inputs are one-hot over those 5 tokens. The output
    (N + 1 positions) is the final stack top to bottom, the END symbol 2, then zeros; only
    the positions up to END are scored (`mask`), all of them are trained on, as theirs.
    Worked example: 1 0 PUSH1 POP PUSH0 -> stack 1 0 -> 1 0 1 -> 1 0 -> 1 0 0 -> output
    0 0 1 END 0 0. Batch keys: `x` (B, N, 5) float one-hot, `y` (B, N + 1) long, `mask`
    (B, N + 1) bool. Length k x N: k x N tokens in, k x N + 1 out.
    Delétang trains with the uniform curriculum (`curriculum: true`, every length 1..N).

    Args:
        length: tokens per training input (N; the longest one with the curriculum).
        n_train: training inputs.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "stack_manipulation"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "transduction"

    def __init__(self, length: int = 20, n_train: int = 5000, **kwargs) -> None:
        self.length = check_int("length", length, 1)
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return 5  # bits 0 and 1, POP, PUSH 0, PUSH 1

    @property
    def out_features(self) -> int:
        return 3  # bits 0 and 1, END

    def output_length(self, length: int) -> int:
        return length + 1  # room for a stack of every token, and END

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        bits = rng.integers("bits", 0, 2, (n, length))  # (B, N)
        if length == 1:  # no room for an action: a one-bit stack
            tokens = bits
        else:
            actions = rng.integers("actions", POP, PUSH_1 + 1, (n, length))
            stack_size = rng.integers("stack_size", 1, length, (n, 1))  # (B, 1)
            positions = torch.arange(length, device=rng.device)
            tokens = torch.where(positions < stack_size, bits, actions)
        y, mask = stack_manipulation_targets(tokens)
        x = F.one_hot(tokens, num_classes=5).float()  # (B, N, 5)
        return {"x": x, "y": y, "mask": mask}
