"""The data layer's shared contract, checked on every task in TASKS with tiny sizes."""

import pytest
import torch

from lit_seq.data import TASKS, SyntheticDataModule, TensorDictDataset, batch_loader
from lit_seq.systems import SYSTEMS

# Delétang et al.'s tasks (tests/test_data_chomsky_tasks.py): one label, or a string
# output of a length set by the input's, written after it
CHOMSKY_CLASSIFICATION = (
    "even_pairs",
    "cycle_navigation",
    "modular_arithmetic_brackets",
    "solve_equation",
    "missing_duplicate_string",
)
CHOMSKY_OUTPUT_LENGTH = {
    "reverse_string": lambda n: n,
    "stack_manipulation": lambda n: n + 1,
    "duplicate_string": lambda n: 2 * n,
    "odds_first": lambda n: n,
    "binary_addition": lambda n: n + 1,
    "binary_multiplication": lambda n: n,
    "compute_sqrt": lambda n: (n + 1) // 2,
    "bucket_sort": lambda n: n,
}

# Tiny but valid sizes per task; gen_factors stay at the default [2, 4].
SMALL = {
    "signal": dict(length=16, n_per_class=4, n_eval_per_class=2),
    "parity_sum": dict(length=6, n_train=12, n_val=4, n_test=5),
    "echo": dict(length=6, n_train=12, n_val=4, n_test=5),
    "seq2seq": dict(min_length=2, max_length=5, n_train=12, n_val=4, n_test=5),
    "parity_check": dict(length=6, n_train=12, n_val=4, n_test=5),
    "modular_arithmetic": dict(length=5, n_train=12, n_val=4, n_test=5),
    "sum_mod": dict(length=6, n_train=12, n_val=4, n_test=5),
    "associative_recall": dict(length=8, n_pairs=2, vocab=20, n_train=12, n_val=4, n_test=5),
    **{
        task: dict(length=6, n_train=12, n_val=4, n_test=5)
        for task in CHOMSKY_CLASSIFICATION + tuple(CHOMSKY_OUTPUT_LENGTH)
    },
}


def make(task: str, **overrides) -> SyntheticDataModule:
    dm = TASKS[task](**{**SMALL[task], "batch_size": 5, **overrides})
    dm.setup("fit")
    return dm


def all_splits(dm: SyntheticDataModule) -> list[TensorDictDataset]:
    return [dm.train_set, dm.val_set, *dm.test_sets]


def expected_layout(task: str, dm: SyntheticDataModule, n: int, length: int) -> dict:
    """key -> (shape, dtype) of a whole split of n sequences of (maximum) length `length`."""
    if task == "signal":
        return {"x": ((n, length, dm.in_features), torch.float32), "y": ((n,), torch.long)}
    if task == "parity_sum":
        return {"x": ((n, length, 2), torch.float32), "y": ((n, length), torch.float32)}
    if task == "echo":
        return {
            "x": ((n, length, 1), torch.float32),
            "y": ((n, length), torch.float32),
            "mask": ((n, length), torch.bool),
        }
    if task in CHOMSKY_OUTPUT_LENGTH:
        out = CHOMSKY_OUTPUT_LENGTH[task](length)
        return {
            "x": ((n, length, dm.in_features), torch.float32),
            "y": ((n, out), torch.long),
            "mask": ((n, out), torch.bool),
        }
    if task in ("parity_check", "modular_arithmetic", *CHOMSKY_CLASSIFICATION):
        length -= task == "modular_arithmetic" and length % 2 == 0  # odd expressions only
        return {"x": ((n, length, dm.in_features), torch.float32), "y": ((n,), torch.long)}
    if task in ("sum_mod", "associative_recall"):
        return {
            "x": ((n, length, dm.in_features), torch.float32),
            "y": ((n, length), torch.long),
            "mask": ((n, length), torch.bool),
        }
    return {
        "src": ((n, length), torch.long),
        "tgt": ((n, length + 2), torch.long),
        "length": ((n,), torch.long),
    }


def test_registry_lists_every_task_once():
    assert list(TASKS) == [
        "signal",
        "parity_sum",
        "echo",
        "seq2seq",
        "parity_check",
        "modular_arithmetic",
        "sum_mod",
        "associative_recall",
        "even_pairs",
        "cycle_navigation",
        "reverse_string",
        "stack_manipulation",
        "modular_arithmetic_brackets",
        "solve_equation",
        "duplicate_string",
        "odds_first",
        "binary_addition",
        "missing_duplicate_string",
        "binary_multiplication",
        "compute_sqrt",
        "bucket_sort",
    ]
    assert {cls.task_kind for cls in TASKS.values()} == set(SYSTEMS)
    assert all(issubclass(cls, SyntheticDataModule) for cls in TASKS.values())


@pytest.mark.parametrize("task", list(TASKS))
def test_every_split_has_the_documented_shapes_and_dtypes(task):
    dm = make(task)
    sizes = [dm.n_train, dm.n_val] + [dm.n_test] * len(dm.test_lengths)
    lengths = [dm.train_length, dm.train_length, *dm.test_lengths]
    assert len(dm.test_sets) == 3
    for split, n, length in zip(all_splits(dm), sizes, lengths, strict=True):
        layout = {k: (tuple(t.shape), t.dtype) for k, t in split.tensors.items()}
        assert layout == expected_layout(task, dm, n, length)
        assert len(split) == n


@pytest.mark.parametrize("task", list(TASKS))
def test_sizes_are_known_before_setup(task):
    dm = TASKS[task](**SMALL[task])
    assert dm.train_set is None and dm.test_sets == []
    assert dm.in_features >= 1 and dm.out_features >= 1
    assert dm.max_len >= max(dm.test_lengths)
    assert dm.task_kind in SYSTEMS
    with pytest.raises(RuntimeError, match="setup"):
        dm.train_dataloader()


@pytest.mark.parametrize("task", list(TASKS))
def test_setup_is_idempotent(task):
    dm = make(task)
    train, tests = dm.train_set, dm.test_sets
    dm.setup("test")
    assert dm.train_set is train and dm.test_sets is tests


@pytest.mark.parametrize("task", list(TASKS))
def test_same_seed_same_data_other_seed_other_data(task):
    a, b, c = make(task, seed=3), make(task, seed=3), make(task, seed=4)
    for sa, sb, sc in zip(all_splits(a), all_splits(b), all_splits(c), strict=True):
        for key in sa.tensors:
            assert torch.equal(sa.tensors[key], sb.tensors[key])
        assert any(not torch.equal(sa.tensors[k], sc.tensors[k]) for k in sa.tensors)


@pytest.mark.parametrize("task", list(TASKS))
def test_generation_and_shuffling_leave_the_global_rng_alone(task):
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    dm = make(task)
    for loader in [dm.train_dataloader(), dm.val_dataloader(), *dm.test_dataloader()]:
        list(loader)
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("task", list(TASKS))
def test_train_val_and_test_are_different_draws(task):
    dm = make(task)
    key = "src" if task == "seq2seq" else "x"
    train, val, test = (s.tensors[key] for s in all_splits(dm)[:3])
    n = min(len(train), len(val), len(test))
    assert not torch.equal(train[:n], val[:n])
    assert not torch.equal(train[:n], test[:n])
    assert not torch.equal(val[:n], test[:n])


def test_default_prefixes_lengths_and_sizes():
    signal, parity, echo, s2s, *_ = (cls() for cls in TASKS.values())
    assert signal.test_lengths == [64, 128, 256]
    assert signal.test_prefixes == ["test", "test_len128", "test_len256"]
    assert (signal.in_features, signal.out_features, signal.max_len) == (1, 3, 256)
    assert parity.test_prefixes == ["test", "test_len40", "test_len80"]
    assert (parity.in_features, parity.out_features, parity.max_len) == (2, 1, 80)
    assert parity.target_scale == 100.0
    assert echo.test_prefixes == ["test", "test_len20", "test_len40"]
    assert (echo.in_features, echo.out_features, echo.max_len) == (1, 1, 40)
    assert s2s.test_lengths == [10, 20, 40]
    assert s2s.test_prefixes == ["test", "test_len20", "test_len40"]
    # 10 ordinary symbols + PAD/BOS/EOS; targets at 4x add BOS and EOS to 40 tokens.
    assert (s2s.in_features, s2s.out_features, s2s.max_len) == (13, 13, 42)


def test_gen_factors_configure_the_test_sets():
    dm = TASKS["echo"](length=5, gen_factors=[3])
    assert dm.test_lengths == [5, 15] and dm.test_prefixes == ["test", "test_len15"]
    assert dm.max_len == 15
    off = TASKS["seq2seq"](max_length=7, gen_factors=[])
    assert off.test_prefixes == ["test"] and off.max_len == 9
    off.setup()
    assert len(off.test_dataloader()) == 1


def test_tensor_dict_dataset_indexes_ints_lists_and_tensors():
    ds = TensorDictDataset({"a": torch.arange(6), "b": torch.arange(12).view(6, 2)})
    assert len(ds) == 6
    assert ds[2]["a"].item() == 2 and ds[2]["b"].tolist() == [4, 5]
    assert ds[[4, 1]]["a"].tolist() == [4, 1]
    assert ds[torch.tensor([0, 5])]["b"].tolist() == [[0, 1], [10, 11]]
    with pytest.raises(ValueError, match="equal lengths"):
        TensorDictDataset({"a": torch.zeros(3), "b": torch.zeros(4)})


def test_batch_loader_covers_every_example_once_in_full_batches():
    ds = TensorDictDataset({"i": torch.arange(23)})
    batches = list(batch_loader(ds, batch_size=5, shuffle=True, seed=0))
    assert [len(b["i"]) for b in batches] == [5, 5, 5, 5, 3]
    seen = torch.cat([b["i"] for b in batches])
    assert sorted(seen.tolist()) == list(range(23))
    assert seen.tolist() != list(range(23))  # actually shuffled
    in_order = torch.cat([b["i"] for b in batch_loader(ds, 5, shuffle=False, seed=0)])
    assert in_order.tolist() == list(range(23))


def test_batch_loader_shuffles_deterministically_by_seed():
    ds = TensorDictDataset({"i": torch.arange(50)})

    def order(seed: int) -> list[int]:
        return torch.cat([b["i"] for b in batch_loader(ds, 8, True, seed)]).tolist()

    assert order(1) == order(1)
    assert order(1) != order(2)
    # Within one loader the next epoch is a fresh permutation.
    loader = batch_loader(ds, 8, True, 1)
    first, second = (torch.cat([b["i"] for b in loader]).tolist() for _ in range(2))
    assert first != second and sorted(second) == list(range(50))


@pytest.mark.parametrize("task", list(TASKS))
def test_datamodule_loaders_yield_dict_batches(task):
    dm = make(task)
    batches = list(dm.train_dataloader())
    assert all(isinstance(b, dict) for b in batches)
    assert [len(next(iter(b.values()))) for b in batches][:-1] == [5] * (len(batches) - 1)
    assert sum(len(next(iter(b.values()))) for b in batches) == dm.n_train
    # The seeded training order is reproducible across DataModules.
    key = "src" if task == "seq2seq" else "x"
    again = list(make(task).train_dataloader())
    assert all(torch.equal(a[key], b[key]) for a, b in zip(batches, again, strict=True))
    loaders = dm.test_dataloader()
    assert len(loaders) == len(dm.test_prefixes)
    for loader, split in zip(loaders, dm.test_sets, strict=True):
        assert sum(len(b[key]) for b in loader) == len(split)


@pytest.mark.parametrize("task", list(TASKS))
def test_draw_makes_the_split_it_names(task):
    """``draw`` is how the splits are built: from a split's own generator (seed * 1000 + its
    index) it gives that split again, held-out sequences (echo) included."""
    dm = make(task)

    def generator(index: int) -> torch.Generator:
        return torch.Generator().manual_seed(dm.seed * 1000 + index)

    length = dm.train_length
    val = dm.draw(dm.n_val, length, generator(1), split="val")
    test = dm.draw(dm.n_test, length, generator(2))  # split="test", the default
    longest = dm.draw(dm.n_test, dm.test_lengths[-1], generator(len(dm.test_lengths) + 1))
    for drawn, split in ((val, dm.val_set), (test, dm.test_sets[0]), (longest, dm.test_sets[-1])):
        assert drawn.keys() == split.tensors.keys()
        assert all(torch.equal(drawn[k], split.tensors[k]) for k in drawn)
    with pytest.raises(ValueError, match=r"split='tset' is not one of \['train', 'val', 'test'\]"):
        dm.draw(2, length, generator(0), split="tset")


BAD_ARGS = [
    ("seq2seq", dict(op="rotate"), r"op must be one of \['copy', 'reverse', 'sort'\].*'rotate'"),
    ("seq2seq", dict(min_length=5, max_length=3), r"max_length .*>= min_length \(5\), got 3"),
    ("seq2seq", dict(vocab=0), "vocab must be an integer >= 1, got 0"),
    ("echo", dict(length=5, lag=5), r"lag must be an integer in \[0, length - 1 = 4\], got 5"),
    ("echo", dict(batch_size=0), "batch_size must be an integer >= 1, got 0"),
    ("parity_sum", dict(gen_factors=[1]), "gen_factors entries must be an integer >= 2, got 1"),
    ("parity_sum", dict(gen_factors=[2, 2]), r"gen_factors must not repeat, got \[2, 2\]"),
    ("parity_sum", dict(length=0), "length must be an integer >= 2, got 0"),
    ("parity_sum", dict(length=1), "length must be an integer >= 2, got 1"),
    ("parity_sum", dict(max_val=0), "max_val must be an integer >= 1, got 0"),
    ("signal", dict(seed=-1), "seed must be an integer >= 0, got -1"),
    ("signal", dict(freqs=[1.0, 1.0]), "freqs must hold at least 2 distinct"),
    ("signal", dict(length=8, freqs=[1.0, 4.0]), r"freqs must lie in \(0, length / 2 = 4.0\)"),
    ("signal", dict(noise=-0.1), "noise must be >= 0, got -0.1"),
    ("signal", dict(n_per_class=0), "n_per_class must be an integer >= 1, got 0"),
    ("echo", dict(n_train=True), "n_train must be an integer >= 1, got True"),
]


@pytest.mark.parametrize(("task", "kwargs", "message"), BAD_ARGS)
def test_bad_arguments_name_the_field_the_value_and_what_is_allowed(task, kwargs, message):
    with pytest.raises(ValueError, match=message):
        TASKS[task](**kwargs)
