"""Recurrent backbone: ``nn.RNN`` (tanh) or ``nn.LSTM``, one class, the cell a flag.

The torch modules (not a Python loop over time) are used so that cuDNN's fused
kernels run on GPU. Inside ``stacking.stacked_members()`` the same recurrence runs as a loop of
matrix products instead, which ``torch.func.vmap`` can batch over K models (packed runs).
"""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from lit_seq.models.stacking import in_stacked_call
from lit_seq.models.unrolled import unrolled
from lit_seq.util.checks import check_choice

CELLS = ("rnn", "lstm")


def make_rnn(
    cell: str, d_model: int, n_layers: int, dropout: float, bidirectional: bool = False
) -> nn.RNNBase:
    """Build a batch-first ``nn.RNN`` / ``nn.LSTM`` with hidden size ``d_model``.

    Dropout between layers only exists when there is more than one layer (torch
    warns otherwise), so it is dropped for ``n_layers == 1``.
    """
    check_choice("cell", cell, CELLS)
    kwargs = dict(
        input_size=d_model,
        hidden_size=d_model,
        num_layers=n_layers,
        batch_first=True,
        dropout=dropout if n_layers > 1 else 0.0,
        bidirectional=bidirectional,
    )
    return nn.LSTM(**kwargs) if cell == "lstm" else nn.RNN(nonlinearity="tanh", **kwargs)


class RecurrentBackbone(nn.Module):
    """Stacked RNN / LSTM: (B, T, d) -> (B, T, d).

    A unidirectional recurrence only reads the past, so it is causal whatever the
    ``causal`` flag says; the flag exists so that every backbone shares one
    interface, and it forbids ``bidirectional``.

    Args:
        d_model: input and hidden width d.
        n_layers: stacked recurrent layers.
        cell: "rnn" (tanh) or "lstm".
        dropout: dropout between stacked layers (ignored when n_layers == 1).
        bidirectional: add a backward pass; its (B, T, 2d) output is projected back to d.
        causal: promise that output t depends on inputs <= t only (forbids bidirectional).
    """

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 1,
        cell: str = "lstm",
        dropout: float = 0.0,
        bidirectional: bool = False,
        causal: bool = False,
    ) -> None:
        super().__init__()
        if bidirectional and causal:
            raise ValueError("bidirectional=True reads the future; not allowed with causal=True")
        self.cell = self.arch = cell  # arch: its key in BACKBONES
        self.causal = causal
        self.bidirectional = bidirectional
        self.rnn = make_rnn(cell, d_model, n_layers, dropout=dropout, bidirectional=bidirectional)
        self.proj = nn.Linear(2 * d_model, d_model) if bidirectional else nn.Identity()

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """Run the recurrence.

        Args:
            x: (B, T, d).
            padding_mask: (B, T) bool, True at padding, which must trail the real
                tokens. A forward-only recurrence never reads trailing padding before
                a real step, so the mask only matters for the backward direction: there
                the sequence is packed so each backward pass starts at its last real token.

        Returns:
            (B, T, d); outputs at padded positions are meaningless.
        """
        if self.bidirectional and padding_mask is not None:
            T = x.shape[1]
            lengths = (~padding_mask).sum(dim=1).clamp(min=1).cpu()  # pack wants CPU lengths
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = self.rnn(packed)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T, 2d)
        elif in_stacked_call() and not self.bidirectional:  # the same recurrence, for vmap
            out = unrolled(self.rnn, x)
        else:
            out, _ = self.rnn(x)  # (B, T, d) or (B, T, 2d)
        return self.proj(out)
