"""Sequence readouts: pool a (B, T, d) sequence into one (B, d) vector per example.

- "mean": average over real (non-padded) positions.
- "cls": prepend a learned [CLS] token before the backbone and read its output.
- "last": the output at each sequence's last real position (padding trails).
- "empty": append a learned empty token right after each sequence and read its output
  (Delétang et al. 2023's models read a classification there, experiments/utils.py
  ``make_model_with_empty_targets``: one empty position for a one-label output).

Worked example, one sequence h = [[1], [3], [5]] with the last step padded:
mean -> 2, last -> 3, and padding never enters either. "empty" makes the input
[x1, x2, E, pad] (the token takes the first padded slot) and reads position 2.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lit_seq.util.checks import check_choice

READOUTS = ("mean", "cls", "last", "empty")


class Readout(nn.Module):
    """Turns per-position features into one vector per sequence.

    Used in two steps around the backbone: ``prepare`` before it (adds the [CLS]
    token), ``pool`` after it.

    Args:
        mode: one of "mean", "cls", "last", "empty".
        d_model: width of the features (and of the [CLS] or empty token).
        empty_symbol: (1, 1, d_model) fixed empty token (the one-hot empty symbol of an
            input read without an embedding, ``OneHotInput``); None: a learned one.
    """

    def __init__(self, mode: str, d_model: int, empty_symbol: Tensor | None = None) -> None:
        super().__init__()
        self.mode = check_choice("readout", mode, READOUTS)
        if mode == "cls":
            self.cls_token = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)  # (1, 1, d)
        if mode == "empty" and empty_symbol is not None:
            self.register_buffer("empty_token", empty_symbol.clone(), persistent=False)
        elif mode == "empty":
            # the embedding of Delétang's one-hot empty symbol: a free vector
            self.empty_token = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)  # (1, 1, d)

    def prepare(
        self, x: Tensor, padding_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Prepend the [CLS] token for mode "cls", append the empty token for "empty";
        identity otherwise.

        Args:
            x: (B, T, d) embedded inputs.
            padding_mask: (B, T) bool, True at padding, or None.

        Returns:
            (B, T+1, d) and the mask with a leading False for "cls"; for "empty", the token
            in each sequence's first padded slot (a new last column) and the mask with that
            slot real; the inputs otherwise.
        """
        if self.mode == "empty":
            return self._append_empty(x, padding_mask)
        if self.mode != "cls":
            return x, padding_mask
        B = x.shape[0]
        x = torch.cat([self.cls_token.expand(B, -1, -1).to(x.dtype), x], dim=1)  # (B, T+1, d)
        if padding_mask is not None:
            pad_col = padding_mask.new_zeros(B, 1)  # the token itself is never padding
            padding_mask = torch.cat([pad_col, padding_mask], dim=1)  # (B, T+1)
        return x, padding_mask

    def _append_empty(self, x: Tensor, padding_mask: Tensor | None) -> tuple[Tensor, Tensor | None]:
        B, T, _ = x.shape
        token = self.empty_token.expand(B, 1, -1).to(x.dtype)  # (B, 1, d)
        if padding_mask is None:
            return torch.cat([x, token], dim=1), None  # (B, T+1, d)
        # right after the real tokens, so a forward recurrence reads it before any padding
        lengths = (~padding_mask).sum(dim=1, keepdim=True)  # (B, 1)
        slots = torch.arange(T + 1, device=x.device).unsqueeze(0)  # (1, T+1)
        x = torch.cat([x, x.new_zeros(B, 1, x.shape[2])], dim=1)  # (B, T+1, d)
        x = torch.where((slots == lengths).unsqueeze(-1), token, x)
        return x, slots > lengths  # (B, T+1, d), (B, T+1): padding after the token

    def pool(self, h: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """Pool backbone outputs (B, T', d) -> (B, d), ignoring padded positions.

        ``padding_mask`` must be the one returned by ``prepare``.
        """
        if self.mode == "cls":
            return h[:, 0]
        if padding_mask is None:  # "empty": the token is the last position, as "last" reads
            return h.mean(dim=1) if self.mode == "mean" else h[:, -1]
        real = ~padding_mask  # (B, T')
        if self.mode == "mean":
            w = real.unsqueeze(-1).to(h.dtype)  # (B, T', 1)
            return (h * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0)
        # "last" and "empty" (whose token is the last real position after prepare)
        last = (real.sum(dim=1) - 1).clamp(min=0)  # (B,) index of the last real position
        return h[torch.arange(h.shape[0], device=h.device), last]
