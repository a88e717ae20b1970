"""Encoder-decoder models: shapes, masking, greedy decoding, and a copy task they must learn."""

import pytest
import torch
import torch.nn.functional as F

from lit_seq.models import (
    POS_MODES,
    SEQ2SEQ,
    TransformerSeq2Seq,
    build_positional,
    build_seq2seq,
    count_parameters,
)
from lit_seq.models.attention import MultiHeadAttention
from lit_seq.models.seq2seq import _greedy_loop
from tests.helpers import backbone_options

PAD, BOS, EOS, V = 0, 1, 2, 8


def make_seq2seq(arch: str, *, share_embeddings: bool = True, **overrides):
    chosen = dict(
        d_model=16,
        n_layers=1,
        n_heads=2,
        d_ff=32,
        dropout=0.0,
    )
    options = backbone_options(**(chosen | overrides))
    model = build_seq2seq(
        arch, options, vocab_size=V, max_len=16, share_embeddings=share_embeddings
    )
    return model.eval()


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


@pytest.mark.parametrize("method", ["greedy_decode", "greedy_decode_uncached"])
def test_greedy_decode_pads_after_each_sequences_eos(monkeypatch, method):
    # Script the logits: sequence 0 ends after 1 token, sequence 1 after 3.
    model = make_seq2seq("transformer")
    eos_at = torch.tensor([1, 3])

    def scripted_logits(step):  # step = tokens generated so far + 1
        return F.one_hot(torch.where(eos_at == step, EOS, 4), V).float()  # (B, V)

    if method == "greedy_decode":  # the cached path feeds one token per step

        def scripted_step(tokens, caches):
            assert tokens.shape == (2, 1)
            caches[0].self_kv.length += 1  # what the real step does
            return scripted_logits(caches[0].self_kv.length)

        monkeypatch.setattr(model, "decode_step", scripted_step)
    else:

        def scripted_decode(ys, memory, src_pad, positions=None):
            return scripted_logits(ys.shape[1])[:, None, :].expand(-1, ys.shape[1], -1)

        monkeypatch.setattr(model, "decode", scripted_decode)
    out = getattr(model, method)(src_batch(), BOS, EOS, max_new_tokens=6)
    assert out.tolist() == [[EOS, PAD, PAD], [4, 4, EOS]]


def random_decoder_case(pos_mode: str, residual: bool, share: bool):
    """An untrained 2-layer model (eval mode, fixed seed) and 6 sources, most padded."""
    torch.manual_seed(0)
    options = backbone_options(
        d_model=32,
        n_layers=2,
        n_heads=4,
        d_ff=64,
        dropout=0.1,  # eval mode: must not matter
        pos_mode=pos_mode,
        residual=residual,
    )
    model = build_seq2seq(
        "transformer", options, vocab_size=16, max_len=32, share_embeddings=share
    ).eval()
    # Untrained attention is nearly uniform: a no-residual decoder would then hardly
    # depend on its target tokens (logits move by ~1e-6), hiding a cache or position bug.
    # Sharper queries/keys (x5) make every case depend on them (by ~1 logit).
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, MultiHeadAttention):
                module.q_proj.weight.mul_(5.0)
                module.k_proj.weight.mul_(5.0)
    g = torch.Generator().manual_seed(1)
    src = torch.randint(3, 16, (6, 12), generator=g)
    lengths = torch.tensor([12, 9, 5, 1, 7, 3])
    return model, src.masked_fill(torch.arange(12) >= lengths[:, None], PAD)


CACHE_CASES = [
    (pos_mode, residual, share)
    for pos_mode in POS_MODES
    for residual in (True, False)
    for share in (True, False)
]


@pytest.mark.parametrize(("pos_mode", "residual", "share"), CACHE_CASES)
def test_cached_greedy_decode_equals_full_prefix_decode(pos_mode, residual, share):
    model, src = random_decoder_case(pos_mode, residual, share)
    # EOS -1 is never emitted: all 30 steps run, the longest outputs the cache must serve.
    full = model.greedy_decode_uncached(src, BOS, -1, max_new_tokens=30)
    assert full.shape == (6, 30)
    assert torch.equal(model.greedy_decode(src, BOS, -1, max_new_tokens=30), full)
    # An EOS the model does emit (row 0's 11th token): rows stop at different steps.
    eos = int(full[0, 10])
    full = model.greedy_decode_uncached(src, BOS, eos, max_new_tokens=30)
    assert bool((full == eos).any(dim=1)[0])
    assert torch.equal(model.greedy_decode(src, BOS, eos, max_new_tokens=30), full)


@pytest.mark.parametrize(("pos_mode", "residual", "share"), CACHE_CASES)
def test_cached_decode_step_logits_match_full_pass(pos_mode, residual, share):
    # Random target tokens (padding included), not the model's own: every step's cache
    # holds varied keys/values, and a wrong position offset would show.
    model, src = random_decoder_case(pos_mode, residual, share)
    g = torch.Generator().manual_seed(2)
    tgt = torch.randint(0, 16, (6, 30), generator=g)
    tgt[:, 0] = BOS
    with torch.no_grad():
        memory, src_pad = model.encode(src)
        full = model.decode(tgt, memory, src_pad)  # (B, 30, V), causal: row t sees <= t
        caches = model.init_cache(memory, src_pad, capacity=30)
        for t in range(30):
            step = model.decode_step(tgt[:, t : t + 1], caches)  # (B, V)
            assert torch.allclose(step, full[:, t], atol=1e-5), f"step {t}"
            assert caches[0].self_kv.length == t + 1
        with pytest.raises(ValueError, match="KV cache holds 30 positions"):
            model.decode_step(tgt[:, :1], caches)


@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_positional_offset_indexes_the_table_at_t(pos_mode):
    enc = build_positional(pos_mode, d_model=8, max_len=6, n_heads=2).eval()
    x = torch.randn(2, 6, 8)
    positions = enc.positions(6)  # 0..5, or randomized's draw for the whole sequence
    full = enc(x, positions=positions)
    for t in range(6):
        step = enc(x[:, t : t + 1], positions=positions[t : t + 1])  # what a cached step does
        torch.testing.assert_close(step, full[:, t : t + 1])
        if pos_mode != "randomized":  # the same by offset
            torch.testing.assert_close(enc(x[:, t : t + 1], offset=t), enc(x)[:, t : t + 1])
    if pos_mode == "learnable":  # a trained table: position 6 is past its end
        with pytest.raises(ValueError, match="sequence length 7 exceeds .*max_len=6"):
            enc(x[:, :1], offset=6)
        with pytest.raises(ValueError, match="sequence length 7 exceeds .*max_len=6"):
            enc(x[:, :1], positions=torch.tensor([6]))


@pytest.mark.parametrize("arch", ["rnn", "lstm"])
def test_recurrent_greedy_decode_equals_full_prefix_decode(arch):
    # The recurrent decoder already carries its state one token per step.
    torch.manual_seed(0)
    model = make_seq2seq(arch, n_layers=2)
    src = src_batch()
    with torch.no_grad():
        state = model.encode(src)
        full = _greedy_loop(
            lambda ys: model.decode(ys, state)[0][:, -1],
            src,
            bos_id=BOS,
            eos_id=-1,
            pad_id=PAD,
            max_new_tokens=20,
        )
    assert torch.equal(model.greedy_decode(src, BOS, -1, max_new_tokens=20), full)


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
