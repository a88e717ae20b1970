"""Fresh batches drawn on the training device (issue 41.2): counter-based random words, the
nine Delétang tasks' draws as torch on a given device, K members in one call, their labels
against per-example references, their distributions, determinism and resume."""

import pytest
import torch

from lit_seq.data import (
    TASKS,
    binary_addition_targets,
    stack_manipulation_targets,
)
from lit_seq.data.binary_addition import PLUS, trailing_zeros
from lit_seq.data.counter_random import CounterSeeds, HostRandom, fmix32
from lit_seq.data.stack_manipulation import POP, PUSH_0
from lit_seq.population.loader import DrawnTogether, StackedLoader, drawn_together

DELETANG = (
    "even_pairs",
    "parity_check",
    "modular_arithmetic",
    "cycle_navigation",
    "reverse_string",
    "stack_manipulation",
    "binary_addition",
    "duplicate_string",
    "odds_first",
)


def fresh(name: str, seed: int = 0, **kwargs):
    kwargs = {"length": 6, "curriculum": True, "n_train": 40, "batch_size": 8, **kwargs}
    dm = TASKS[name](sampling="fresh", n_val=2, n_test=2, gen_factors=[], seed=seed, **kwargs)
    dm.setup()
    return dm


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# ---- the random words -----------------------------------------------------------------------


def test_the_hash_is_murmur3s_finaliser_and_k_seeds_draw_as_k_single_draws():
    words = torch.tensor([0, 1, 12345, 2**32 - 1])
    assert fmix32(words).tolist() == [0, 0x514E28B7, 0x3C46C9DC, 0x81F16F39]
    together = CounterSeeds([3, 9, 2**40]).at(7).integers("bits", 0, 5, (4, 6))
    alone = [CounterSeeds([s]).at(7).integers("bits", 0, 5, (4, 6)) for s in (3, 9, 2**40)]
    assert together.shape == (12, 6) and torch.equal(together, torch.cat(alone))
    assert together.min() == 0 and together.max() == 4
    again = CounterSeeds([3]).at(7)
    assert torch.equal(again.integers("bits", 0, 5, (4, 6)), alone[0])  # a pure function
    for other in (CounterSeeds([3]).at(8), CounterSeeds([4]).at(7)):
        assert not torch.equal(other.integers("bits", 0, 5, (4, 6)), alone[0])
    assert not torch.equal(again.integers("other", 0, 5, (4, 6)), alone[0])  # by name


def test_words_are_uniform_and_host_random_is_torch_randint():
    words = CounterSeeds([0, 1]).at(0).words("w", (20_000,)).double() / 2**32
    assert abs(words.mean() - 0.5) < 0.01 and abs(words.var() - 1 / 12) < 0.003
    # neighbouring elements, steps and seeds are not correlated
    assert abs(torch.corrcoef(torch.stack([words[:-1], words[1:]]))[0, 1]) < 0.03
    host = HostRandom(torch.Generator().manual_seed(5)).integers("ignored", 1, 4, (3, 2))
    assert torch.equal(
        host, torch.randint(1, 4, (3, 2), generator=torch.Generator().manual_seed(5))
    )
    assert trailing_zeros(torch.tensor([1, 12, 2**31, 0, 6])).tolist() == [0, 2, 31, 32, 1]
    with pytest.raises(ValueError, match=r"seeds must be one or more ints >= 0, got \[-1\]"):
        CounterSeeds([-1])


# ---- labels against references, one example at a time --------------------------------------


def _stack(tokens: list[int]) -> list[int]:
    stack: list[int] = []
    for token in tokens:
        if token == POP:
            stack = stack[:-1]
        else:
            stack.append(token if token <= 1 else token - PUSH_0)
    return stack[::-1] + [2]  # top first, then END


def _binary_sum(tokens: list[int]) -> list[int]:
    cut = tokens.index(PLUS) if PLUS in tokens else len(tokens)

    def value(bits: list[int]) -> int:
        return sum(bit << i for i, bit in enumerate(bits))

    total = value(tokens[:cut]) + value(tokens[cut + 1 :])
    bits = [int(b) for b in reversed(bin(total)[2:])]
    return bits + [2]


def _modular(tokens: list[int], modulus: int = 5) -> int:
    text = "".join(str(t) if t < modulus else "+-*"[t - modulus] for t in tokens)
    return eval(text) % modulus  # Python's precedence and remainder: the reference


REFERENCE = {  # tokens of one example -> its label (classes) or scored output
    "parity_check": lambda t: sum(t) % 2,
    "even_pairs": lambda t: sum(a != b for a, b in zip(t, t[1:], strict=False)) % 2,
    "cycle_navigation": lambda t: sum(a - 1 for a in t) % 5,
    "modular_arithmetic": _modular,
    "reverse_string": lambda t: t[::-1],
    "duplicate_string": lambda t: t + t,
    "odds_first": lambda t: t[1::2] + t[0::2],
    "stack_manipulation": _stack,
    "binary_addition": _binary_sum,
}


@pytest.mark.parametrize("name", DELETANG)
def test_a_fresh_batch_is_labelled_as_the_reference_says(name):
    batches = fresh(name, length=9).train_set
    assert batches.on_device
    for step in range(6):
        batch = batches[step]
        tokens = batch["x"].argmax(dim=-1).tolist()
        for row, example in enumerate(tokens):
            want = REFERENCE[name](example)
            if "mask" in batch:  # the scored positions of a transduction
                got = batch["y"][row][batch["mask"][row]].tolist()
            else:
                got = int(batch["y"][row])
            assert got == want, (name, step, example)


def _stack_loop(tokens):
    """The position loop the labels had before (the reference for the vectorised ones)."""
    B, N = tokens.shape
    rows, stack, height = torch.arange(B), tokens.new_zeros(B, N + 1), tokens.new_zeros(B)
    for t in range(N):
        token = tokens[:, t]
        stack[rows, height] = torch.where(token <= 1, token, token - PUSH_0)
        height = torch.where(token == POP, (height - 1).clamp(min=0), height + 1)
    i, height = torch.arange(N + 1).unsqueeze(0), height.unsqueeze(1)
    top = stack.gather(1, (height - 1 - i).clamp(min=0))
    return torch.where(i < height, top, torch.where(i == height, 2, 0)), i <= height


def test_the_loop_free_stack_labels_equal_the_position_loop():
    generator = torch.Generator().manual_seed(0)
    for length in (1, 2, 5, 17, 40):
        tokens = torch.randint(0, 5, (300, length), generator=generator)
        tokens[:20] = POP  # nothing but pops on an empty stack
        tokens[20:40] = torch.randint(0, 2, (20, length), generator=generator)  # all pushes
        for got, want in zip(stack_manipulation_targets(tokens), _stack_loop(tokens), strict=True):
            assert torch.equal(got, want), length


def _binary_loop(tokens):
    """The position loop the sum had before (the reference for the loop-free carries)."""
    B, N = tokens.shape
    is_plus = tokens == PLUS
    plus = torch.where(is_plus.any(dim=1), is_plus.int().argmax(dim=1), N)
    total, carry = tokens.new_zeros(B, N + 1), tokens.new_zeros(B)
    for t in range(N):
        a = torch.where(t < plus, tokens[:, t], 0)
        at = plus + 1 + t
        b = torch.where(at < N, tokens.gather(1, at.clamp(max=N - 1).unsqueeze(1))[:, 0], 0)
        total[:, t], carry = (a + b + carry) % 2, (a + b + carry) // 2
    total[:, N] = carry
    return total


def test_the_loop_free_binary_sum_carries_as_the_position_loop():
    # 15 + 1 = 16: the carry runs through every bit; 4 + 22 = 26; no PLUS: the number itself
    targets, mask = binary_addition_targets(torch.tensor([[1, 1, 1, 1, PLUS, 1]]))
    assert targets.tolist() == [[0, 0, 0, 0, 1, 2, 0]] and mask.sum() == 6
    targets, _ = binary_addition_targets(torch.tensor([[0, 0, 1, PLUS, 0, 1, 1, 0, 1]]))
    assert targets.tolist() == [[0, 1, 0, 1, 1, 2, 0, 0, 0, 0]]
    assert binary_addition_targets(torch.tensor([[1, 1]]))[0].tolist() == [[1, 1, 2]]
    assert binary_addition_targets(torch.tensor([[0, 0]]))[0].tolist() == [[0, 2, 0]]
    generator = torch.Generator().manual_seed(0)
    for length in (1, 3, 8, 40):
        tokens = torch.randint(0, 2, (300, length), generator=generator)
        plus = torch.randint(0, length + 1, (300, 1), generator=generator)  # length: none
        tokens = torch.where(torch.arange(length) == plus, PLUS, tokens)
        targets, mask = binary_addition_targets(tokens)
        for row, bits in enumerate(_binary_loop(tokens).tolist()):
            size = max((i + 1 for i, bit in enumerate(bits) if bit), default=1)
            want = bits[:size] + [2] + [0] * (length - size)
            assert targets[row].tolist() == want and mask[row].sum() == size + 1


# ---- distributions --------------------------------------------------------------------------


def _tokens(name: str, steps: int, **kwargs) -> list[torch.Tensor]:
    batches = fresh(name, curriculum=False, batch_size=64, **kwargs).train_set
    return [batches[s]["x"].argmax(dim=-1) for s in range(steps)]


@pytest.mark.parametrize(
    ("name", "frequencies"),
    [
        ("parity_check", {0: 1 / 2, 1: 1 / 2}),
        ("reverse_string", {0: 1 / 2, 1: 1 / 2}),
        ("cycle_navigation", {0: 1 / 3, 1: 1 / 3, 2: 1 / 3}),
    ],
)
def test_every_symbol_is_drawn_uniformly(name, frequencies):
    tokens = torch.cat([t.flatten() for t in _tokens(name, 20)])  # 7680 symbols
    for token, share in frequencies.items():
        assert abs((tokens == token).double().mean() - share) < 0.03, token


def test_modular_arithmetic_draws_residues_and_operators_uniformly():
    tokens = torch.cat(_tokens("modular_arithmetic", 20, length=7))  # (1280, 7)
    residues, operators = tokens[:, 0::2].flatten(), tokens[:, 1::2].flatten()
    for value in range(5):
        assert abs((residues == value).double().mean() - 1 / 5) < 0.03
    for value in (5, 6, 7):  # +, -, *; never the blank 8
        assert abs((operators == value).double().mean() - 1 / 3) < 0.04
    assert residues.max() < 5 and operators.min() >= 5 and operators.max() <= 7


def test_stack_manipulation_draws_stack_sizes_and_actions_uniformly():
    tokens = torch.cat(_tokens("stack_manipulation", 20))  # (1280, 6)
    size = (tokens > 1).int().argmax(dim=1)  # the first action's index: the stack's size
    assert set(size.tolist()) == {1, 2, 3, 4, 5}  # S uniform in 1..N-1
    for s in range(1, 6):
        assert abs((size == s).double().mean() - 1 / 5) < 0.04
    actions = tokens[tokens > 1]
    for value in (2, 3, 4):
        assert abs((actions == value).double().mean() - 1 / 3) < 0.04


def test_binary_addition_numbers_are_uniform_over_the_non_zero_ones():
    tokens = torch.cat(_tokens("binary_addition", 40))  # (2560, 6): n PLUS m, 4 bits in all
    plus = (tokens == PLUS).int().argmax(dim=1)
    assert set(plus.tolist()) == {1, 2, 3, 4}  # n has 1..N-2 bits
    counts: dict[tuple[int, int], int] = {}  # (bits, value) -> draws, both numbers
    for row, cut in zip(tokens.tolist(), plus.tolist(), strict=True):
        for bits in (row[:cut], row[cut + 1 :]):
            key = (len(bits), sum(b << i for i, b in enumerate(bits)))
            counts[key] = counts.get(key, 0) + 1
    for size in (1, 2, 3, 4):
        draws = sum(c for (b, _), c in counts.items() if b == size)
        values = {v for b, v in counts if b == size}
        assert values == set(range(1, 2**size))  # every non-zero value; never 0
        for value in values:  # each 1 / (2^size - 1) of the draws
            share = counts[(size, value)] / draws
            assert abs(share - 1 / (2**size - 1)) < 4 * (share / draws) ** 0.5 + 0.01


def test_lengths_are_uniform_and_shared_by_every_member():
    batches = fresh("parity_check", length=5).train_set
    together = batches.for_members([0, 7, 3])
    lengths = [together[s]["x"].shape[2] for s in range(300)]
    assert lengths == [batches.length_at(s) for s in range(300)]
    assert all(40 < lengths.count(n) < 80 for n in range(1, 6))  # 60 expected each


# ---- K members in one call, the device, determinism and resume -----------------------------


@pytest.mark.parametrize("name", DELETANG)
def test_k_members_in_one_call_equal_their_single_draws_on_the_given_device(name):
    solo = [fresh(name, seed=seed).train_set for seed in (0, 5)]
    together = solo[0].for_members([0, 5])
    for step in (0, 3):
        batch = together[step]
        for k, batches in enumerate(solo):
            assert same({key: t[k] for key, t in batch.items()}, batches[step])
    # the draw runs where it is told: on "meta" every tensor it makes must be there, so a
    # tensor made on the CPU by mistake (an arange without its device) fails the draw
    on_meta = fresh(name).train_set.for_members([0, 5]).to("meta")
    batch = on_meta[3]
    assert {t.device.type for t in batch.values()} == {"meta"}
    assert {k: t.shape[:2] for k, t in batch.items()} == {k: (2, 8) for k in batch}


def test_a_task_without_a_device_draw_keeps_drawing_on_the_host():
    dm = TASKS["echo"](sampling="fresh", n_train=16, n_val=2, n_test=2, batch_size=4)
    dm.setup()
    assert not dm.train_set.on_device and dm.train_set[2]["x"].shape[0] == 4
    with pytest.raises(ValueError, match="draws on the host only"):
        dm.train_set.for_members([0, 1])
    loaders = [dm.train_dataloader(), dm.train_dataloader()]
    assert not drawn_together(loaders) and isinstance(StackedLoader(loaders), StackedLoader)


def test_the_population_loader_draws_together_and_resumes_each_member():
    loaders = [fresh("stack_manipulation", seed=s).train_dataloader() for s in (0, 4)]
    assert drawn_together(loaders)
    population = DrawnTogether(loaders)
    assert len(population) == 5  # n_train 40 / batch_size 8
    it = iter(population)
    first = [next(it), next(it)]
    state = population.state_dict()
    assert state == {"members": [{"epoch": 0, "batches": 2}] * 2}
    rest = list(it)
    resumed = DrawnTogether(
        [fresh("stack_manipulation", seed=s).train_dataloader() for s in (0, 4)]
    )
    resumed.load_state_dict(state)
    assert all(same(a, b) for a, b in zip(list(resumed), rest, strict=True))
    solo = fresh("stack_manipulation", seed=4).train_set
    assert same({k: t[1] for k, t in first[1].items()}, solo[1])  # member 1 is seed 4's
    population.sampler.set_epoch(2)  # Lightning's next epoch: steps 10..14
    assert same(
        {k: t[0] for k, t in next(iter(population)).items()},
        fresh("stack_manipulation").train_set[10],
    )
    with pytest.raises(ValueError, match="positions must agree"):
        resumed.load_state_dict(
            {"members": [{"epoch": 0, "batches": 1}, {"epoch": 0, "batches": 2}]}
        )


def test_device_draws_leave_the_global_rng_alone():
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    batches = fresh("binary_addition").train_set
    for step in range(3):
        batches[step]
    assert torch.equal(torch.get_rng_state(), state)
