"""`modular_arithmetic_brackets`: the value mod 5 of a random bracketed expression of +, -, *
(Delétang et al. 2023). The expressions' draw and parser serve `solve_equation` too."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.counter_random import Random
from lit_seq.util.checks import check_int

# The symbols after the residues 0 .. modulus - 1, as offsets from `modulus`, in Delétang's
# order. 'x' and '=' are solve_equation's: this task never draws them, and its one-hot has
# modulus + 6 columns, as theirs: the residues, + - * ( ) and x; '=' (modulus + 6) has none.
BRACKETS = {"+": 0, "-": 1, "*": 2, "(": 3, ")": 4, "x": 5, "=": 6}
N_SYMBOLS = 6  # columns after the residues: '+', '-', '*', '(', ')', 'x'

# The parser's state at one bracket depth, a column each: the value read so far as a + c x
# (x's coefficient carried along), the operator waiting for its right operand, and whether a
# unary minus waits for its operand.
VALUE, COEFFICIENT, OPERATOR, NEGATE = 0, 1, 2, 3
NO_OP, ADD, SUBTRACT, MULTIPLY = 0, 1, 2, 3
WORD = 2**31  # the draw's random integers are uniform in [0, 2^31)


def _combine(left: Tensor, a: Tensor, c: Tensor) -> Tensor:
    """The states ``left`` (B, 4) with their waiting operator applied to the operand a + c x:
    (B, 2) values and x's coefficients; NO_OP gives the operand itself. A product keeps the
    x term exact while x appears once: (a + c x)(a' + c' x) = a a' + (a c' + a' c) x."""
    left_a, left_c, op = left[:, VALUE], left[:, COEFFICIENT], left[:, OPERATOR]
    value = torch.where(op == ADD, left_a + a, torch.where(op == SUBTRACT, left_a - a, a))
    coefficient = torch.where(op == ADD, left_c + c, torch.where(op == SUBTRACT, left_c - c, c))
    value = torch.where(op == MULTIPLY, left_a * a, value)
    coefficient = torch.where(op == MULTIPLY, left_a * c + left_c * a, coefficient)
    return torch.stack([value, coefficient], dim=1)


def expression_values(
    tokens: Tensor, modulus: int, symbols: dict[str, int]
) -> tuple[Tensor, Tensor]:
    """Each expression as a + c x mod `modulus`: (B, N) -> a and c, each (B,).

    `symbols` maps '+', '-', '(', ')', 'x', '=' and, where the alphabet has it, '*' to their
    offsets from `modulus`. Every binary operation of Delétang's expressions sits in its own
    brackets, so each depth is read left to right with no precedence; a '-' that follows no
    operand (a residue, x or ')') is a unary minus. Nothing from '=' on is read. One step a
    position, vectorised over the batch, with the open brackets' states on a stack (B, N + 1,
    4). Examples (mod 5, BRACKETS): ((2*-3)-(4+1)) -> -6 - 5 = -11 -> a = 4, c = 0;
    (x-(-3)) -> a = 3, c = 1.
    """
    B, N = tokens.shape
    code = {name: modulus + offset for name, offset in symbols.items()}
    tokens = torch.where((tokens == code["="]).cumsum(dim=1) == 0, tokens, -1)  # '=' on: none
    is_digit, is_x = (tokens >= 0) & (tokens < modulus), tokens == code["x"]
    is_open, is_close = tokens == code["("], tokens == code[")"]
    ends = is_digit | is_x | is_close  # (B, N) an operand ends at this token
    after_operand = torch.cat([ends.new_zeros(B, 1), ends[:, :-1]], dim=1)
    is_minus = tokens == code["-"]
    unary = is_minus & ~after_operand
    operator = torch.where(is_minus & after_operand, SUBTRACT, NO_OP)
    operator = torch.where(tokens == code["+"], ADD, operator)
    if "*" in code:
        operator = torch.where(tokens == code["*"], MULTIPLY, operator)

    state = tokens.new_zeros(B, 4)  # (B, 4) the current depth's state
    stack = tokens.new_zeros(B, N + 1, 4)  # (B, depths + 1, 4) each open bracket's outer state
    depth = tokens.new_zeros(B)
    for t in range(N):
        # ')' hands its depth's value on to the state its '(' saved
        below = (depth - 1).clamp(min=0)[:, None, None].expand(B, 1, 4)
        outer = stack.gather(1, below)[:, 0]  # (B, 4)
        closes = is_close[:, t]
        base = torch.where(closes[:, None], outer, state)  # (B, 4) where the operand goes
        a = torch.where(closes, state[:, VALUE], torch.where(is_digit[:, t], tokens[:, t], 0))
        c = torch.where(closes, state[:, COEFFICIENT], is_x[:, t].long())
        sign = 1 - 2 * base[:, NEGATE]
        read = _combine(base, sign * a, sign * c) % modulus  # (B, 2)
        # the state after this token: an operand read, an operator or a unary minus noted
        after = state.clone()
        after[:, NEGATE] ^= unary[:, t].long()
        waiting = operator[:, t]
        after[:, OPERATOR] = torch.where(waiting != NO_OP, waiting, state[:, OPERATOR])
        after = torch.where(ends[:, t, None], F.pad(read, (0, 2)), after)
        # '(' saves this depth's state at its level (the others write to the spare last
        # level, one write a row) and starts the new depth empty
        opens = is_open[:, t]
        level = torch.where(opens, depth, N)[:, None, None].expand(B, 1, 4)
        stack = stack.scatter(1, level, state[:, None, :])
        state = torch.where(opens[:, None], 0, after)
        depth = depth + opens.long() - closes.long()
    return state[:, VALUE], state[:, COEFFICIENT]


def modular_arithmetic_brackets_labels(tokens: Tensor, modulus: int = 5) -> Tensor:
    """The value of each bracketed expression mod `modulus`: (B, N) -> (B,).

    Tokens are residues 0 .. modulus - 1 and, from `modulus` on, + - * ( ) (BRACKETS).
    Examples (mod 5): ((2*-3)-(4+1)) = -11 -> 4, in tokens [8, 8, 2, 7, 6, 3, 9, 6, 8, 4, 5,
    1, 9, 9] -> 4; the short ones: 3 -> 3, -2 -> 3, (4) -> 4, (-1) -> 4.
    """
    return expression_values(tokens, modulus, BRACKETS)[0]


def bracket_expressions(n: int, length: int, modulus: int, mult: bool, rng: Random) -> Tensor:
    """(n, length) tokens (BRACKETS) drawn as Delétang's recursion draws them, with no loop
    over the examples: one round per level of the recursion (a node of size s >= 5 has
    children of sizes <= s - 4, so (length - 1) // 4 rounds reach every leaf).

    Their recursion: size 1 is a residue d, 2 is -d, 3 is (d), 4 is (-d); a size s >= 5 is
    ( left op right ) with left's size uniform in 1..s-4, right's s - 3 - left, op uniform
    over + - (and * when `mult`), every choice independent. Here each position knows the
    node that covers it (its start and size), and a round splits every node of size >= 5
    at once. A node's choices are read from two words at its start: a position starts one
    node at most (a node's descendants start after it), so no two nodes share a word. A
    choice of k values is floor(w k / 2^31) for a word w uniform in [0, 2^31): off uniform
    by at most k / 2^31.
    """
    # two words a position: a split's size and operator, or a leaf's residue (the first)
    words = rng.integers("nodes", 0, WORD, (n, 2 * length)).unflatten(1, (2, length))
    B, device = len(words), words.device  # (B, 2, L)
    p = torch.arange(length, device=device)  # (L,)
    start = torch.zeros(B, length, dtype=torch.long, device=device)  # (B, L) its node's start
    size = torch.full_like(start, length)  # (B, L) its node's size; 0: it holds its symbol
    tokens = torch.zeros_like(start)
    n_ops = 3 if mult else 2
    for _ in range((length - 1) // 4):
        grows = size >= 5  # (B, L) in a node that splits now
        left = 1 + ((words[:, 0].gather(1, start) * (size - 4).clamp(min=1)) >> 31)
        op = (words[:, 1].gather(1, start) * n_ops) >> 31  # 0 +, 1 -, 2 *: their offsets
        offset = p - start
        in_left = (offset >= 1) & (offset <= left)
        in_right = (offset > left + 1) & (offset < size - 1)
        symbol = torch.where(offset == 0, modulus + BRACKETS["("], modulus + op)
        symbol = torch.where(offset == size - 1, modulus + BRACKETS[")"], symbol)
        tokens = torch.where(grows & ~in_left & ~in_right, symbol, tokens)
        # the children's positions take their node; the node's own three symbols size 0
        child_start = torch.where(in_left, start + 1, start + left + 2)
        child_size = torch.where(in_left, left, torch.where(in_right, size - 3 - left, 0))
        start = torch.where(grows & (in_left | in_right), child_start, start)
        size = torch.where(grows, child_size, size)
    # the leaves: d, -d, (d), (-d) for sizes 1..4
    digit = (words[:, 0].gather(1, start) * modulus) >> 31
    offset = p - start
    at_digit = (size >= 2).long() + (size == 4).long()  # its offset in d, -d, (d), (-d)
    leaf = torch.where(offset == at_digit, digit, modulus + BRACKETS["-"])
    leaf = torch.where((size >= 3) & (offset == 0), modulus + BRACKETS["("], leaf)
    leaf = torch.where((size >= 3) & (offset == size - 1), modulus + BRACKETS[")"], leaf)
    return torch.where(size > 0, leaf, tokens)


class ModularArithmeticBracketsData(SyntheticDataModule):
    """Sequence classification: the value mod 5 of a random bracketed expression.

    Delétang et al. 2023's "modular arithmetic (brackets)", the deterministic context-free
    task (google-deepmind/neural_networks_chomsky_hierarchy,
    tasks/dcf/modular_arithmetic_brackets.py, registered in experiments/constants.py with
    ``mult=True``): an expression of exactly N tokens from their recursion (see
    `bracket_expressions`: a residue, -d, (d) or (-d) for N = 1..4, else ( left op right )
    with left's size uniform), residues uniform in {0, .., modulus - 1}, operators uniform
    over + - * (+ - without `mult`); the label is its value mod `modulus` (5 in the paper).
    Alphabet: residue r is token r, then + - * ( ) x are modulus + 0 .. 5, one-hot over
    modulus + 6 (their input size; 'x' is never drawn, their '=' at modulus + 6 has no
    column). Worked example (mod 5): ((2*-3)-(4+1)) -> tokens [8, 8, 2, 7, 6, 3, 9, 6, 8, 4,
    5, 1, 9, 9] -> -6 - 5 = -11 -> class 4; at N = 2: -2 -> [6, 2] -> class 3. Batch keys:
    `x` (B, N, modulus + 6) float one-hot, `y` (B,) long. Length k x N: expressions of k x N
    tokens. Delétang trains with the uniform curriculum (`curriculum: true`, lengths 1..N).

    Args:
        length: tokens per training expression (N; the longest one with the curriculum).
        modulus: the modulus; the number of classes and of residue tokens.
        mult: draw * as well as + and - (theirs, as registered); false: + and - only.
        n_train: training expressions.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "modular_arithmetic_brackets"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "classification"

    def __init__(
        self, length: int = 20, modulus: int = 5, mult: bool = True, n_train: int = 5000, **kwargs
    ) -> None:
        self.length = check_int("length", length, 1)
        self.modulus = check_int("modulus", modulus, 2)
        if not isinstance(mult, bool):
            raise ValueError(f"mult must be true or false, got {mult!r}")
        self.mult = mult
        super().__init__(n_train=n_train, **kwargs)

    @property
    def in_features(self) -> int:
        return self.modulus + N_SYMBOLS

    @property
    def out_features(self) -> int:
        return self.modulus

    def _sample(self, n: int, length: int, rng: Random) -> dict[str, Tensor]:
        tokens = bracket_expressions(n, length, self.modulus, self.mult, rng)  # (B, N)
        x = F.one_hot(tokens, num_classes=self.in_features).float()  # (B, N, modulus + 6)
        return {"x": x, "y": modular_arithmetic_brackets_labels(tokens, self.modulus)}
