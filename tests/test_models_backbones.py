"""Transformer blocks and the backbones: equivalence to torch, causality, ablation flags."""

import pytest
import torch
from torch import nn

from lit_seq.models import (
    BACKBONES,
    POS_MODES,
    DecoderBlock,
    EncoderBlock,
    RecurrentBackbone,
    TransformerBackbone,
    build_backbone,
    causal_mask,
)
from tests.helpers import backbone_options

B, T, D, H = 2, 6, 8, 2


def copy_into_torch_mha(ours, ref: nn.MultiheadAttention) -> None:
    """Load our separate q/k/v/out projections into torch's packed in_proj layout."""
    with torch.no_grad():
        projs = [ours.q_proj, ours.k_proj, ours.v_proj]
        ref.in_proj_weight.copy_(torch.cat([p.weight for p in projs]))
        ref.in_proj_bias.copy_(torch.cat([p.bias for p in projs]))
        ref.out_proj.load_state_dict(ours.out_proj.state_dict())


def make_backbone(arch: str, *, causal: bool = False, max_len: int = 32, **overrides) -> nn.Module:
    chosen = dict(
        d_model=D,
        n_layers=2,
        n_heads=H,
        d_ff=16,
        dropout=0.0,
    )
    options = backbone_options(**(chosen | overrides))
    return build_backbone(arch, options, causal=causal, max_len=max_len).eval()


def copy_linear(src: nn.Linear, dst: nn.Linear) -> None:
    dst.load_state_dict(src.state_dict())


def test_encoder_block_matches_torch_norm_first_layer():
    torch.manual_seed(0)
    ours = EncoderBlock(D, H, 16, dropout=0.0).eval()
    ref = nn.TransformerEncoderLayer(
        D, H, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    ).eval()
    copy_into_torch_mha(ours.attn, ref.self_attn)
    copy_linear(ours.ffn.fc1, ref.linear1)
    copy_linear(ours.ffn.fc2, ref.linear2)
    ref.norm1.load_state_dict(ours.ln1.state_dict())
    ref.norm2.load_state_dict(ours.ln2.state_dict())
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, -2:] = True
    for kpm in [None, pad]:
        out, _ = ours(x, key_padding_mask=kpm)
        ref_out = ref(x, src_key_padding_mask=kpm)
        real = ~pad  # compare real positions (torch's fast path may zero padded ones)
        torch.testing.assert_close(out[real], ref_out[real], atol=1e-5, rtol=1e-4)
    out, _ = ours(x, causal=True)
    torch.testing.assert_close(out, ref(x, src_mask=~causal_mask(T)), atol=1e-5, rtol=1e-4)


def test_decoder_block_matches_torch_norm_first_layer():
    torch.manual_seed(0)
    ours = DecoderBlock(D, H, 16, dropout=0.0).eval()
    ref = nn.TransformerDecoderLayer(
        D, H, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
    ).eval()
    copy_into_torch_mha(ours.self_attn, ref.self_attn)
    copy_into_torch_mha(ours.cross_attn, ref.multihead_attn)
    copy_linear(ours.ffn.fc1, ref.linear1)
    copy_linear(ours.ffn.fc2, ref.linear2)
    for ln, norm in [(ours.ln1, ref.norm1), (ours.ln2, ref.norm2), (ours.ln3, ref.norm3)]:
        norm.load_state_dict(ln.state_dict())
    x, memory = torch.randn(B, T, D), torch.randn(B, 4, D)
    mpm = torch.tensor([[False] * 4, [False, False, True, True]])
    out = ours(x, memory, memory_padding_mask=mpm)
    ref_out = ref(x, memory, tgt_mask=~causal_mask(T), memory_key_padding_mask=mpm)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)


def test_residual_false_removes_the_skip():
    torch.manual_seed(0)
    x = torch.randn(B, T, D)
    blocks = {r: EncoderBlock(D, H, 16, dropout=0.0, residual=r).eval() for r in (True, False)}
    for block in blocks.values():  # sub-layers now output exactly zero
        with torch.no_grad():
            for layer in [block.attn.out_proj, block.ffn.fc2]:
                layer.weight.zero_()
                layer.bias.zero_()
    torch.testing.assert_close(blocks[True](x)[0], x)  # only the skip is left
    assert torch.all(blocks[False](x)[0] == 0)  # no skip, nothing left


def test_residual_false_is_plain_composition():
    torch.manual_seed(0)
    block = EncoderBlock(D, H, 16, dropout=0.0, residual=False).eval()
    x = torch.randn(B, T, D)
    a, _ = block.attn(block.ln1(x))
    torch.testing.assert_close(block(x)[0], block.ffn(block.ln2(a)))


def test_decoder_residual_false_removes_the_skip():
    block = DecoderBlock(D, H, 16, dropout=0.0, residual=False).eval()
    with torch.no_grad():
        for layer in [block.self_attn.out_proj, block.cross_attn.out_proj, block.ffn.fc2]:
            layer.weight.zero_()
            layer.bias.zero_()
    assert torch.all(block(torch.randn(B, T, D), torch.randn(B, 3, D)) == 0)


@pytest.mark.parametrize("arch", list(BACKBONES))
def test_backbone_shapes_with_and_without_padding(arch):
    model = make_backbone(arch)
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, -3:] = True
    assert model(x).shape == (B, T, D)
    assert model(x, pad).shape == (B, T, D)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_transformer_every_pos_mode_shapes_gradients_and_padding(pos_mode, causal):
    torch.manual_seed(0)
    model = make_backbone("transformer", pos_mode=pos_mode, causal=causal).train()
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, -3:] = True
    assert model(x).shape == (B, T, D)
    model(x, pad).sum().backward()
    assert all(p.grad is not None for p in model.parameters())  # tables and biases train
    if pos_mode != "randomized":  # (its positions are drawn for the padded length)
        # appending padding changes nothing at the real positions
        model.eval()
        longer = torch.cat([x, torch.randn(B, 3, D)], dim=1)
        longer_pad = torch.cat([pad, torch.ones(B, 3, dtype=torch.bool)], dim=1)
        real = ~pad
        torch.testing.assert_close(
            model(longer, longer_pad)[:, :T][real], model(x, pad)[real], atol=1e-5, rtol=1e-4
        )


def test_bidirectional_rnn_shape():
    model = make_backbone("lstm", bidirectional=True)
    assert model(torch.randn(B, T, D)).shape == (B, T, D)


CAUSALITY_CASES = [{"arch": a} for a in BACKBONES] + [
    {"arch": "transformer", "pos_mode": m} for m in POS_MODES if m != "sinusoidal"
]


@pytest.mark.parametrize("overrides", CAUSALITY_CASES, ids=lambda o: "-".join(o.values()))
def test_causal_backbone_ignores_the_future(overrides):
    torch.manual_seed(0)
    model = make_backbone(causal=True, **overrides)
    x = torch.randn(B, T, D)
    t = 2
    x2 = x.clone()
    x2[:, t + 1 :] = torch.randn(B, T - t - 1, D)  # change only positions > t
    y, y2 = model(x), model(x2)
    torch.testing.assert_close(y[:, : t + 1], y2[:, : t + 1])
    assert not torch.allclose(y[:, t + 1 :], y2[:, t + 1 :])


@pytest.mark.parametrize(
    "overrides",
    [{"arch": "transformer", "pos_mode": m} for m in POS_MODES]
    + [{"arch": "lstm", "bidirectional": True}],
    ids=lambda o: "-".join(map(str, o.values())),
)
def test_non_causal_backbone_sees_the_future(overrides):
    # Guards the causality test: a bidirectional model must fail it.
    torch.manual_seed(0)
    model = make_backbone(**overrides)
    x = torch.randn(B, T, D)
    x2 = x.clone()
    x2[:, -1] = torch.randn(B, D)  # (a constant shift would vanish in pre-LN attention)
    assert not torch.allclose(model(x)[:, 0], model(x2)[:, 0])


@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_attention_maps_shapes_causality_and_padding(pos_mode):
    model = make_backbone("transformer", causal=True, pos_mode=pos_mode)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, -2:] = True
    maps = model.attention_maps(torch.randn(B, T, D), pad)
    assert len(maps) == 2
    for w in maps:
        assert w.shape == (B, H, T, T) and not w.requires_grad
        torch.testing.assert_close(w.sum(-1), torch.ones(B, H, T))
        assert torch.all(w.triu(diagonal=1) == 0)  # no weight on future keys
        assert torch.all(w[1, :, :, -2:] == 0)  # no weight on padding keys


def test_transformer_defaults():
    model = TransformerBackbone(d_model=16, n_heads=2, pos_mode="learnable", causal=True)
    assert model.causal and len(model.blocks) == 2
    assert model.blocks[0].ffn.fc1.out_features == 64  # d_ff defaults to 4 * d_model


def test_rnn_cell_and_bidirectional_causal_errors():
    with pytest.raises(ValueError, match=r"cell='gru' is not one of \['rnn', 'lstm'\]"):
        RecurrentBackbone(cell="gru")
    with pytest.raises(ValueError, match="bidirectional=True reads the future"):
        RecurrentBackbone(bidirectional=True, causal=True)


def test_rnn_is_tanh_rnn_and_lstm():
    assert isinstance(make_backbone("rnn").rnn, nn.RNN)
    assert make_backbone("rnn").rnn.nonlinearity == "tanh"
    assert isinstance(make_backbone("lstm").rnn, nn.LSTM)
    assert make_backbone("lstm", n_layers=1, dropout=0.5).rnn.dropout == 0.0  # single layer


def test_build_backbone_errors():
    with pytest.raises(
        ValueError, match=r"arch='gru' is not one of \['transformer', 'rnn', 'lstm', 'mamba', .*\]"
    ):
        make_backbone("gru")
    with pytest.raises(ValueError, match=r"d_model=8 .*n_heads=3"):
        make_backbone("transformer", n_heads=3)
    make_backbone("lstm", n_heads=3, pos_mode="bogus")  # unused by rnn/lstm: not validated
    with pytest.raises(ValueError, match="pos_mode='bogus'"):
        make_backbone("transformer", pos_mode="bogus")
