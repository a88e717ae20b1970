"""Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"): (B, T, d) -> (B, T, d).

Softmax attention's exp(q . k) replaced by a kernel phi(q) . phi(k) with phi(x) = elu(x) + 1
(> 0, the paper's choice), so causal attention becomes a running sum::

    y_t = phi(q_t)^T S_t / (phi(q_t) . z_t),   S_t = sum_{s<=t} phi(k_s) v_s^T,   z_t = sum_{s<=t} phi(k_s)

Two forms compute it: ``forward`` (parallel, below) and ``recurrent`` (one token at a time,
the state S (B, H, dh, dh) and z (B, H, dh)): equal in float64 (tests). Worked example, one
head, dh = 1, phi(q) = phi(k) = 1 everywhere and v = [2, 4, 6]:
y = [2, (2 + 4) / 2, (2 + 4 + 6) / 3] = [2, 3, 4], the running mean.

The causal parallel form is chunked (``causal_linear_attention``, as flash-linear-attention's
chunk kernels): the sequence in chunks of at most ``chunk`` positions; inside a chunk the
masked (L, L) matrix phi(Q) phi(K)^T times V; from the chunks before, their S and z, an
exclusive cumsum over chunks of each chunk's phi(K)^T V (no loop: the state has no decay).
The (T, T) form of before is the one-chunk case. The normaliser rides along as a column of
ones appended to V, so one matrix product gives numerator and denominator. Measured (fwd +
bwd of the attention, one thread, B 64, H 4, dh 8, CPU ms): T 64: 9.5 -> 6.5 (chunk 32),
T 256: 234 -> 34; T <= chunk is the (T, T) form at the same cost.

The block is the transformer's (pre-LN, residual, feed-forward, final LayerNorm), with the
transformer's default positions (sinusoidal, added to the input): without them the
non-causal model would read a bag of tokens. ``causal=False`` attends to every real position
with global sums (S and z over the whole sequence, padding left out); ``causal=True`` to the
past only (trailing padding then never reaches a real position). Not an encoder-decoder
arch (``SEQ2SEQ``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .dropout import Dropout
from .positional import SinusoidalPositionalEncoding
from .transformer import FeedForward

EPS = 1e-6  # keeps the normaliser off zero (phi > 0 already: elu + 1)
# positions a chunk of the causal form (measured at T 64: within 10% of 16, the fastest;
# 16 would cut T 20 in two chunks, 30% slower than one)
CHUNK = 32


def feature_map(x: Tensor) -> Tensor:
    """phi(x) = elu(x) + 1, positive everywhere."""
    return F.elu(x) + 1


def causal_linear_attention(q: Tensor, k: Tensor, v: Tensor, chunk: int) -> Tensor:
    """y (B, H, T, dh): position t reads keys s <= t, in chunks of at most ``chunk`` positions.

    Args:
        q, k: (B, H, T, dh) phi(q) and phi(k) (a padding key is 0).
        v: (B, H, T, dh) values.
        chunk: the most positions of a chunk; T is cut into ceil(T / chunk) chunks of equal
            length L (the last padded with zero keys, which add nothing).
    """
    B, H, T, dh = q.shape
    n = -(-T // chunk)  # chunks
    L = -(-T // n)  # positions a chunk, as equal as they come: fewer than n padded
    if n * L > T:
        q, k, v = (F.pad(x, (0, 0, 0, n * L - T)) for x in (q, k, v))
    v = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # the last column sums phi(k)
    q, k, v = (x.view(B, H, n, L, -1) for x in (q, k, v))  # (B, H, n, L, dh or dh + 1)
    # within each chunk, keys s <= t: a multiply by the (L, L) mask, not ``tril`` (which
    # took 2x as long, forward and backward, on these (B, H, n, L, L) scores)
    past = torch.ones(L, L, dtype=q.dtype, device=q.device).tril()
    out = ((q @ k.transpose(-1, -2)) * past) @ v
    if n > 1:  # and every key of the chunks before: their S (and z in the last column)
        kv = k.transpose(-1, -2) @ v  # (B, H, n, dh, dh + 1) each chunk's sums
        before = torch.cat([torch.zeros_like(kv[:, :, :1]), kv[:, :, :-1].cumsum(2)], dim=2)
        out = out + q @ before
    num, den = out.view(B, H, n * L, dh + 1)[:, :, :T].split([dh, 1], dim=-1)
    return num / (den + EPS)


def global_linear_attention(q: Tensor, k: Tensor, v: Tensor, n_heads: int) -> Tensor:
    """y (B, T, d): every position reads every key (the sums S and z over the whole sequence).

    The H heads' states as one (d, d + H) matrix per row, phi(K)^T [V, 1 per head], kept to
    each head's own block (z in the H last columns): two (B)-batched matrix products in the
    (B, T, d) layout; with (B, H)-batched (dh, dh) ones and the permutes to reach them, the
    module's forward and backward took 30% longer (B 64, T 64, d 32, H 4, with phi's change
    in ``_heads``; the zeros off the blocks are cheap at these widths).

    Args:
        q, k: (B, T, d) phi(q) and phi(k) (a padding key is 0); head h: features h dh ...
        v: (B, T, d) values.
        n_heads: heads H.
    """
    B, T, d = q.shape
    head = torch.arange(d, device=q.device) // (d // n_heads)  # the head of each feature
    column = torch.cat([head, torch.arange(n_heads, device=q.device)])  # of each of [V, 1]
    own = (head[:, None] == column).to(q.dtype)  # (d, d + H): 1 within a head's block
    v = torch.cat([v, v.new_ones(B, T, n_heads)], dim=-1)  # (B, T, d + H)
    num, den = (q @ ((k.transpose(1, 2) @ v) * own)).split([d, n_heads], dim=-1)
    return (num.view(B, T, n_heads, -1) / (den[..., None] + EPS)).view(B, T, d)


class LinearAttention(nn.Module):
    """Multi-head linear attention: (B, T, d) -> (B, T, d); ``step`` for the causal form.

    Args:
        d_model: width d.
        n_heads: heads H (must divide d_model).
        chunk: the most positions of a chunk of the causal form (``causal_linear_attention``).
    """

    def __init__(self, d_model: int, n_heads: int, chunk: int = CHUNK) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
        if chunk < 1:
            raise ValueError(f"chunk={chunk}; allowed: >= 1")
        self.n_heads, self.chunk = n_heads, chunk
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def _heads(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """phi(q), phi(k), v of x (B, T, d), each (B, T, d) (head h: features h dh .. h dh + dh).

        phi on the (B, T, 2d) block of q and k as it comes from ``qkv``: on heads permuted
        to (B, H, T, dh), elu's forward and backward ran 1.4x slower (strided memory).
        """
        d = x.shape[-1]
        qkv = self.qkv(x)  # (B, T, 3d)
        q, k = feature_map(qkv[..., : 2 * d]).chunk(2, dim=-1)
        return q, k, qkv[..., 2 * d :]

    def _per_head(self, x: Tensor) -> Tensor:
        """(B, T, d) -> (B, H, T, dh), a view."""
        B, T, d = x.shape
        return x.view(B, T, self.n_heads, d // self.n_heads).transpose(1, 2)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None, causal: bool = True) -> Tensor:
        """(B, T, d) -> (B, T, d); ``padding_mask`` (B, T) bool, True at padding."""
        B, T, d = x.shape
        q, k, v = self._heads(x)
        if padding_mask is not None:  # padding is no key: phi(k) = 0 there
            k = k.masked_fill(padding_mask[..., None], 0.0)
        if causal:
            q, k, v = (self._per_head(t) for t in (q, k, v))
            y = causal_linear_attention(q, k, v, self.chunk).transpose(1, 2).reshape(B, T, d)
        else:
            y = global_linear_attention(q, k, v, self.n_heads)
        return self.out_proj(y)  # (B, T, d)

    def init_state(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The zero state for x (B, ..., d): S (B, H, dh, dh) and z (B, H, dh)."""
        dh = x.shape[-1] // self.n_heads
        return x.new_zeros(x.shape[0], self.n_heads, dh, dh), x.new_zeros(
            x.shape[0], self.n_heads, dh
        )

    def step(self, x: Tensor, state: tuple[Tensor, Tensor]) -> tuple[Tensor, tuple]:
        """One token of the causal form: x (B, d) and (S, z) -> (B, d) and the next state."""
        S, z = state
        q, k, v = (self._per_head(t)[:, :, 0] for t in self._heads(x[:, None]))  # (B, H, dh)
        S = S + k[..., :, None] * v[..., None, :]  # (B, H, dh, dh)
        z = z + k
        y = (q[..., None, :] @ S)[..., 0, :] / ((q * z).sum(-1, keepdim=True) + EPS)
        return self.out_proj(y.reshape(x.shape)), (S, z)


class LinearAttentionBackbone(nn.Module):
    """Sinusoidal positions, pre-LN linear-attention blocks, final LayerNorm.

    Args:
        d_model: width d.
        n_layers: blocks.
        n_heads: heads H; must divide d_model.
        d_ff: feed-forward width; None means 4 * d_model.
        dropout: dropout on the input and on each sub-layer's output, and inside the FFN.
        causal: position t reads positions <= t; False: every real position (global sums).
        chunk: the most positions of a chunk of the causal form (``causal_linear_attention``).
    """

    arch = "linear_attention"  # its key in BACKBONES

    def __init__(
        self,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        d_ff: int | None = None,
        dropout: float = 0.0,
        causal: bool = False,
        chunk: int = CHUNK,
    ) -> None:
        super().__init__()
        self.causal = causal
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.pos = SinusoidalPositionalEncoding(d_model)
        self.ln1 = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layers))
        self.attns = nn.ModuleList(
            LinearAttention(d_model, n_heads, chunk) for _ in range(n_layers)
        )
        self.ln2 = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layers))
        self.ffns = nn.ModuleList(FeedForward(d_model, d_ff, dropout) for _ in range(n_layers))
        self.drop = Dropout(dropout)
        self.ln_f = nn.LayerNorm(d_model)

    def _layers(self):
        return zip(self.ln1, self.attns, self.ln2, self.ffns, strict=True)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, d) -> (B, T, d); ``padding_mask`` (B, T) bool, True at padding."""
        x = self.drop(self.pos(x))
        for ln1, attn, ln2, ffn in self._layers():
            x = x + self.drop(attn(ln1(x), padding_mask, causal=self.causal))
            x = x + self.drop(ffn(ln2(x)))
        return self.ln_f(x)

    def recurrent(self, x: Tensor) -> Tensor:
        """The causal outputs one token at a time (the step form): (B, T, d) -> (B, T, d)."""
        if not self.causal:
            raise ValueError("recurrent() computes the causal form; this backbone has causal=False")
        states = [attn.init_state(x) for attn in self.attns]
        outputs = []
        for t, x_t in enumerate(x.unbind(1)):
            x_t = self.drop(self.pos(x_t[:, None], offset=t)[:, 0])
            for k, (ln1, attn, ln2, ffn) in enumerate(self._layers()):
                y, states[k] = attn.step(ln1(x_t), states[k])
                x_t = x_t + self.drop(y)
                x_t = x_t + self.drop(ffn(ln2(x_t)))
            outputs.append(self.ln_f(x_t))
        return torch.stack(outputs, dim=1)
