"""The tasks the literature compares on: worked examples, layouts, masks, and the curriculum."""

import pytest
import torch

from lit_seq.data import (
    AssociativeRecallData,
    GroupedTensorDicts,
    ModularArithmeticData,
    ParityCheckData,
    SumModData,
    TensorDictDataset,
    batch_loader,
    modular_arithmetic_labels,
    parity_labels,
    recall_sequences,
    sum_mod_targets,
)
from lit_seq.data.base import EpochBatches
from tests.helpers import REPO, tiny_fit

SYMBOLS = "01234+-*_"  # Delétang's modular-arithmetic alphabet, mod 5, in token order


def tokens_of(x: torch.Tensor) -> torch.Tensor:
    """One-hot (B, L, V) -> token ids (B, L)."""
    assert torch.equal(x.sum(-1), torch.ones(x.shape[:2]))
    return x.argmax(-1)


# ---- parity_check ------------------------------------------------------------------------


def test_parity_check_worked_examples():
    bits = torch.tensor([[1, 0, 1, 0, 1, 0, 0], [0, 1, 1, 1, 1, 0, 0]])  # 1010100, 01111 + 00
    assert parity_labels(bits).tolist() == [1, 0]


def test_parity_check_layout_and_labels():
    dm = ParityCheckData(length=9, n_train=50, n_val=5, n_test=6)
    dm.setup()
    x, y = dm.train_set.tensors["x"], dm.train_set.tensors["y"]
    assert x.shape == (50, 9, 2) and x.dtype == torch.float32 and y.dtype == torch.long
    assert torch.equal(y, tokens_of(x).sum(1) % 2)
    assert [s.tensors["x"].shape[1] for s in dm.test_sets] == [9, 18, 36]
    assert (dm.in_features, dm.out_features, dm.task_kind) == (2, 2, "classification")


# ---- modular_arithmetic --------------------------------------------------------------------


def encode(expression: str) -> list[int]:
    return [SYMBOLS.index(c) for c in expression.replace(" ", "")]


@pytest.mark.parametrize(
    ("expression", "value"),
    [("1 + 2 * 3", 2), ("1 - 1 - 1", 4), ("0 * 1 + 4 * 3 - 2", 0), ("3", 3), ("4 * 4 * 4", 4)],
)
def test_modular_arithmetic_worked_examples(expression, value):
    # the first three are the examples of Delétang's ModularArithmetic docstring
    labels = modular_arithmetic_labels(torch.tensor([encode(expression)]), modulus=5)
    assert labels.tolist() == [value]


def test_modular_arithmetic_matches_python_precedence_and_modulo():
    dm = ModularArithmeticData(length=11, n_train=300, n_val=5, n_test=5)
    dm.setup()
    x, y = dm.train_set.tensors["x"], dm.train_set.tensors["y"]
    assert x.shape == (300, 11, 9)  # 5 residues and + - * _
    for row, label in zip(tokens_of(x).tolist(), y.tolist(), strict=True):
        text = "".join(SYMBOLS[t] for t in row)
        assert eval(text) % 5 == label, text  # * before + and -, Python's % is mod 5
    ops = tokens_of(x)[:, 1::2]
    assert set(ops.unique().tolist()) == {5, 6, 7}  # + - *, never the blank
    assert set(tokens_of(x)[:, 0::2].unique().tolist()) == {0, 1, 2, 3, 4}


def test_modular_arithmetic_even_lengths_drop_a_token_as_deletang():
    dm = ModularArithmeticData(length=7, n_train=10, n_val=5, n_test=5)  # tests at 14 and 28
    dm.setup()
    assert [s.tensors["x"].shape[1] for s in dm.test_sets] == [7, 13, 27]


# ---- sum_mod -----------------------------------------------------------------------------


def test_sum_mod_worked_example():
    values = torch.tensor([[1, 2, 3, 4, 4]])
    assert sum_mod_targets(values, modulus=5).tolist() == [[1, 2, 4, 1, 3]]
    assert sum_mod_targets(torch.tensor([[1, 1, 1, 0, 1]]), 2).tolist() == [[1, 1, 0, 1, 1]]


def test_sum_mod_layout_input_parity_and_mask():
    dm = SumModData(length=6, modulus=3, n_train=20, n_val=5, n_test=5)
    dm.setup()
    t = dm.train_set.tensors
    assert t["x"].shape == (20, 6, 4) and t["y"].shape == (20, 6) and t["y"].dtype == torch.long
    values = t["x"][..., :3].argmax(-1)
    assert torch.equal(t["x"][..., 3], (torch.arange(6) % 2).float().expand(20, 6))
    assert torch.equal(t["y"], sum_mod_targets(values, 3))
    assert t["mask"].all() and int(t["y"].max()) <= 2
    assert (dm.in_features, dm.out_features, dm.task_kind) == (4, 3, "step_classification")


# ---- associative_recall ------------------------------------------------------------------


def test_associative_recall_worked_example_is_zoologys():
    keys, values = torch.tensor([[2, 4]]), torch.tensor([[8, 7]])
    gaps, fillers = torch.tensor([[4, 1]]), torch.zeros(1, 16, dtype=torch.long)
    tokens, targets, mask = recall_sequences(keys, values, gaps, fillers)
    assert tokens.tolist() == [[2, 8, 4, 7, 0, 0, 4, 0, 0, 0, 0, 0, 2, 0, 0, 0]]
    assert mask.nonzero()[:, 1].tolist() == [6, 12]
    assert targets[mask].tolist() == [7, 8]


@pytest.mark.parametrize("n_queries", [None, 2])
def test_associative_recall_queries_recall_the_value_paired_with_their_key(n_queries):
    dm = AssociativeRecallData(
        length=16, n_pairs=3, n_queries=n_queries, vocab=40, n_train=30, n_val=5, n_test=5
    )
    dm.setup()
    queries = 3 if n_queries is None else n_queries
    for split, factor in zip([dm.train_set, *dm.test_sets], [1, 1, 2, 4], strict=True):
        t = split.tensors
        tokens, y, mask = tokens_of(t["x"]), t["y"], t["mask"]
        length, pairs = 16 * factor, 3 * factor
        assert tokens.shape == (len(tokens), length)
        assert mask.sum(1).tolist() == [queries * factor] * len(tokens)  # more pairs at k x N
        keys, vals = tokens[:, 0 : 2 * pairs : 2], tokens[:, 1 : 2 * pairs : 2]
        assert ((keys >= 1) & (keys < 20)).all() and ((vals >= 20) & (vals < 40)).all()
        assert all(len(set(row)) == pairs for row in keys.tolist())  # distinct keys
        assert not mask[:, : 2 * pairs].any()  # queries come after the pairs, at even offsets
        assert (mask.nonzero()[:, 1] % 2 == 0).all()
        for b, t_ in mask.nonzero().tolist():
            where = (keys[b] == tokens[b, t_]).nonzero().item()
            assert y[b, t_] == vals[b, where]


def test_associative_recall_bad_sizes_are_one_line_errors():
    with pytest.raises(ValueError, match=r"length must be an integer >= 4 x n_pairs = 16, got 12"):
        AssociativeRecallData(length=12, n_pairs=4)
    with pytest.raises(ValueError, match=r"n_queries must be an integer in \[1, n_pairs = 4\]"):
        AssociativeRecallData(n_queries=5)
    # 4 pairs at 32, so 16 at the 4x test set: keys 1 .. vocab/2 - 1 must hold 16
    with pytest.raises(ValueError, match=r"vocab must be an integer >= 34 \(distinct keys for "):
        AssociativeRecallData(vocab=32)
    with pytest.raises(ValueError, match=r"power_a=0.0 must be a finite number > 0.0"):
        AssociativeRecallData(power_a=0.0)


# ---- the curriculum --------------------------------------------------------------------------

CURRICULUM_TASKS = {
    "parity_check": lambda **kw: ParityCheckData(length=6, **kw),
    "modular_arithmetic": lambda **kw: ModularArithmeticData(length=7, **kw),
    "sum_mod": lambda **kw: SumModData(length=6, **kw),
    "associative_recall": lambda **kw: AssociativeRecallData(length=10, n_pairs=2, vocab=24, **kw),
}
SHORTEST = {"associative_recall": 4}


def curriculum(task: str, **kw):
    dm = CURRICULUM_TASKS[task](
        curriculum=True, n_train=kw.pop("n_train", 70), n_val=4, n_test=4, batch_size=4, **kw
    )
    dm.setup()
    return dm


def lengths_of(loader) -> list[int]:
    lengths = []
    for batch in loader:
        assert all(t.shape[0] == batch["x"].shape[0] for t in batch.values())
        lengths.append(batch["x"].shape[1])  # one length per batch: no padding anywhere
    return lengths


@pytest.mark.parametrize("task", list(CURRICULUM_TASKS))
def test_curriculum_batches_have_one_length_each_and_cover_every_length(task):
    dm = curriculum(task)
    shortest, n = SHORTEST.get(task, 1), dm.train_length
    assert dm.train_lengths == list(range(shortest, n + 1))
    seen = lengths_of(dm.train_dataloader())
    expected = set(range(shortest, n + 1))
    if task == "modular_arithmetic":  # an even length gives one token less, as Delétang's
        expected = {length - (length % 2 == 0) for length in expected}
    assert set(seen) == expected
    assert seen != sorted(seen)  # the lengths come in random order
    assert sum(len(b["x"]) for b in dm.train_dataloader()) == dm.n_train
    # validation and the test sets keep their fixed lengths
    assert set(lengths_of(dm.val_dataloader())) == {dm.val_set.tensors["x"].shape[1]}
    assert [s.tensors["x"].shape[1] for s in dm.test_sets][0] in (n, n - 1)


def test_curriculum_spreads_n_train_evenly_over_the_lengths():
    dm = curriculum("sum_mod", n_train=20)  # 6 lengths: 4, 4, 3, 3, 3, 3
    assert isinstance(dm.train_set, GroupedTensorDicts)
    assert dm.train_set.sizes == [4, 4, 3, 3, 3, 3]
    assert [g.tensors["x"].shape[1] for g in dm.train_set.groups] == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("task", list(CURRICULUM_TASKS))
def test_curriculum_is_deterministic_per_seed(task):
    def batches(seed: int) -> list[torch.Tensor]:
        return [b["x"] for b in curriculum(task, seed=seed).train_dataloader()]

    first, again, other = batches(3), batches(3), batches(4)
    assert len(first) == len(again)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert any(
        a.shape != b.shape or not torch.equal(a, b) for a, b in zip(first, other, strict=False)
    )


@pytest.mark.parametrize("task", ["parity_check", "associative_recall"])
def test_curriculum_resumed_mid_epoch_sees_the_same_remaining_batches(task):
    loader = curriculum(task).train_dataloader()
    list(loader)  # epoch 0
    loader.sampler.set_epoch(1)
    it = iter(loader)
    for _ in range(5):
        next(it)
    state = loader.state_dict()
    rest = [b["x"] for b in it]
    assert state == {"epoch": 1, "batches": 5}
    fresh = curriculum(task).train_dataloader()  # a new process: same seed, a checkpoint
    fresh.load_state_dict(state)
    resumed = [b["x"] for b in fresh]
    assert len(resumed) == len(rest) and len(rest) == len(loader) - 5
    assert all(torch.equal(a, b) for a, b in zip(resumed, rest, strict=True))


@pytest.mark.integration
def test_a_curriculum_fit_resumed_mid_epoch_ends_as_an_unbroken_one(tmp_path):
    # 20 lengths x 2 examples: 20 one-length batches an epoch, so the checkpoint at step 6 is
    # mid-epoch; a constant schedule makes the first 6 steps the same whatever max_steps is
    config = REPO / "configs" / "sum_mod" / "lstm.yaml"
    args = (
        "--data.curriculum=true",
        "--data.n_train=40",
        "--model.schedule=constant",
        "--trainer.deterministic=true",
    )
    straight = tiny_fit(config, tmp_path / "straight", *args, "--trainer.max_steps=9")
    tiny_fit(config, tmp_path / "broken", *args)  # 6 steps, checkpoints at 3 and 6
    (tmp_path / "broken" / "metrics.json").unlink()  # as if it died after its checkpoint
    resumed = tiny_fit(
        config, tmp_path / "broken", *args, "--ckpt_path=last", "--trainer.max_steps=9"
    )
    assert resumed.steps == straight.steps == 9
    assert resumed.metrics == straight.metrics  # exactly equal floats


def test_curriculum_needs_an_example_per_length():
    with pytest.raises(ValueError, match=r"n_train must be an integer >= 6 \(one per curriculum"):
        SumModData(length=6, curriculum=True, n_train=5)
    with pytest.raises(ValueError, match="curriculum must be true or false, got 'yes'"):
        SumModData(curriculum="yes")


def test_without_curriculum_the_training_split_is_one_length():
    dm = SumModData(length=6, n_train=20, n_val=4, n_test=4, batch_size=4)
    dm.setup()
    assert isinstance(dm.train_set, TensorDictDataset) and dm.train_lengths == [6]
    assert set(lengths_of(dm.train_dataloader())) == {6}


# ---- the pieces under the curriculum ----------------------------------------------------------


def test_grouped_batches_never_mix_groups_and_cover_each_example_once():
    sampler = EpochBatches(5, batch_size=2, shuffle=True, seed=0, groups=[3, 2])
    batches = list(sampler)
    assert len(sampler) == 3 and sorted(len(b) for b in batches) == [1, 2, 2]
    assert all(set(b) <= {0, 1, 2} or set(b) <= {3, 4} for b in batches)
    assert sorted(i for b in batches for i in b) == [0, 1, 2, 3, 4]
    ordered = EpochBatches(5, batch_size=2, shuffle=False, seed=0, groups=[3, 2])
    assert list(ordered) == [[0, 1], [2], [3, 4]]
    with pytest.raises(ValueError, match=r"groups must sum to n=5, got \[3, 3\]"):
        EpochBatches(5, 2, True, 0, groups=[3, 3])


def test_grouped_dataset_indexes_within_one_group_only():
    short = TensorDictDataset({"x": torch.zeros(3, 2)})
    long = TensorDictDataset({"x": torch.arange(8.0).view(2, 4)})
    data = GroupedTensorDicts([short, long])
    assert len(data) == 5 and data.sizes == [3, 2]
    assert data[[4, 3]]["x"].tolist() == [[4.0, 5, 6, 7], [0.0, 1, 2, 3]]
    assert data[[0, 2]]["x"].shape == (2, 2)
    with pytest.raises(ValueError, match="a batch must come from one group"):
        data[[2, 3]]
    loader = batch_loader(data, 2, True, 0, groups=data.sizes)
    assert sorted(b["x"].shape[1] for b in loader) == [2, 2, 4]


def test_default_sizes_and_prefixes():
    parity, arith, sums, recall = (
        ParityCheckData(),
        ModularArithmeticData(),
        SumModData(),
        AssociativeRecallData(),
    )
    assert parity.test_prefixes == ["test", "test_len40", "test_len80"]
    assert (parity.in_features, parity.out_features, parity.max_len) == (2, 2, 80)
    assert arith.test_lengths == [15, 30, 60]
    assert (arith.in_features, arith.out_features) == (9, 5)
    assert (sums.in_features, sums.out_features, sums.max_len) == (6, 5, 80)
    assert (recall.in_features, recall.out_features, recall.max_len) == (64, 64, 128)
    assert [recall.pairs_at(n) for n in recall.test_lengths] == [4, 8, 16]
    assert recall.shortest_length == 4 and parity.shortest_length == 1
