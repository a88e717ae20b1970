"""Leaf layers: attention, positional encodings, the LayerNorm convention."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lit_seq.models import (
    POS_MODES,
    LearnablePositionalEncoding,
    MultiHeadAttention,
    NoPositionalEncoding,
    SinusoidalPositionalEncoding,
    TransformerBackbone,
    build_positional,
    causal_mask,
)


def copy_into_torch_mha(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    """Load our separate q/k/v/out projections into torch's packed in_proj layout."""
    with torch.no_grad():
        projs = [ours.q_proj, ours.k_proj, ours.v_proj]
        ref.in_proj_weight.copy_(torch.cat([p.weight for p in projs]))
        ref.in_proj_bias.copy_(torch.cat([p.bias for p in projs]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)


def test_two_token_attention_worked_example():
    # Identity projections, X = I: scores [[0.707, 0], [0, 0.707]] -> softmax [0.67, 0.33].
    mha = MultiHeadAttention(d_model=2, n_heads=1)
    with torch.no_grad():
        for proj in [mha.q_proj, mha.k_proj, mha.v_proj, mha.out_proj]:
            proj.weight.copy_(torch.eye(2))
            proj.bias.zero_()
    x = torch.eye(2)[None]  # (1, 2, 2): two tokens
    out, w = mha(x, need_weights=True)
    expected = torch.tensor([[0.67, 0.33], [0.33, 0.67]])
    torch.testing.assert_close(w[0, 0], expected, atol=0.01, rtol=0)
    torch.testing.assert_close(out[0], expected, atol=0.01, rtol=0)  # V = I, so out = weights
    fast, none = mha(x)  # the SDPA path agrees
    assert none is None
    torch.testing.assert_close(fast, out)


def test_causal_mask_is_lower_triangle():
    expected = torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask(3), expected)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("case", ["plain", "padding", "causal", "causal+padding", "cross"])
def test_mha_matches_torch(case, need_weights):
    torch.manual_seed(0)
    B, T, d, H = 2, 5, 8, 2
    ours = MultiHeadAttention(d, H).eval()
    ref = nn.MultiheadAttention(d, H, batch_first=True).eval()
    copy_into_torch_mha(ours, ref)
    q = torch.randn(B, T, d)
    kv = torch.randn(B, 7, d) if case == "cross" else q
    S = kv.shape[1]
    kpm = None
    if "padding" in case:
        kpm = torch.zeros(B, S, dtype=torch.bool)
        kpm[1, -2:] = True  # second sequence has two padded keys
    causal = "causal" in case
    attn_mask = ~causal_mask(T) if causal else None  # torch's bool mask: True = blocked

    out, w = ours(
        q, None if kv is q else kv, key_padding_mask=kpm, causal=causal, need_weights=need_weights
    )
    ref_out, ref_w = ref(
        q, kv, kv, key_padding_mask=kpm, attn_mask=attn_mask, average_attn_weights=False
    )
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)
    if need_weights:
        assert w.shape == (B, H, T, S)
        torch.testing.assert_close(w, ref_w, atol=1e-5, rtol=1e-4)
    else:
        assert w is None


def test_padded_keys_get_zero_weight():
    mha = MultiHeadAttention(8, 2)
    kpm = torch.tensor([[False, False, True]])
    _, w = mha(torch.randn(1, 3, 8), key_padding_mask=kpm, need_weights=True)
    assert torch.all(w[..., 2] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 2, 3))


def test_d_model_not_divisible_by_heads_names_both():
    with pytest.raises(ValueError, match=r"d_model=30 .*n_heads=4"):
        MultiHeadAttention(30, 4)


def test_causal_cross_attention_with_unequal_lengths_raises():
    with pytest.raises(ValueError, match="T=2 and S=3"):
        MultiHeadAttention(4, 1)(torch.randn(1, 2, 4), torch.randn(1, 3, 4), causal=True)


def test_sinusoidal_worked_example():
    pe = SinusoidalPositionalEncoding(d_model=4, max_len=8).pe
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1.0, 0.0, 1.0]), atol=1e-3, rtol=0)
    torch.testing.assert_close(pe[1], torch.tensor([0.841, 0.540, 0.010, 1.000]), atol=1e-3, rtol=0)


def test_sinusoidal_adds_table_and_handles_odd_width():
    enc = SinusoidalPositionalEncoding(d_model=5, max_len=8)
    x = torch.zeros(2, 3, 5)
    torch.testing.assert_close(enc(x), enc.pe[:3].expand(2, 3, 5))


def test_learnable_is_trained_parameter():
    enc = LearnablePositionalEncoding(d_model=4, max_len=6)
    assert enc.pe.shape == (6, 4) and enc.pe.requires_grad
    enc(torch.zeros(1, 6, 4)).sum().backward()
    assert enc.pe.grad is not None


@pytest.mark.parametrize("pos_mode", ["learnable"])  # sinusoidal rows past it are computed
def test_sequence_longer_than_table_raises(pos_mode):
    enc = build_positional(pos_mode, d_model=4, max_len=8)
    with pytest.raises(ValueError, match=r"length 9 exceeds .*max_len=8.*raise max_len"):
        enc(torch.zeros(1, 9, 4))


def test_build_positional_none_and_unknown():
    none = build_positional("none", 4, 8)
    assert isinstance(none, NoPositionalEncoding) and not none.in_attention
    x = torch.randn(1, 3, 4)
    assert none(x) is x
    with pytest.raises(ValueError, match=r"pos_mode='foo' is not one of \['sinusoidal'"):
        build_positional("foo", 4, 8)


def test_layernorm_worked_example():
    # The convention the pre-LN blocks rely on: zero mean, unit (biased) variance.
    ln = nn.LayerNorm(4, elementwise_affine=False)
    out = ln(torch.tensor([1.0, 2.0, 3.0, 4.0]))
    expected = torch.tensor([-1.342, -0.447, 0.447, 1.342])
    torch.testing.assert_close(out, expected, atol=1e-3, rtol=0)


@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_causal_fast_path_kept_unless_a_score_bias(monkeypatch, pos_mode):
    # Without padding, a causal backbone asks SDPA for is_causal (flash-eligible) and no
    # mask; only a score bias (alibi, relative) needs a float mask instead.
    calls = []
    sdpa = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False):
        calls.append((attn_mask, is_causal))
        return sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    model = TransformerBackbone(d_model=8, n_layers=2, n_heads=2, pos_mode=pos_mode, causal=True)
    model(torch.randn(2, 5, 8))
    assert len(calls) == 2
    for mask, is_causal in calls:
        if pos_mode in ("alibi", "relative"):
            assert not is_causal and mask.dtype == torch.float32 and mask.shape == (1, 2, 5, 5)
        else:
            assert is_causal and mask is None
