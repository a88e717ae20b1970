"""Diagonal linear recurrence (LRU style, Orvieto et al. 2023), selective, with the eigenvalue
range of Grazzi et al. (ICLR 2025) as an option: (B, T, d) -> (B, T, d).

What is built, per block (pre-norm, residual, a feed-forward after the mixer as in the LRU)::

    u = LN(x)
    λ_t = sigmoid(W_λ u_t + b_λ)            eigenvalues="positive": λ in (0, 1)
    λ_t = 2 sigmoid(W_λ u_t + b_λ) - 1      eigenvalues="signed":   λ in (-1, 1)
    h_t = λ_t * h_{t-1} + W_in u_t          # (B, d): a real diagonal transition
    x = x + Dropout(W_out h_t + D * u_t)
    x = x + Dropout(FFN(LN(x)))

Why selective (λ_t depends on the input) and real: a transition that does not depend on
the input applies the same λ after a 0 and after a 1, so it cannot flip the state on a 1
only, whatever its range. Grazzi et al. prove that linear RNNs whose input-dependent
diagonal transitions stay in [0, 1] (Mamba, GLA, DeltaNet as published) cannot solve parity
in finite precision, and that letting the same transitions reach -1 (their fix: 2x - 1 of
the [0, 1] value, as here) makes it solvable; their experiments are on such selective
models. So the comparison they make is exactly ``positive`` vs ``signed`` here, everything
else equal (same parameters, same init). A real λ is what their fix needs (a sign, not a
rotation); the LRU's complex λ would blur that contrast.

Parity in the signed model, worked (one channel): λ_t = -1 on a 1 and +1 on a 0, W_in u_t = 1
on a 1 and 0 on a 0: the inputs 1, 0, 1, 1 give h = 1, 1, -1 + 1 = 0, 0 + 1 = 1, the parity
of the ones so far. A positive λ cannot flip a sign: the same weights there give λ ~ 0 on a
1, which resets the state (h = 1, 1, 1, 1). A test runs both through ``LinearRecurrence``
with weights that put λ within 1e-8 of those values.

Two forms: ``forward`` (projections for all T at once, then ``scan.linear_scan``) and
``recurrent`` (one token at a time): equal in float64 (tests). Causal whatever ``causal``
says (a forward recurrence: trailing padding never reaches a real position; a classifier
reads the last real position or the mean). Not an encoder-decoder arch (``SEQ2SEQ``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from lit_seq.util.checks import check_choice

from .dropout import Dropout
from .scan import linear_scan
from .transformer import FeedForward

EIGENVALUES = ("positive", "signed")  # λ in (0, 1), or in (-1, 1) (Grazzi et al.)


class LinearRecurrence(nn.Module):
    """The mixer: (B, T, d) -> (B, T, d); ``step`` reads one token of a running state h.

    Args:
        d_model: width d (also the state's).
        eigenvalues: "positive" (λ in (0, 1)) or "signed" (λ in (-1, 1)).
    """

    def __init__(self, d_model: int, eigenvalues: str = "positive") -> None:
        super().__init__()
        self.signed = check_choice("eigenvalues", eigenvalues, EIGENVALUES) == "signed"
        self.transition = nn.Linear(d_model, d_model)
        # the LRU starts with slowly decaying states: sigmoid(b) in [0.9, 0.999], the same b
        # for both ranges (signed maps it to 2 sigmoid(b) - 1, in [0.8, 0.998])
        with torch.no_grad():
            self.transition.bias.copy_(torch.logit(torch.empty(d_model).uniform_(0.9, 0.999)))
        self.in_proj = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model)
        self.D = nn.Parameter(torch.ones(d_model))

    def eigenvalues(self, u: Tensor) -> Tensor:
        """λ (..., d) of the input u (..., d)."""
        gate = torch.sigmoid(self.transition(u))
        return 2 * gate - 1 if self.signed else gate

    def forward(self, u: Tensor) -> Tensor:
        """(B, T, d) -> (B, T, d), every position at once."""
        h = linear_scan(self.eigenvalues(u), self.in_proj(u))  # (B, T, d)
        return self.out_proj(h) + self.D * u

    def step(self, u: Tensor, h: Tensor) -> tuple[Tensor, Tensor]:
        """One token: u (B, d) and h (B, d) -> the output (B, d) and the next h."""
        h = self.eigenvalues(u) * h + self.in_proj(u)
        return self.out_proj(h) + self.D * u, h


class LinearRNNBackbone(nn.Module):
    """Stacked linear-recurrence blocks (each with a feed-forward) and a final LayerNorm.

    Args:
        d_model: width d.
        n_layers: blocks.
        d_ff: feed-forward width; None means 4 * d_model.
        eigenvalues: "positive" (λ in (0, 1)) or "signed" (λ in (-1, 1), Grazzi et al.).
        dropout: dropout on each sub-layer's output and inside the feed-forward.
        causal: accepted for the shared interface; the model is causal either way (its
            ``causal`` attribute is True).
    """

    arch = "linear_rnn"  # its key in BACKBONES

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 2,
        d_ff: int | None = None,
        eigenvalues: str = "positive",
        dropout: float = 0.0,
        causal: bool = False,
    ) -> None:
        super().__init__()
        # causal whatever the flag says: what a head reads (a [CLS] token first would be blind)
        self.causal = True
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.ln1 = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layers))
        self.mixers = nn.ModuleList(LinearRecurrence(d_model, eigenvalues) for _ in range(n_layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layers))
        self.ffns = nn.ModuleList(FeedForward(d_model, d_ff, dropout) for _ in range(n_layers))
        self.drop = Dropout(dropout)
        self.ln_f = nn.LayerNorm(d_model)

    def _layers(self):
        return zip(self.ln1, self.mixers, self.ln2, self.ffns, strict=True)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, d) -> (B, T, d). ``padding_mask`` is not needed: padding trails and the
        model is causal, so it never reaches a real position."""
        for ln1, mixer, ln2, ffn in self._layers():
            x = x + self.drop(mixer(ln1(x)))
            x = x + self.drop(ffn(ln2(x)))
        return self.ln_f(x)

    def recurrent(self, x: Tensor) -> Tensor:
        """The same outputs one token at a time (the step form): (B, T, d) -> (B, T, d)."""
        states = [x.new_zeros(x.shape[0], x.shape[-1]) for _ in self.mixers]
        outputs = []
        for x_t in x.unbind(1):
            for k, (ln1, mixer, ln2, ffn) in enumerate(self._layers()):
                y, states[k] = mixer.step(ln1(x_t), states[k])
                x_t = x_t + self.drop(y)
                x_t = x_t + self.drop(ffn(ln2(x_t)))
            outputs.append(self.ln_f(x_t))
        return torch.stack(outputs, dim=1)
