"""Each task's worked example, and its targets checked against a slow reference."""

import pytest
import torch

from lit_seq.data import (
    BOS,
    EOS,
    N_SPECIAL,
    PAD,
    EchoData,
    ParitySumData,
    Seq2SeqData,
    SignalData,
    echo_targets,
    parity_sum_targets,
    seq2seq_targets,
    sine_waves,
)

# ---- signal ------------------------------------------------------------------------------


def test_signal_worked_example():
    wave = sine_waves(torch.tensor([2.0]), torch.tensor([0.0]), length=8, window=8)
    torch.testing.assert_close(
        wave, torch.tensor([[0.0, 1, 0, -1, 0, 1, 0, -1]]), atol=1e-6, rtol=0
    )


def test_signal_label_is_the_dominant_frequency_also_on_longer_sets():
    dm = SignalData(length=32, freqs=[1.0, 2.0, 5.0], noise=0.0, n_per_class=5, n_eval_per_class=3)
    dm.setup()
    for split, factor in [(dm.train_set, 1), (dm.test_sets[0], 1), (dm.test_sets[1], 2)]:
        x, y = split.tensors["x"][..., 0], split.tensors["y"]
        # A sine of f cycles per training window puts its peak in FFT bin f * (windows shown).
        peak = torch.fft.rfft(x, dim=1).abs().argmax(dim=1)  # (B,)
        assert peak.tolist() == [int(dm.freqs[c]) * factor for c in y.tolist()]


def test_signal_classes_are_balanced_and_shuffled():
    dm = SignalData(length=16, n_per_class=7, n_eval_per_class=2)
    dm.setup()
    y = dm.train_set.tensors["y"]
    assert torch.bincount(y).tolist() == [7, 7, 7]
    assert y.tolist() != sorted(y.tolist())


def test_signal_channels_share_the_sine_with_independent_noise():
    clean = SignalData(length=16, in_features=3, noise=0.0, n_per_class=2, n_eval_per_class=1)
    noisy = SignalData(length=16, in_features=3, noise=0.5, n_per_class=2, n_eval_per_class=1)
    clean.setup()
    noisy.setup()
    x = clean.train_set.tensors["x"]  # (B, T, 3)
    assert torch.equal(x[..., 0], x[..., 1]) and torch.equal(x[..., 0], x[..., 2])
    x = noisy.train_set.tensors["x"]
    assert not torch.equal(x[..., 0], x[..., 1])


# ---- parity_sum --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "target"),
    [([1, 2, 3, 4, 5], [1, 2, 4, 6, 9]), ([1, 5, 2, 1, 5, 1, 3], [1, 5, 3, 6, 8, 7, 11])],
)
def test_parity_sum_worked_examples(values, target):
    assert parity_sum_targets(torch.tensor([values])).tolist() == [target]


def slow_parity_sum(values: list[int]) -> list[int]:
    """The definition, literally: sum of values[k] for k <= t with k % 2 == t % 2."""
    return [sum(values[k] for k in range(t + 1) if k % 2 == t % 2) for t in range(len(values))]


def test_parity_sum_generated_targets_match_the_slow_reference():
    dm = ParitySumData(length=7, max_val=4, n_train=6, n_val=2, n_test=3)
    dm.setup()
    for split in [dm.train_set, dm.test_sets[0], dm.test_sets[2]]:
        x, y = split.tensors["x"], split.tensors["y"]
        values = x[..., 0].long()
        assert values.min() >= 1 and values.max() <= 4
        assert torch.equal(x[..., 1], (torch.arange(x.shape[1]) % 2).float().expand_as(y))
        for row in range(3):
            assert y[row].long().tolist() == slow_parity_sum(values[row].tolist())


# ---- echo --------------------------------------------------------------------------------


def test_echo_worked_example():
    assert echo_targets(torch.tensor([[1, 0, 1, 1, 0]]), lag=2).tolist() == [[0, 0, 1, 0, 1]]


def test_echo_targets_are_the_input_shifted_by_lag_on_every_sequence():
    dm = EchoData(length=8, lag=3, n_train=20, n_val=4, n_test=5)
    dm.setup()
    for split in [dm.train_set, dm.val_set, *dm.test_sets]:
        x, y, mask = (split.tensors[k] for k in ("x", "y", "mask"))
        assert set(x.unique().tolist()) <= {0.0, 1.0}
        assert torch.equal(y[:, 3:], x[:, :-3, 0])
        assert not y[:, :3].any()
        assert not mask[:, :3].any() and mask[:, 3:].all()


def test_echo_lag_zero_is_the_identity():
    bits = torch.tensor([[1.0, 0.0, 1.0]])
    assert torch.equal(echo_targets(bits, lag=0), bits)


# ---- seq2seq -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("copy", [[BOS, 5, 3, 4, EOS, PAD, PAD], [BOS, 7, 9, EOS, PAD, PAD, PAD]]),
        ("reverse", [[BOS, 4, 3, 5, EOS, PAD, PAD], [BOS, 9, 7, EOS, PAD, PAD, PAD]]),
        ("sort", [[BOS, 3, 4, 5, EOS, PAD, PAD], [BOS, 7, 9, EOS, PAD, PAD, PAD]]),
    ],
)
def test_seq2seq_worked_examples_with_padding(op, expected):
    src = torch.tensor([[5, 3, 4, PAD, PAD], [7, 9, PAD, PAD, PAD]])
    assert seq2seq_targets(src, torch.tensor([3, 2]), op).tolist() == expected


def slow_op(tokens: list[int], op: str) -> list[int]:
    return {"copy": tokens, "reverse": tokens[::-1], "sort": sorted(tokens)}[op]


@pytest.mark.parametrize("op", ["copy", "reverse", "sort"])
def test_seq2seq_every_target_is_op_of_its_source(op):
    dm = Seq2SeqData(op=op, vocab=6, min_length=2, max_length=5, n_train=40, n_val=4, n_test=20)
    dm.setup()
    for split in [dm.train_set, *dm.test_sets]:
        src, tgt, lengths = (split.tensors[k] for k in ("src", "tgt", "length"))
        for s, t, n in zip(src.tolist(), tgt.tolist(), lengths.tolist(), strict=True):
            assert all(N_SPECIAL <= tok < N_SPECIAL + 6 for tok in s[:n])
            assert s[n:] == [PAD] * (len(s) - n)
            assert t == [BOS, *slow_op(s[:n], op), EOS] + [PAD] * (len(s) - n)


def test_seq2seq_lengths_span_the_training_range_and_gen_sets_go_beyond_it():
    dm = Seq2SeqData(min_length=2, max_length=5, n_train=400, n_val=4, n_test=200)
    dm.setup()
    assert set(dm.train_set.tensors["length"].tolist()) == {2, 3, 4, 5}
    for split, factor in zip(dm.test_sets[1:], dm.gen_factors, strict=True):
        lengths = split.tensors["length"]
        assert lengths.min() > 5 and lengths.max() <= 5 * factor
        assert split.tensors["src"].shape[1] == 5 * factor


def test_seq2seq_rejects_an_unknown_op_in_the_pure_function_too():
    with pytest.raises(ValueError, match="op must be one of"):
        seq2seq_targets(torch.tensor([[3]]), torch.tensor([1]), "shuffle")
