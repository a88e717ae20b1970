"""Encoder-decoder models: shapes, masking, greedy decoding, and a copy task they must learn."""

import pytest
import torch
import torch.nn.functional as F

from lit_seq.models import SEQ2SEQ, TransformerSeq2Seq, build_seq2seq, count_parameters

PAD, BOS, EOS, V = 0, 1, 2, 8


def make_seq2seq(arch: str, **overrides):
    kwargs = dict(
        vocab_size=V,
        d_model=16,
        n_layers=1,
        n_heads=2,
        d_ff=32,
        dropout=0.0,
        pos_mode="sinusoidal",
        residual=True,
        max_len=16,
    )
    kwargs.update(overrides)
    return build_seq2seq(arch, **kwargs).eval()


def src_batch():
    return torch.tensor([[3, 4, 5, 6], [7, 3, PAD, PAD]])  # second source is padded


@pytest.mark.parametrize("arch", list(SEQ2SEQ))
def test_forward_shape(arch):
    tgt_in = torch.tensor([[BOS, 3, 4], [BOS, 7, 3]])
    assert make_seq2seq(arch)(src_batch(), tgt_in).shape == (2, 3, V)


@pytest.mark.parametrize("arch", list(SEQ2SEQ))
def test_extra_source_padding_changes_nothing(arch):
    torch.manual_seed(0)
    model = make_seq2seq(arch)
    src = src_batch()
    longer = torch.cat([src, torch.full((2, 3), PAD)], dim=1)
    tgt_in = torch.tensor([[BOS, 3, 4], [BOS, 7, 3]])
    torch.testing.assert_close(model(src, tgt_in), model(longer, tgt_in))


def test_transformer_decoder_is_causal():
    torch.manual_seed(0)
    model = make_seq2seq("transformer", n_layers=2)
    tgt_in = torch.tensor([[BOS, 3, 4, 5, 6], [BOS, 7, 3, 4, 5]])
    changed = tgt_in.clone()
    changed[:, 3:] = torch.tensor([[7, 7], [6, 6]])  # only positions >= 3 differ
    a, b = model(src_batch(), tgt_in), model(src_batch(), changed)
    torch.testing.assert_close(a[:, :3], b[:, :3])
    assert not torch.allclose(a[:, 3:], b[:, 3:])


@pytest.mark.parametrize("arch", list(SEQ2SEQ))
def test_greedy_decode_stops_at_eos(arch):
    model = make_seq2seq(arch)
    with torch.no_grad():
        model.output.bias[EOS] = 100.0  # every step prefers EOS
    out = model.greedy_decode(src_batch(), BOS, EOS, max_new_tokens=5)
    assert out.dtype == torch.long
    assert torch.equal(out, torch.full((2, 1), EOS))  # all finished at once: loop stops


@pytest.mark.parametrize("arch", list(SEQ2SEQ))
def test_greedy_decode_respects_max_new_tokens(arch):
    model = make_seq2seq(arch)
    with torch.no_grad():
        model.output.bias[5] = 100.0  # never emits EOS
    out = model.greedy_decode(src_batch(), BOS, EOS, max_new_tokens=4)
    assert torch.equal(out, torch.full((2, 4), 5))


def test_greedy_decode_pads_after_each_sequences_eos(monkeypatch):
    # Script the logits: sequence 0 ends after 1 token, sequence 1 after 3.
    model = make_seq2seq("transformer")
    eos_at = torch.tensor([1, 3])

    def scripted_decode(ys, memory, src_pad):
        step = ys.shape[1]  # tokens generated so far + 1
        nxt = torch.where(eos_at == step, EOS, 4)
        return F.one_hot(nxt, V).float()[:, None, :].expand(-1, step, -1)

    monkeypatch.setattr(model, "decode", scripted_decode)
    out = model.greedy_decode(src_batch(), BOS, EOS, max_new_tokens=6)
    assert out.tolist() == [[EOS, PAD, PAD], [4, 4, EOS]]


def test_shared_embeddings_tie_three_matrices():
    shared, separate = make_seq2seq("transformer"), make_seq2seq("lstm", share_embeddings=False)
    assert shared.output.weight is shared.src_embed.weight is shared.tgt_embed.weight
    assert separate.src_embed is not separate.tgt_embed
    assert separate.output.weight is not separate.tgt_embed.weight
    for arch in SEQ2SEQ:  # tying saves the target embedding and the output matrix
        diff = count_parameters(make_seq2seq(arch, share_embeddings=False)) - count_parameters(
            make_seq2seq(arch)
        )
        assert diff == 2 * V * 16


def test_build_seq2seq_errors():
    with pytest.raises(ValueError, match=r"arch='gru' is not one of \['transformer'"):
        make_seq2seq("gru")
    with pytest.raises(ValueError, match=r"d_model=16 .*n_heads=3"):
        make_seq2seq("transformer", n_heads=3)
    assert isinstance(make_seq2seq("transformer"), TransformerSeq2Seq)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("arch", list(SEQ2SEQ))
def test_learns_to_copy(arch):
    """32 fixed sequences (vocab 8, length 4): greedy decoding must reproduce them all."""
    torch.manual_seed(0)
    src = torch.randint(3, V, (32, 4))
    tgt_in = torch.cat([torch.full((32, 1), BOS), src], dim=1)  # [BOS, y1..y4]
    tgt_out = torch.cat([src, torch.full((32, 1), EOS)], dim=1)  # [y1..y4, EOS]
    model = make_seq2seq(arch, d_model=32, d_ff=64)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(1, 401):
        model.train()
        loss = F.cross_entropy(model(src, tgt_in).reshape(-1, V), tgt_out.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0:
            out = model.eval().greedy_decode(src, BOS, EOS, max_new_tokens=6)
            if out.shape[1] == 5 and torch.equal(out, tgt_out):
                break
    assert torch.equal(out, tgt_out), f"{arch} did not learn to copy (loss {loss.item():.3f})"
