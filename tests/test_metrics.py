"""The masked step accuracy and sequence exact match used by echo, parity_sum and seq2seq."""

import pytest
import torch

from lit_seq.systems.metrics import SequenceExactMatch, StepAccuracy


def test_step_accuracy_counts_only_scored_positions():
    preds = torch.tensor([[1, 0, 1, 1], [0, 0, 0, 0]])
    target = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])
    mask = torch.tensor([[False, False, True, True], [True, True, True, False]])
    metric = StepAccuracy()
    metric.update(preds, target, mask)
    # scored: row 0 -> 2 of 2 right; row 1 -> 2 of 3 right
    assert metric.compute().item() == pytest.approx(4 / 5)


def test_exact_match_ignores_unscored_positions_and_accumulates_batches():
    metric = SequenceExactMatch()
    target = torch.tensor([[1, 2, 0], [3, 4, 0]])
    mask = target != 0
    metric.update(torch.tensor([[1, 2, 9], [3, 5, 0]]), target, mask)  # 1 of 2 right
    metric.update(torch.tensor([[1, 2, 0]]), target[:1], mask[:1])  # 1 of 1 right
    assert metric.compute().item() == pytest.approx(2 / 3)


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match="preds shape"):
        StepAccuracy().update(torch.zeros(2, 3), torch.zeros(2, 4))


def test_acc_ood_scores_only_the_positions_past_training():
    # right at positions 0-9, then right at every other position: acc 0.75, acc_ood 0.5
    target = torch.zeros(1, 20)
    preds = target.clone()
    preds[0, 10::2] = 1
    acc, ood = StepAccuracy(), StepAccuracy(from_position=10)
    acc.update(preds, target)
    ood.update(preds, target)
    assert float(acc.compute()) == 0.75 and float(ood.compute()) == 0.5
