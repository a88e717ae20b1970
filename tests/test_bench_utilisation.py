"""The utilisation benchmark counts what a step computes, fused LSTM kernels included."""

import torch

from lit_seq.bench.utilisation import _lstm_flops, matmul_peak, step_flops


class _Tiny(torch.nn.Module):
    """A system-shaped module: ``loss(batch)`` over a one-layer LSTM, nothing else counted."""

    def __init__(self, cell: type) -> None:
        super().__init__()
        self.rnn = cell(3, 5, batch_first=True)

    def loss(self, batch):
        return self.rnn(batch["x"])[0].sum()


def test_lstm_products_are_counted_from_their_shapes():
    # B=2, T=7, in=3, hidden=5: 2 * 4 gates * (3 + 5) * 5 per position, 14 positions, x3
    assert _lstm_flops(torch.nn.LSTM(3, 5), (torch.randn(2, 7, 3),)) == 3 * 2 * 4 * 8 * 5 * 14
    assert step_flops(_Tiny(torch.nn.LSTM), {"x": torch.randn(2, 7, 3)}) == 3 * 2 * 4 * 8 * 5 * 14


def test_a_plain_rnn_is_counted_by_the_flop_counter_itself():
    # forward 2 * (3 + 5) * 5 per position: the counted step is at least that, at most 3x
    flops = step_flops(_Tiny(torch.nn.RNN), {"x": torch.randn(2, 7, 3)})
    forward = 2 * 8 * 5 * 14
    assert forward <= flops <= 3 * forward


def test_matmul_peak_is_a_positive_rate():
    assert matmul_peak(64, repeats=2) > 0
