"""Readouts, the sequence classifier, the per-step head and the registries' helpers."""

import pytest
import torch

from lit_seq.models import (
    BACKBONES,
    MEMORY_RNNS,
    READOUTS,
    PerStepHead,
    Readout,
    SequenceClassifier,
    build_backbone,
    count_parameters,
)
from tests.helpers import backbone_options

B, T, D, F_IN, C = 2, 5, 8, 3, 4


def make_backbone(arch: str, *, causal: bool = False, **overrides):
    chosen = dict(
        d_model=D,
        n_layers=1,
        n_heads=2,
        d_ff=16,
        dropout=0.0,
    )
    options = backbone_options(**(chosen | overrides))
    return build_backbone(arch, options, causal=causal, max_len=16)


def padded_batch():
    x = torch.randn(B, T, F_IN)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, -2:] = True  # second sequence: 3 real steps, 2 padded
    return x, pad


def test_readout_worked_example():
    h = torch.tensor([[[1.0], [3.0], [5.0]]])  # (1, 3, 1), last step padded
    pad = torch.tensor([[False, False, True]])
    assert Readout("mean", 1).pool(h, pad).item() == 2.0
    assert Readout("last", 1).pool(h, pad).item() == 3.0
    assert Readout("mean", 1).pool(h).item() == 3.0  # no mask: every step counts
    assert Readout("last", 1).pool(h).item() == 5.0


def test_cls_prepare_prepends_token_and_unpadded_mask():
    readout = Readout("cls", D)
    x, pad = torch.randn(B, T, D), torch.zeros(B, T, dtype=torch.bool)
    pad[1, -1] = True
    x2, pad2 = readout.prepare(x, pad)
    assert x2.shape == (B, T + 1, D)
    torch.testing.assert_close(x2[:, 0], readout.cls_token[0].expand(B, D))
    torch.testing.assert_close(x2[:, 1:], x)
    assert not pad2[:, 0].any() and torch.equal(pad2[:, 1:], pad)


def test_cls_readout_reads_the_prepended_token():
    torch.manual_seed(0)
    clf = SequenceClassifier(make_backbone("transformer"), F_IN, C, D, readout="cls").eval()
    x, pad = padded_batch()
    h, mask = clf.readout.prepare(clf.embed(x), pad)
    out = clf.backbone(h, mask)  # (B, T + 1, D)
    torch.testing.assert_close(clf.readout.pool(out, mask), out[:, 0])
    torch.testing.assert_close(clf(x, pad), clf.head(out[:, 0]))
    before = clf(x, pad)
    with torch.no_grad():
        clf.readout.cls_token.copy_(torch.randn(1, 1, D))  # not a constant shift: LN removes it
    assert not torch.allclose(clf(x, pad), before)


@pytest.mark.parametrize("readout", ["mean", "last"])
@pytest.mark.parametrize(
    "arch, extra", [("transformer", {}), ("lstm", {}), ("rnn", {"bidirectional": True})]
)
def test_pooling_ignores_padded_inputs(arch, extra, readout):
    torch.manual_seed(0)
    clf = SequenceClassifier(make_backbone(arch, **extra), F_IN, C, D, readout=readout).eval()
    x, pad = padded_batch()
    x2 = x.clone()
    x2[pad] = torch.randn(int(pad.sum()), F_IN)  # change only the padded steps
    torch.testing.assert_close(clf(x, pad), clf(x2, pad))


def test_mean_readout_without_mask_sees_padding():
    # Guards the test above: the mask, not luck, is what hides the padded steps.
    torch.manual_seed(0)
    clf = SequenceClassifier(make_backbone("transformer"), F_IN, C, D).eval()
    x, pad = padded_batch()
    x2 = x.clone()
    x2[pad] = torch.randn(int(pad.sum()), F_IN)
    assert not torch.allclose(clf(x), clf(x2))


@pytest.mark.parametrize("readout", READOUTS)
@pytest.mark.parametrize("arch", list(BACKBONES))
def test_classifier_shapes(arch, readout):
    backbone = make_backbone(arch, bidirectional=arch in ("rnn", "lstm"))
    if readout == "cls" and arch in ("mamba", "linear_rnn", *MEMORY_RNNS):  # causal always
        with pytest.raises(ValueError, match="readout='cls' needs a backbone"):
            SequenceClassifier(backbone, F_IN, C, D, readout=readout)
        return
    clf = SequenceClassifier(backbone, F_IN, C, D, readout=readout)
    x, pad = padded_batch()
    assert clf(x, pad).shape == (B, C)
    assert clf(x).shape == (B, C)


@pytest.mark.parametrize(
    "arch, extra", [("transformer", {"causal": True}), ("lstm", {}), ("rnn", {"causal": True})]
)
def test_cls_on_a_backbone_blind_to_the_sequence_raises(arch, extra):
    with pytest.raises(ValueError, match=r"readout='cls'.*use readout='last' or 'mean'"):
        SequenceClassifier(make_backbone(arch, **extra), F_IN, C, D, readout="cls")


def test_unknown_readout_raises():
    with pytest.raises(
        ValueError, match=r"readout='max' is not one of \['mean', 'cls', 'last', 'empty'\]"
    ):
        SequenceClassifier(make_backbone("transformer"), F_IN, C, D, readout="max")


def test_classifier_attention_maps():
    clf = SequenceClassifier(make_backbone("transformer"), F_IN, C, D, readout="cls")
    x, pad = padded_batch()
    (w,) = clf.attention_maps(x, pad)
    assert w.shape == (B, 2, T + 1, T + 1)  # the [CLS] token is position 0
    with pytest.raises(TypeError, match="LSTMBackbone has no attention maps"):
        SequenceClassifier(make_backbone("lstm"), F_IN, C, D).attention_maps(x)


@pytest.mark.parametrize("arch", list(BACKBONES))
def test_per_step_head_shapes(arch):
    head = PerStepHead(make_backbone(arch, causal=True), F_IN, 2, D)
    x, pad = padded_batch()
    assert head(x).shape == (B, T, 2)
    assert head(x, pad).shape == (B, T, 2)


def test_count_parameters_counts_trainable_only():
    model = PerStepHead(make_backbone("transformer"), F_IN, 2, D)
    assert count_parameters(model) == sum(p.numel() for p in model.parameters())
    model.embed.weight.requires_grad_(False)
    assert count_parameters(model) == sum(p.numel() for p in model.parameters()) - D * F_IN
