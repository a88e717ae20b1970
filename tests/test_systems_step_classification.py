"""StepClassification: per-step cross-entropy on the scored positions only, and its metrics."""

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from lit_seq.data import TASKS
from lit_seq.systems import SYSTEMS, StepClassification


class FixedLogits(nn.Module):
    """A stand-in network: returns the same (B, T, C) logits for any input."""

    def __init__(self, logits: Tensor) -> None:
        super().__init__()
        self.logits = nn.Parameter(logits)

    def forward(self, x: Tensor) -> Tensor:
        return self.logits


def system(arch: str = "lstm", **kwargs) -> StepClassification:
    return StepClassification(
        in_features=4, out_features=3, max_len=8, arch=arch, d_model=8, n_layers=1, **kwargs
    )


def batch(seed: int = 0) -> dict[str, Tensor]:
    g = torch.Generator().manual_seed(seed)
    mask = torch.tensor([[True, False, True, False, True], [False, True, True, False, False]])
    return {
        "x": torch.randn(2, 5, 4, generator=g),
        "y": torch.randint(0, 3, (2, 5), generator=g),
        "mask": mask,
    }


def test_it_trains_every_step_classification_task_and_is_causal_by_default():
    assert SYSTEMS["step_classification"] is StepClassification
    kinds = {name for name, cls in TASKS.items() if cls.task_kind == "step_classification"}
    assert kinds == {"sum_mod", "associative_recall"}
    model = system(arch="transformer", n_heads=2)
    assert model.net.backbone.causal and model.hparams.causal
    assert model.net.head.out_features == 3  # one logit per class, at every step
    assert model(batch()["x"]).shape == (2, 5, 3)
    assert model.chance_level == pytest.approx(1 / 3)


def test_loss_is_cross_entropy_over_the_masked_positions_only():
    model = system().eval()
    b = batch()
    logits = model(b["x"])
    expected = F.cross_entropy(logits[b["mask"]], b["y"][b["mask"]])
    torch.testing.assert_close(model.loss(b), expected)
    # targets outside the mask change nothing, targets inside it do
    outside = {**b, "y": torch.where(b["mask"], b["y"], (b["y"] + 1) % 3)}
    torch.testing.assert_close(model.loss(outside), expected)
    inside = {**b, "y": torch.where(b["mask"], (b["y"] + 1) % 3, b["y"])}
    assert not torch.isclose(model.loss(inside), expected)


def test_metrics_on_a_hand_made_batch():
    # argmax predictions: row 0 -> [0, 1, 2, 0, 1], row 1 -> [2, 2, 2, 2, 2]
    preds = torch.tensor([[0, 1, 2, 0, 1], [2, 2, 2, 2, 2]])
    logits = F.one_hot(preds, 3).float() * 5.0  # (B, T, C)
    model = system()
    model.net = FixedLogits(logits)
    b = {
        "x": torch.zeros(2, 5, 4),
        "y": torch.tensor([[0, 0, 2, 1, 1], [1, 2, 0, 0, 0]]),
        "mask": torch.tensor([[True, True, True, False, True], [False, True, False, False, False]]),
    }
    # row 0 scored at 0, 1, 2, 4: right at 0, 2, 4 (3 of 4); row 1 scored at 1: right (1 of 1)
    metrics = model.build_metrics()
    loss = model.evaluate(b, metrics)
    values = metrics.compute()
    assert values["acc"].item() == pytest.approx(4 / 5)
    assert values["exact"].item() == pytest.approx(1 / 2)  # row 1 only
    torch.testing.assert_close(loss, F.cross_entropy(logits[b["mask"]], b["y"][b["mask"]]))
    hits, scored = model.step_hits(b)
    assert hits[scored].tolist() == [True, False, True, True, True]


def test_the_gradient_reaches_only_the_scored_positions():
    model = system()
    model.net = FixedLogits(torch.randn(2, 5, 3))
    b = batch()
    model.loss(b).backward()
    grad = model.net.logits.grad.abs().sum(-1)  # (B, T)
    assert (grad[~b["mask"]] == 0).all() and (grad[b["mask"]] > 0).all()
