"""The in-place CPU recurrence that scoring uses is ``nn.RNN``'s forward pass."""

import pytest
import torch
from torch import nn

from lit_seq.models.inference_recurrence import rnn_inference, uses_inference_recurrence
from lit_seq.models.recurrent import RecurrentBackbone


@pytest.mark.parametrize("nonlinearity", ["relu", "tanh"])
@pytest.mark.parametrize("n_layers,bias", [(1, True), (2, True), (2, False)])
def test_equals_nn_rnn(nonlinearity, n_layers, bias):
    torch.manual_seed(0)
    rnn = nn.RNN(3, 16, n_layers, nonlinearity=nonlinearity, bias=bias, batch_first=True)
    x = torch.randn(5, 9, 3, dtype=torch.float64)
    rnn = rnn.double()
    with torch.inference_mode():
        assert uses_inference_recurrence(rnn, x)
        torch.testing.assert_close(rnn_inference(rnn, x), rnn(x)[0], rtol=1e-12, atol=1e-12)


def test_the_backbone_takes_it_only_when_scoring():
    """Inference mode on the CPU: the in-place pass, equal in float32; with gradients (and
    for an LSTM, or dropout drawn between layers) ATen's."""
    torch.manual_seed(0)
    backbone = RecurrentBackbone(d_model=32, n_layers=1, cell="rnn", nonlinearity="relu").eval()
    x = torch.randn(4, 50, 32)
    expected = backbone.rnn(x)[0]
    with torch.inference_mode():
        assert uses_inference_recurrence(backbone.rnn, x)
        torch.testing.assert_close(backbone(x), expected, rtol=1e-5, atol=1e-6)
    assert not uses_inference_recurrence(backbone.rnn, x)  # training: autograd's graph
    lstm = RecurrentBackbone(d_model=8, cell="lstm")
    dropping = RecurrentBackbone(d_model=8, n_layers=2, cell="rnn", dropout=0.5).train()
    with torch.inference_mode():
        assert not uses_inference_recurrence(lstm.rnn, x)
        assert not uses_inference_recurrence(dropping.rnn, x)


def test_under_bf16_autocast_scoring_keeps_nn_rnn():
    """Autocast casts torch.mm but not the in-place steps: bf16-mixed scores through ATen."""
    torch.manual_seed(0)
    backbone = RecurrentBackbone(d_model=16, n_layers=1, cell="rnn", nonlinearity="relu").eval()
    x = torch.randn(2, 7, 16)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert not uses_inference_recurrence(backbone.rnn, x)
        assert backbone(x).shape == (2, 7, 16)
