"""The six tasks of Delétang et al. 2023's Table 2 added in issue 56: each worked example
exactly, the labels against plain-Python definitions at every edge length, the samplers'
distributions against their recursion and draws, and fresh draws on the device, K members
in one call."""

import math
from collections import Counter
from functools import cache

import pytest
import torch

from lit_seq.data import (
    TASKS,
    BinaryMultiplicationData,
    BucketSortData,
    ComputeSqrtData,
    ModularArithmeticBracketsData,
    SolveEquationData,
    binary_multiplication_targets,
    bucket_sort_targets,
    compute_sqrt_targets,
    missing_duplicate_string_labels,
    modular_arithmetic_brackets_labels,
    solve_equation_labels,
)
from lit_seq.data.counter_random import HostRandom
from lit_seq.data.modular_arithmetic_brackets import (
    BRACKETS,
    bracket_expressions,
    expression_values,
)
from lit_seq.data.solve_equation import EQUATION
from lit_seq.population.loader import DrawnTogether, drawn_together

TABLE2 = (
    "modular_arithmetic_brackets",
    "solve_equation",
    "missing_duplicate_string",
    "binary_multiplication",
    "compute_sqrt",
    "bucket_sort",
)
LENGTHS = [1, 2, 3, 4, 5, 6, 7, 9, 16, 40]  # every edge case, then longer
END = 2  # the product's end symbol


def tokens(text: str, symbols: dict[str, int], modulus: int = 5) -> list[int]:
    """An expression's tokens: residues as themselves, symbols at modulus + offset."""
    return [int(c) if c.isdigit() else modulus + symbols[c] for c in text]


def text(row: list[int], symbols: dict[str, int], modulus: int = 5) -> str:
    names = {modulus + offset: name for name, offset in symbols.items()}
    return "".join(str(t) if t < modulus else names[t] for t in row)


def bits(s: str) -> list[int]:
    return [int(c) for c in s]


def tokens_of(x: torch.Tensor) -> list[list[int]]:
    """One-hot (B, N, V) -> token ids, checking that every position is one-hot."""
    assert torch.equal(x.sum(-1), torch.ones(x.shape[:2]))
    return x.argmax(-1).tolist()


def drawn(name: str, n: int, length: int, seed: int = 0, **kwargs) -> dict[str, torch.Tensor]:
    return TASKS[name](**kwargs).draw(n, length, torch.Generator().manual_seed(seed))


def within(count: int, n: int, p: float, sigmas: float = 4.0) -> bool:
    """A binomial count of n draws at probability p, within `sigmas` standard deviations
    (and one count, for the rounding)."""
    return abs(count - n * p) <= sigmas * math.sqrt(n * p * (1 - p)) + 1


# ---- worked examples, as the docstrings give them -----------------------------------------


def test_modular_arithmetic_brackets_worked_examples():
    example = tokens("((2*-3)-(4+1))", BRACKETS)
    assert example == [8, 8, 2, 7, 6, 3, 9, 6, 8, 4, 5, 1, 9, 9]
    assert modular_arithmetic_brackets_labels(torch.tensor([example])).tolist() == [4]
    for expression, value in (("3", 3), ("-2", 3), ("(4)", 4), ("(-1)", 4)):  # N = 1..4
        labels = modular_arithmetic_brackets_labels(torch.tensor([tokens(expression, BRACKETS)]))
        assert labels.tolist() == [value], expression
    assert tokens("-2", BRACKETS) == [6, 2]
    a, c = expression_values(torch.tensor([tokens("(x-(-3))", BRACKETS)]), 5, BRACKETS)
    assert (a.item(), c.item()) == (3, 1)


def test_solve_equation_worked_examples():
    example = tokens("((3-x)+(-2))=4", EQUATION)
    assert example == [7, 7, 3, 6, 9, 8, 5, 7, 6, 2, 8, 8, 10, 4]
    assert solve_equation_labels(torch.tensor([example])).tolist() == [2]
    assert tokens("x=3", EQUATION) == [9, 10, 3]
    assert solve_equation_labels(torch.tensor([[9, 10, 3]])).tolist() == [3]
    assert solve_equation_labels(torch.tensor([tokens("-x=1", EQUATION)])).tolist() == [4]
    for length in (1, 2):  # their edge case: zeros, label 0
        assert solve_equation_labels(torch.zeros(3, length, dtype=torch.long)).tolist() == [0] * 3


def test_missing_duplicate_string_worked_examples():
    labels = missing_duplicate_string_labels(torch.tensor([bits("01100210")]))
    assert labels.tolist() == [1]
    assert missing_duplicate_string_labels(torch.tensor([bits("1011213")])).tolist() == [0]
    assert missing_duplicate_string_labels(torch.tensor([[1]])).tolist() == [1]  # length 1


def test_binary_multiplication_worked_examples():
    # 001 * 01101 = 4 * 22 = 88 = 0001101 little-endian, END, a zero to 9 positions
    targets, mask = binary_multiplication_targets(torch.tensor([bits("001201101")]))
    assert targets.tolist() == [[0, 0, 0, 1, 1, 0, 1, END, 0]]
    assert mask.tolist() == [[True] * 8 + [False]]
    # 1001 * 000001 = 9 * 32 = 288 (their second example)
    targets, mask = binary_multiplication_targets(torch.tensor([bits("10012000001")]))
    assert targets.tolist() == [bits("00000100120")] and int(mask.sum()) == 10
    # no TIMES (lengths 1 and 2): N - 1 zeros and END, whatever the bits, all scored
    for row, want in (([1, 0], [0, END]), ([1, 1], [0, END]), ([0], [END])):
        targets, mask = binary_multiplication_targets(torch.tensor([row]))
        assert targets.tolist() == [want] and mask.all()


def test_compute_sqrt_worked_examples():
    # 37 -> 6 = 110 (their docstring writes 101; their code gives 110), 7 -> 2, 6 -> 2, 1 -> 1
    for number, root in (("100101", "110"), ("111", "10"), ("0110", "10"), ("1", "1")):
        assert compute_sqrt_targets(torch.tensor([bits(number)])).tolist() == [bits(root)]


def test_bucket_sort_worked_examples():
    assert bucket_sort_targets(torch.tensor([bits("10204112")])).tolist() == [bits("00111224")]
    assert bucket_sort_targets(torch.tensor([bits("1110001")]), vocab=2).tolist() == [
        bits("0001111")
    ]


# ---- the labels against plain-Python definitions ------------------------------------------


def brackets(row: list[int], modulus: int = 5) -> int:
    return eval(text(row, BRACKETS, modulus)) % modulus  # Python's unary minus and remainder


def solve(row: list[int], modulus: int = 5) -> int:
    if len(row) < 3:
        return 0
    equation = text(row, EQUATION, modulus)
    left, value = equation.split("=")
    [x] = [x for x in range(modulus) if eval(left.replace("x", str(x))) % modulus == int(value)]
    return x


def missing(row: list[int]) -> int:
    if 2 not in row:
        return 1
    half = len([t for t in row if t != 3]) // 2
    at = row.index(2)
    return row[at + half] if at < half else row[at - half]


def multiply(row: list[int]) -> list[int]:
    if 2 not in row:
        return [0] * (len(row) - 1) + [END]
    cut = row.index(2)
    n, m = (sum(b << i for i, b in enumerate(part)) for part in (row[:cut], row[cut + 1 :]))
    product = [int(c) for c in reversed(f"{n * m:b}")] + [END]
    return product + [0] * (len(row) - len(product))


def square_root(row: list[int]) -> list[int]:
    root = math.isqrt(int("".join(map(str, row)), 2))
    return bits(f"{root:b}".zfill((len(row) + 1) // 2))


DEFINITIONS = {  # one example's tokens -> its label or its whole output
    "modular_arithmetic_brackets": brackets,
    "solve_equation": solve,
    "missing_duplicate_string": missing,
    "binary_multiplication": multiply,
    "compute_sqrt": square_root,
    "bucket_sort": sorted,
}


def scored(target: list[int], ends: bool) -> list[bool]:
    """Delétang's accuracy mask: up to and with the first END where the output has one."""
    end = target.index(END) if ends else len(target)
    return [i <= end for i in range(len(target))]


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("name", TABLE2)
def test_every_drawn_example_is_labelled_as_the_definition_says(name, length):
    task = TASKS[name]()
    batch = drawn(name, 60, length)
    rows = tokens_of(batch["x"])
    assert batch["x"].shape == (60, length, task.in_features)
    expected = [DEFINITIONS[name](row) for row in rows]
    if task.task_kind == "classification":
        assert batch["y"].tolist() == expected
        assert int(batch["y"].max()) < task.out_features
        return
    assert batch["y"].shape == (60, task.output_length(length))
    assert batch["y"].tolist() == expected
    ends = name == "binary_multiplication"
    assert batch["mask"].tolist() == [scored(target, ends) for target in expected]


def test_the_label_functions_agree_with_the_definitions_on_long_random_inputs():
    generator = torch.Generator().manual_seed(0)
    for length in (1, 8, 41, 150):
        numbers = torch.randint(0, 2, (100, length), generator=generator)
        assert compute_sqrt_targets(numbers).tolist() == [
            square_root(row) for row in numbers.tolist()
        ]
        strings = torch.randint(0, 5, (100, length), generator=generator)
        assert bucket_sort_targets(strings).tolist() == [sorted(row) for row in strings.tolist()]
    # every carry of a product, with arbitrary numbers (zeros too) around TIMES
    for length in (3, 12, 80):
        rows = torch.randint(0, 2, (100, length), generator=generator)
        cut = torch.randint(1, length - 1, (100, 1), generator=generator)
        rows = torch.where(torch.arange(length) == cut, 2, rows)
        targets, mask = binary_multiplication_targets(rows)
        want = [multiply(row) for row in rows.tolist()]
        assert targets.tolist() == want
        assert mask.tolist() == [scored(target, True) for target in want]


# ---- the samplers: their forms and distributions --------------------------------------------


@cache
def in_their_language(expression: str) -> bool:
    """Whether their recursion can write ``expression`` (a plain-Python recogniser)."""
    size, digit = len(expression), lambda c: c in "01234"
    if size <= 4:
        forms = {1: "d", 2: "-d", 3: "(d)", 4: "(-d)"}[size]
        return all(digit(c) if f == "d" else c == f for c, f in zip(expression, forms, strict=True))
    if expression[0] != "(" or expression[-1] != ")":
        return False
    return any(
        expression[k] in "+-*"
        and in_their_language(expression[1:k])
        and in_their_language(expression[k + 1 : -1])
        for k in range(2, size - 2)
    )


def first_operand(expression: str) -> int:
    """The size of the operand ``expression`` opens with (a residue, -d or a bracket)."""
    if expression[0] != "(":
        return 1 + (expression[0] == "-")
    depth = 0
    for i, c in enumerate(expression):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return i + 1
    raise AssertionError(expression)


@cache
def value_distribution(size: int, mult: bool = True, modulus: int = 5) -> tuple[float, ...]:
    """P(label = v) of their recursion at ``size``, exactly (a dynamic programme)."""
    if size <= 4:  # d, -d, (d), (-d): uniform
        return (1 / modulus,) * modulus
    ops = ["+", "-", "*"] if mult else ["+", "-"]
    p = [0.0] * modulus
    for left in range(1, size - 3):
        a, b = value_distribution(left, mult), value_distribution(size - 3 - left, mult)
        for op in ops:
            for x in range(modulus):
                for y in range(modulus):
                    v = {"+": x + y, "-": x - y, "*": x * y}[op] % modulus
                    p[v] += a[x] * b[y] / ((size - 4) * len(ops))
    return tuple(p)


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 8, 13, 20])
def test_brackets_draws_are_their_recursions_expressions(length):
    for row in tokens_of(drawn("modular_arithmetic_brackets", 100, length)["x"]):
        expression = text(row, BRACKETS)
        assert len(expression) == length and in_their_language(expression), expression
        assert "x" not in expression and "=" not in expression


@pytest.mark.parametrize("mult", [True, False])
def test_brackets_splits_operators_and_labels_follow_their_recursion(mult):
    """At N = 12 the top split's left size is uniform over 1..8 and the top operator over
    + - (*); the labels follow their recursion's exact law (a dynamic programme; with * a
    zero is likelier: 9 / 25 for a product of two uniform residues)."""
    n = 4000
    batch = drawn("modular_arithmetic_brackets", n, 12, seed=1, mult=mult)
    expressions = [text(row, BRACKETS) for row in tokens_of(batch["x"])]
    lefts = Counter(first_operand(e[1:]) for e in expressions)
    assert set(lefts) == set(range(1, 9))
    assert all(within(lefts[k], n, 1 / 8) for k in range(1, 9)), lefts
    ops = Counter(e[1 + first_operand(e[1:])] for e in expressions)
    assert set(ops) == ({"+", "-", "*"} if mult else {"+", "-"})
    assert all(within(count, n, 1 / len(ops)) for count in ops.values()), ops
    law = value_distribution(12, mult)
    labels = Counter(batch["y"].tolist())
    assert all(within(labels[v], n, law[v]) for v in range(5)), (labels, law)
    if mult:
        assert law[0] > 0.25  # far from uniform: the test can tell


def test_solve_equation_draws_their_equations_and_their_x_positions():
    for length in (1, 2, 3, 4, 5, 9, 16):
        batch = drawn("solve_equation", 50, length)
        rows = torch.tensor(tokens_of(batch["x"]))  # the draw's labels are the parse's
        assert torch.equal(solve_equation_labels(rows), batch["y"])
        if length < 3:  # their edge case: zeros, label 0
            assert not rows.any() and not batch["y"].any()
            continue
        for row in rows.tolist():
            equation = text(row, EQUATION)
            left, value = equation.split("=")
            assert len(left) == length - 2 and value in "01234" and equation.count("x") == 1
            assert in_their_language(left.replace("x", "0")) and "*" not in left
    # at N = 7 every expression is (a op b): x lands on a when their start (uniform over the 5
    # positions) is 0, 1 or 4 (wrapping round), on b when it is 2 or 3
    n = 3000
    rows = [text(row, EQUATION) for row in tokens_of(drawn("solve_equation", n, 7, seed=2)["x"])]
    assert within(sum(row[1] == "x" for row in rows), n, 3 / 5)
    assert all((row[1] == "x") != (row[3] == "x") for row in rows)


def test_missing_duplicate_string_hides_a_uniform_position_of_a_uniform_string():
    n = 4000
    rows = tokens_of(drawn("missing_duplicate_string", n, 9, seed=3)["x"])
    assert all(row[-1] == 3 and row.count(2) == 1 for row in rows)  # odd: one PAD
    hidden = Counter(row.index(2) for row in rows)
    assert all(within(hidden[i], n, 1 / 8) for i in range(8)), hidden
    ones = sum(row.count(1) for row in rows)
    assert within(ones, 7 * n, 1 / 2)  # the 7 visible bits of each row
    rows = tokens_of(drawn("missing_duplicate_string", 50, 8)["x"])
    assert all(3 not in row and row.count(2) == 1 for row in rows)  # even: no PAD


@pytest.mark.parametrize("draw", ["host", "device"])
def test_compute_sqrt_numbers_are_uniform_over_the_non_zero_ones(draw):
    n, task = 3500, ComputeSqrtData()
    for length in (1, 3):
        if draw == "host":
            batch = task.draw(n, length, torch.Generator().manual_seed(4))
        else:
            batch = fresh("compute_sqrt", curriculum=False, length=length, batch_size=n)[0]
        values = Counter(int("".join(map(str, row)), 2) for row in tokens_of(batch["x"]))
        assert set(values) == set(range(1, 2**length))
        assert all(within(values[v], n, 1 / (2**length - 1)) for v in values), values


def test_binary_multiplication_draws_two_non_zero_numbers_as_binary_addition_does():
    for length in (1, 2, 3, 6, 17):
        for row in tokens_of(drawn("binary_multiplication", 80, length)["x"]):
            if length <= 2:  # their edge case: one number in 0 .. 2^N - 2, no TIMES
                assert 2 not in row and int("".join(map(str, row[::-1])), 2) <= 2**length - 2
                continue
            cut = row.index(2)
            assert row.count(2) == 1 and 1 <= cut <= length - 2
            assert 1 in row[:cut] and 1 in row[cut + 1 :]
    # the same numbers as binary_addition's, from the same generator
    ours = drawn("binary_multiplication", 20, 9, seed=5)["x"]
    assert torch.equal(ours, drawn("binary_addition", 20, 9, seed=5)["x"])


def test_bucket_sort_draws_every_symbol_uniformly():
    n = 500
    symbols = Counter(t for row in tokens_of(drawn("bucket_sort", n, 8, seed=6)["x"]) for t in row)
    assert all(within(symbols[v], 8 * n, 1 / 5) for v in range(5)), symbols
    assert BucketSortData(vocab=3).draw(50, 6, torch.Generator())["x"].shape == (50, 6, 3)


# ---- fresh draws on the device, K members in one call ----------------------------------------


def fresh(name: str, seed: int = 0, **kwargs):
    """The task's fresh training batches (``FreshBatches``)."""
    kwargs = {"length": 9, "curriculum": True, "n_train": 40, "batch_size": 8, **kwargs}
    dm = TASKS[name](sampling="fresh", n_val=2, n_test=2, gen_factors=[], seed=seed, **kwargs)
    dm.setup()
    return dm.train_set


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("name", TABLE2)
def test_fresh_batches_are_drawn_on_the_device_a_pure_function_of_seed_and_step(name):
    batches = fresh(name)
    assert batches.on_device
    assert same(batches[3], fresh(name)[3])  # rebuilt from (seed, step) alone
    assert not same(batches[3], fresh(name, seed=1)[3])
    for step in range(6):  # every length 1..9 the curriculum draws, labelled as defined
        batch = batches[step]
        assert batch["y"].tolist() == [DEFINITIONS[name](row) for row in tokens_of(batch["x"])]


@pytest.mark.parametrize("name", TABLE2)
def test_k_members_in_one_call_equal_their_single_draws_on_the_given_device(name):
    solo = [fresh(name, seed=seed) for seed in (0, 5)]
    together = solo[0].for_members([0, 5])
    for step in (0, 3):
        batch = together[step]
        for k, batches in enumerate(solo):
            assert same({key: t[k] for key, t in batch.items()}, batches[step])
    # on "meta" every tensor the draw makes must be there: one made on the CPU fails it
    for length in (1, 2, 3, 9):
        on_meta = fresh(name, length=length, curriculum=False).for_members([0, 5]).to("meta")
        batch = on_meta[1]
        assert {t.device.type for t in batch.values()} == {"meta"}
        assert {k: t.shape[:2] for k, t in batch.items()} == {k: (2, 8) for k in batch}


def test_a_population_draws_its_members_batches_together():
    modules = [
        TASKS["solve_equation"](
            sampling="fresh", curriculum=True, length=9, n_train=40, batch_size=8,
            n_val=2, n_test=2, gen_factors=[], seed=seed,
        )
        for seed in (0, 4)
    ]  # fmt: skip
    for dm in modules:
        dm.setup()
    members = [dm.train_dataloader() for dm in modules]
    assert drawn_together(members)
    it = iter(DrawnTogether(members))
    for step in range(2):  # step s: each member's own batch s
        batch = next(it)
        for k, dm in enumerate(modules):
            assert same({key: t[k] for key, t in batch.items()}, dm.train_set[step])


# ---- sizes and arguments --------------------------------------------------------------------


def test_sizes_output_lengths_and_the_longest_tape():
    sizes = {name: (TASKS[name]().in_features, TASKS[name]().out_features) for name in TABLE2}
    assert sizes == {
        "modular_arithmetic_brackets": (11, 5),  # 0-4 + - * ( ) x, as theirs
        "solve_equation": (11, 5),  # 0-4 + - ( ) x =
        "missing_duplicate_string": (4, 2),
        "binary_multiplication": (3, 3),
        "compute_sqrt": (2, 2),
        "bucket_sort": (5, 5),
    }
    assert SolveEquationData(modulus=7).in_features == 13
    assert [ComputeSqrtData().output_length(n) for n in (1, 2, 3, 40)] == [1, 1, 2, 20]
    assert BinaryMultiplicationData(length=10).max_len == 80  # 40 in, 40 out
    assert ComputeSqrtData(length=10).max_len == 60  # 40 in, 20 out
    assert BucketSortData(length=10).max_len == 80
    assert ModularArithmeticBracketsData(length=10).max_len == 40  # one label: none appended
    kinds = {name: TASKS[name].task_kind for name in TABLE2}
    assert kinds == {
        "modular_arithmetic_brackets": "classification",
        "solve_equation": "classification",
        "missing_duplicate_string": "classification",
        "binary_multiplication": "transduction",
        "compute_sqrt": "transduction",
        "bucket_sort": "transduction",
    }


def test_bad_arguments_name_the_field():
    with pytest.raises(ValueError, match="mult must be true or false, got 'yes'"):
        ModularArithmeticBracketsData(mult="yes")
    with pytest.raises(ValueError, match="modulus must be an integer >= 2, got 1"):
        SolveEquationData(modulus=1)
    with pytest.raises(ValueError, match="vocab must be an integer >= 2, got 1"):
        BucketSortData(vocab=1)
    with pytest.raises(ValueError, match="length must be an integer >= 1, got 0"):
        ComputeSqrtData(length=0)


def test_the_expressions_draw_with_any_rng():
    # the fixed splits draw through torch.randint (HostRandom): the same recursion's forms
    rows = bracket_expressions(30, 11, 5, True, HostRandom(torch.Generator().manual_seed(0)))
    assert all(in_their_language(text(row, BRACKETS)) for row in rows.tolist())
