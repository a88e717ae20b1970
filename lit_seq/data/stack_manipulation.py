"""`stack_manipulation`: run POP / PUSH 0 / PUSH 1 on a given stack, write the final stack
top first (Delétang et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
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
    """
    B, N = tokens.shape
    rows = torch.arange(B)
    stack = tokens.new_zeros(B, N + 1)  # (B, N + 1) bottom first; room for every push
    height = tokens.new_zeros(B)  # (B,)
    # One step per token, vectorised over the batch. A POP row writes above its top, where
    # nothing is read before a later push overwrites it.
    for t in range(N):
        token = tokens[:, t]
        stack[rows, height] = torch.where(token <= 1, token, token - PUSH_0)
        height = torch.where(token == POP, (height - 1).clamp(min=0), height + 1)
    i = torch.arange(N + 1).unsqueeze(0)  # (1, N + 1) output positions
    height = height.unsqueeze(1)  # (B, 1)
    from_top = stack.gather(1, (height - 1 - i).clamp(min=0))  # (B, N + 1)
    targets = torch.where(i < height, from_top, torch.where(i == height, END, 0))
    return targets, i <= height


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

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        bits = torch.randint(0, 2, (n, length), generator=generator)  # (B, N)
        if length == 1:  # no room for an action: a one-bit stack
            tokens = bits
        else:
            actions = torch.randint(POP, PUSH_1 + 1, (n, length), generator=generator)
            stack_size = torch.randint(1, length, (n, 1), generator=generator)  # (B, 1)
            tokens = torch.where(torch.arange(length) < stack_size, bits, actions)
        y, mask = stack_manipulation_targets(tokens)
        x = F.one_hot(tokens, num_classes=5).float()  # (B, N, 5)
        return {"x": x, "y": y, "mask": mask}
