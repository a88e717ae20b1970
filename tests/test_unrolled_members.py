"""``models.stacked_recurrence`` and ``stacking.MembersLinear``: K members' unrolled recurrence
and linear layers as one computation under vmap compute, bit for bit, what vmap makes of each
member's ``unrolled`` and ``nn.Linear`` (forward and gradients)."""

import pytest
import torch
from torch import nn
from torch.func import functional_call, vmap

from lit_seq.models.stacked_recurrence import members_unrolled
from lit_seq.models.stacking import MembersLinear, stacked_members
from lit_seq.models.unrolled import unrolled

K, B, T, D_IN, HIDDEN = 3, 4, 5, 2, 6


class _Recurrence(nn.Module):
    """``fn(rnn, x)`` as a module's forward, so ``functional_call`` can swap the weights."""

    def __init__(self, rnn: nn.RNNBase, fn) -> None:
        super().__init__()
        self.rnn, self.fn = rnn, fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(self.rnn, x)


def _vmapped(rnn, fn, weights, x):
    module = _Recurrence(rnn, fn)
    one = lambda w, xx: functional_call(module, {f"rnn.{n}": v for n, v in w.items()}, (xx,))  # noqa: E731
    return vmap(one)(weights, x)


@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.RNN(D_IN, HIDDEN, batch_first=True),
        lambda: nn.RNN(D_IN, HIDDEN, batch_first=True, nonlinearity="relu", bias=False),
        lambda: nn.LSTM(D_IN, HIDDEN, num_layers=2, batch_first=True),
    ],
)
def test_members_in_one_pass_equal_vmapped_unrolled_bit_for_bit(make):
    torch.manual_seed(0)
    rnn = make()
    weights = {n: torch.randn(K, *p.shape, requires_grad=True) for n, p in rnn.named_parameters()}
    x = torch.randn(K, B, T, D_IN, requires_grad=True)
    results = []
    for fn in (unrolled, members_unrolled):
        out = _vmapped(rnn, fn, weights, x)  # (K, B, T, HIDDEN)
        loss = (out.square() * torch.linspace(0, 1, HIDDEN)).sum()
        results.append((out, torch.autograd.grad(loss, [*weights.values(), x])))
    (out, grads), (expected, expected_grads) = results[1], results[0]
    assert torch.equal(out, expected)
    for grad, wanted in zip(grads, expected_grads, strict=True):
        assert torch.equal(grad, wanted)


def test_outside_vmap_it_is_one_members_unrolled_recurrence():
    torch.manual_seed(1)
    lstm = nn.LSTM(D_IN, HIDDEN, batch_first=True)
    x = torch.randn(B, T, D_IN, requires_grad=True)
    out, expected = members_unrolled(lstm, x), unrolled(lstm, x)
    assert torch.equal(out, expected)
    grad, expected_grad = (torch.autograd.grad(y.sum(), x)[0] for y in (out, expected))
    assert torch.equal(grad, expected_grad)


def test_dropout_between_layers_is_refused_in_training():
    rnn = nn.RNN(D_IN, HIDDEN, num_layers=2, dropout=0.5, batch_first=True)
    with pytest.raises(ValueError, match="no dropout between layers"):
        members_unrolled(rnn, torch.randn(B, T, D_IN))


def test_a_members_linear_layer_equals_vmaps_own_rule_bit_for_bit():
    torch.manual_seed(2)
    layer = MembersLinear(D_IN, HIDDEN)
    weights = {n: torch.randn(K, *p.shape, requires_grad=True) for n, p in layer.named_parameters()}
    x = torch.randn(K, B, T, D_IN, requires_grad=True)
    plain = nn.Linear(D_IN, HIDDEN)
    results = []
    for stacked in (True, False):  # the fold, then nn.Linear's forward under vmap
        one = lambda w, xx, s=stacked: _call(layer if s else plain, w, xx, s)  # noqa: E731
        out = vmap(one)(weights, x)
        results.append((out, torch.autograd.grad(out.square().sum(), [*weights.values(), x])))
    (out, grads), (expected, expected_grads) = results
    assert torch.equal(out, expected)
    for grad, wanted in zip(grads, expected_grads, strict=True):
        assert torch.equal(grad, wanted)
    plain.load_state_dict(layer.state_dict())  # the same parameters, the same state dict
    assert torch.equal(layer(x[0]), plain(x[0]))


def _call(layer, weights, x, stacked: bool):
    if not stacked:
        return functional_call(layer, weights, (x,))
    with stacked_members():
        return functional_call(layer, weights, (x,))
