"""Delétang et al. 2023's tasks: each worked example exactly, and each generator against a
plain-Python definition of the task on a few hundred examples at several lengths."""

import pytest
import torch

from lit_seq.data import (
    TASKS,
    BinaryAdditionData,
    CycleNavigationData,
    DuplicateStringData,
    EvenPairsData,
    OddsFirstData,
    ReverseStringData,
    StackManipulationData,
    binary_addition_targets,
    cycle_navigation_labels,
    duplicate_string_targets,
    even_pairs_labels,
    odds_first_targets,
    reverse_string_targets,
    stack_manipulation_targets,
)

LENGTHS = [1, 2, 3, 7, 16]  # edge cases (no pair, no room for an action or a PLUS) and more
PER_LENGTH = 60  # 300 examples per task
END = 2  # the output symbol after the stack / the sum


def tokens_of(x: torch.Tensor) -> list[list[int]]:
    """One-hot (B, L, V) -> token ids, checking that every position is one-hot."""
    assert torch.equal(x.sum(-1), torch.ones(x.shape[:2]))
    return x.argmax(-1).tolist()


def drawn(task, length: int, seed: int = 0) -> dict[str, torch.Tensor]:
    return task.draw(PER_LENGTH, length, torch.Generator().manual_seed(seed))


# ---- the definitions, one plain loop each ---------------------------------------------------


def even_pairs(bits: list[int]) -> int:
    return sum(a != b for a, b in zip(bits, bits[1:], strict=False)) % 2


def cycle_navigation(actions: list[int], cycle: int = 5) -> int:
    state = 0
    for action in actions:  # 0 left, 1 stay, 2 right
        state = (state + action - 1) % cycle
    return state


def odds_first(s: list[int]) -> list[int]:
    return [s[i] for i in range(1, len(s), 2)] + [s[i] for i in range(0, len(s), 2)]


def stack_manipulation(tokens: list[int]) -> list[int]:
    stack = []
    for token in tokens:
        if token in (0, 1):  # the initial stack, bottom first
            stack.append(token)
        elif token == 2:  # POP; nothing on an empty stack
            if stack:
                stack.pop()
        else:  # PUSH 0 (3), PUSH 1 (4)
            stack.append(token - 3)
    out = stack[::-1] + [END]
    return out + [0] * (len(tokens) + 1 - len(out))


def number(bits: list[int]) -> int:
    return sum(bit << k for k, bit in enumerate(bits))  # little-endian


def binary_addition(tokens: list[int]) -> list[int]:
    plus = tokens.index(2) if 2 in tokens else len(tokens)
    total = number(tokens[:plus]) + number(tokens[plus + 1 :])
    out = [int(c) for c in reversed(f"{total:b}")] + [END]
    return out + [0] * (len(tokens) + 1 - len(out))


def scored(target: list[int], ends: bool) -> list[bool]:
    """Delétang's accuracy mask: up to and with the first END where the output has one."""
    if not ends:
        return [True] * len(target)
    end = target.index(END)
    return [i <= end for i in range(len(target))]


# ---- worked examples, as the docstrings give them -----------------------------------------


def test_even_pairs_worked_examples():
    bits = torch.tensor([[0, 1, 1, 1, 0, 1, 0], [0, 1, 1, 0, 0, 0, 0]])  # 0111010; 011 + 0000
    assert even_pairs_labels(bits).tolist() == [0, 0]
    assert even_pairs_labels(torch.tensor([[0, 1, 1]])).tolist() == [1]
    assert even_pairs_labels(torch.tensor([[1]])).tolist() == [0]


def test_cycle_navigation_worked_examples():
    moves = torch.tensor([[2, 0, 1, 0, 0], [2, 2, 2, 0, 1]])  # -2 -> 3; +2 -> 2
    assert cycle_navigation_labels(moves, cycle=5).tolist() == [3, 2]


def test_reverse_duplicate_and_odds_first_worked_examples():
    assert reverse_string_targets(torch.tensor([[0, 1, 1, 0, 1, 0]])).tolist() == [
        [0, 1, 0, 1, 1, 0]
    ]
    assert duplicate_string_targets(torch.tensor([[1, 0, 1]])).tolist() == [[1, 0, 1, 1, 0, 1]]
    assert odds_first_targets(torch.tensor([[0, 0, 1, 1, 0, 1, 0, 1]])).tolist() == [
        [0, 1, 1, 1, 0, 1, 0, 0]
    ]
    assert odds_first_targets(torch.tensor([[1, 1, 0]])).tolist() == [[1, 1, 0]]


def test_stack_manipulation_worked_example():
    # 1 0 PUSH1 POP PUSH0 -> stack 1 0 -> 1 0 1 -> 1 0 -> 1 0 0, written top first
    targets, mask = stack_manipulation_targets(torch.tensor([[1, 0, 4, 2, 3]]))
    assert targets.tolist() == [[0, 0, 1, END, 0, 0]]
    assert mask.tolist() == [[True, True, True, True, False, False]]
    # popping an empty stack does nothing
    targets, _ = stack_manipulation_targets(torch.tensor([[1, 2, 2, 4]]))
    assert targets.tolist() == [[1, END, 0, 0, 0]]


def test_binary_addition_worked_example():
    # 001 + 01101 = 4 + 22 = 26 = 01011 little-endian, END, zeros to 9 + 1 positions
    targets, mask = binary_addition_targets(torch.tensor([[0, 0, 1, 2, 0, 1, 1, 0, 1]]))
    assert targets.tolist() == [[0, 1, 0, 1, 1, END, 0, 0, 0, 0]]
    assert mask.tolist() == [[True] * 6 + [False] * 4]
    targets, _ = binary_addition_targets(torch.tensor([[0, 0]]))  # no PLUS: zero is "0"
    assert targets.tolist() == [[0, END, 0]]


# ---- the generators against the definitions ------------------------------------------------


@pytest.mark.parametrize("length", LENGTHS)
def test_classification_tasks_match_their_definitions(length):
    for task, definition in (
        (EvenPairsData(), even_pairs),
        (CycleNavigationData(), cycle_navigation),
    ):
        batch = drawn(task, length)
        tokens = tokens_of(batch["x"])
        assert batch["x"].shape == (PER_LENGTH, length, task.in_features)
        assert batch["y"].tolist() == [definition(row) for row in tokens]
        assert all(0 <= t < task.in_features for row in tokens for t in row)


STRING_TASKS = {
    "reverse_string": (lambda s: s[::-1], False),
    "duplicate_string": (lambda s: s + s, False),
    "odds_first": (odds_first, False),
    "stack_manipulation": (stack_manipulation, True),
    "binary_addition": (binary_addition, True),
}


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("name", list(STRING_TASKS))
def test_string_tasks_match_their_definitions(name, length):
    task = TASKS[name]()
    definition, ends = STRING_TASKS[name]
    batch = drawn(task, length)
    tokens = tokens_of(batch["x"])
    assert batch["x"].shape == (PER_LENGTH, length, task.in_features)
    assert batch["y"].shape == (PER_LENGTH, task.output_length(length))
    expected = [definition(row) for row in tokens]
    assert batch["y"].tolist() == expected
    assert batch["mask"].tolist() == [scored(target, ends) for target in expected]
    assert int(batch["y"].max()) < task.out_features


@pytest.mark.parametrize("length", LENGTHS)
def test_stack_manipulation_samples_a_stack_then_actions(length):
    for row in tokens_of(drawn(StackManipulationData(), length)["x"]):
        if length == 1:
            assert row in ([0], [1])  # a one-bit stack, no action
            continue
        size = next(i for i, t in enumerate(row) if t >= 2)  # where the actions start
        assert 1 <= size <= length - 1
        assert set(row[:size]) <= {0, 1} and set(row[size:]) <= {2, 3, 4}


def test_stack_sizes_and_actions_are_uniform_in_their_ranges():
    rows = tokens_of(StackManipulationData().draw(600, 7, torch.Generator().manual_seed(1))["x"])
    sizes = [next(i for i, t in enumerate(row) if t >= 2) for row in rows]
    assert set(sizes) == {1, 2, 3, 4, 5, 6}
    assert {t for row in rows for t in row} == {0, 1, 2, 3, 4}


@pytest.mark.parametrize("length", LENGTHS)
def test_binary_addition_samples_two_non_zero_numbers(length):
    for row in tokens_of(drawn(BinaryAdditionData(), length)["x"]):
        if length <= 2:  # their edge case: one number in 0 .. 2^N - 2, no PLUS
            assert 2 not in row and number(row) <= 2**length - 2
            continue
        assert row.count(2) == 1
        plus = row.index(2)
        assert 1 <= plus <= length - 2  # both numbers have at least one bit
        assert number(row[:plus]) >= 1 and number(row[plus + 1 :]) >= 1


def test_sizes_output_lengths_and_the_longest_tape():
    # the model reads the input and the appended output: max_len counts both
    assert (DuplicateStringData(length=10).max_len, DuplicateStringData().output_length(3)) == (
        120,
        6,
    )
    assert ReverseStringData(length=10).max_len == 80
    assert StackManipulationData(length=10).max_len == 81
    assert (StackManipulationData().in_features, StackManipulationData().out_features) == (5, 3)
    assert (BinaryAdditionData().in_features, BinaryAdditionData().out_features) == (3, 3)
    assert (OddsFirstData(vocab=3).in_features, OddsFirstData(vocab=3).out_features) == (3, 3)
    assert EvenPairsData(length=10).max_len == 40  # one label: nothing appended
    assert CycleNavigationData(cycle=7).out_features == 7
    kinds = {name: cls.task_kind for name, cls in TASKS.items()}
    assert {kinds[name] for name in STRING_TASKS} == {"transduction"}
    assert kinds["even_pairs"] == kinds["cycle_navigation"] == "classification"


def test_bad_arguments_name_the_field():
    with pytest.raises(ValueError, match="vocab must be an integer >= 2, got 1"):
        ReverseStringData(vocab=1)
    with pytest.raises(ValueError, match="cycle must be an integer >= 2, got 1"):
        CycleNavigationData(cycle=1)
    with pytest.raises(ValueError, match="length must be an integer >= 1, got 0"):
        BinaryAdditionData(length=0)
