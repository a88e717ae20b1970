"""Positional encodings that act inside attention (rotary, alibi, relative) and randomized ones.

Property tests (relative scores, shift invariance, the papers' worked numbers), the
SDPA fast path against the explicit-softmax path for every mode under padding and causal
masks, initial weights that do not depend on ``max_len``, and (integration) two training
steps of every mode on every shipped transformer config, and a tiny fit of every mode
through the command line on echo and seq2seq.
"""

import math

import pytest
import torch

from lit_seq.fit import check_config
from lit_seq.models import (
    POS_MODES,
    AttentionPositions,
    LearnablePositionalEncoding,
    MultiHeadAttention,
    TransformerBackbone,
    TransformerSeq2Seq,
    alibi_slopes,
    build_positional,
    relative_bucket,
)
from lit_seq.models.positional import LEARNABLE_INIT_STD
from lit_seq.models.randomized import EVAL_SEED
from lit_seq.systems import StepBinary
from tests.helpers import CONFIGS, tiny_fit

IN_ATTENTION = ("rotary", "alibi", "relative")

# -- rotary ------------------------------------------------------------------------------


def test_rotary_worked_example():
    # dh = 2, theta_0 = 1: position 1 turns (1, 0) into (cos 1, sin 1); position 0 keeps it.
    rope = build_positional("rotary", d_model=2, max_len=8, n_heads=1)
    x = torch.tensor([1.0, 0.0]).expand(1, 1, 2, 2)  # (B, H, L, dh)
    out = rope.rotate(x, torch.tensor([0, 1]))
    torch.testing.assert_close(out[0, 0, 0], torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(out[0, 0, 1], torch.tensor([math.cos(1), math.sin(1)]))


def test_rotary_frequencies_use_base_10000_per_head():
    rope = build_positional("rotary", d_model=16, max_len=8, n_heads=2)  # dh = 8
    expected = torch.tensor([10000.0 ** (-i / 8) for i in (0, 2, 4, 6)])
    torch.testing.assert_close(rope.inv_freq, expected)


def test_rotary_scores_depend_only_on_the_offset():
    torch.manual_seed(0)
    rope = build_positional("rotary", d_model=32, max_len=8, n_heads=4)
    q, k = torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 8)
    pos = torch.arange(7)

    def scores(shift: int) -> torch.Tensor:
        return rope.rotate(q, pos + shift) @ rope.rotate(k, pos + shift).transpose(-2, -1)

    for shift in (1, 13, 250):  # any offset, none needs a table
        torch.testing.assert_close(scores(shift), scores(0), atol=1e-4, rtol=1e-4)
    # control: the scores do depend on the offset itself (rotating only q changes them)
    assert not torch.allclose(
        rope.rotate(q, pos + 3) @ k.transpose(-2, -1), q @ k.transpose(-2, -1)
    )
    # a rotation keeps norms
    torch.testing.assert_close(rope.rotate(q, pos).norm(dim=-1), q.norm(dim=-1))


def test_rotary_offset_positions_match_the_full_sequence():
    # what a cached decoder does: rotate the newest position alone, at its offset
    rope = build_positional("rotary", d_model=8, max_len=8, n_heads=2)
    x = torch.randn(1, 2, 6, 4)
    full = rope.rotate(x, torch.arange(6))
    for t in range(6):
        torch.testing.assert_close(
            rope.rotate(x[:, :, t : t + 1], torch.tensor([t])), full[:, :, t : t + 1]
        )


def test_rotary_needs_an_even_head_width():
    with pytest.raises(
        ValueError, match=r"rotary.*even head width.*d_model=12 and n_heads=4.*\[1, 2, 3, 6\]"
    ):
        build_positional("rotary", d_model=12, max_len=8, n_heads=4)


# -- alibi -------------------------------------------------------------------------------


def test_alibi_slopes_are_the_papers():
    # H a power of 2: m_h = 2^(-8h/H)
    assert alibi_slopes(4) == [1 / 4, 1 / 16, 1 / 64, 1 / 256]
    assert alibi_slopes(8) == [1 / 2**h for h in range(1, 9)]
    assert alibi_slopes(2) == [1 / 16, 1 / 256]
    assert alibi_slopes(1) == [1 / 256]
    # other H: the 4 of H=4, then every other one of H=8 (1/2, 1/8, 1/32, 1/128)
    assert alibi_slopes(6) == [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]
    assert alibi_slopes(3) == [1 / 16, 1 / 256, 1 / 4]


def test_causal_alibi_bias_is_minus_slope_times_distance():
    alibi = build_positional("alibi", d_model=8, max_len=8, n_heads=4, causal=True)
    pos = torch.arange(5)
    bias = alibi.score_bias(pos, pos)  # (H, T, S)
    distance = (pos[:, None] - pos[None, :]).abs().float()
    for h, m in enumerate([1 / 4, 1 / 16, 1 / 64, 1 / 256]):
        torch.testing.assert_close(bias[h], -m * distance)
    # worked example: head 1, query 3 over keys 0..3
    torch.testing.assert_close(bias[0, 3, :4], torch.tensor([-3 / 4, -2 / 4, -1 / 4, 0.0]))


def test_bidirectional_alibi_tells_left_from_right():
    # head h: its own slope on the left, its mirror head's on the right (H=2: 1/16, 1/256)
    alibi = build_positional("alibi", d_model=8, max_len=8, n_heads=2, causal=False)
    pos = torch.arange(5)
    bias = alibi.score_bias(pos, pos)
    torch.testing.assert_close(bias[0, 2], torch.tensor([-2 / 16, -1 / 16, 0, -1 / 256, -2 / 256]))
    torch.testing.assert_close(bias[1, 2], torch.tensor([-2 / 256, -1 / 256, 0, -1 / 16, -2 / 16]))
    # |bias| is a slope times |i - j| on each side, and the two heads mirror each other
    assert not torch.equal(bias[0], bias[0].T)
    torch.testing.assert_close(bias[0], bias[1].T)


@pytest.mark.parametrize("pos_mode", ["alibi", "relative"])
@pytest.mark.parametrize("causal", [False, True])
def test_score_bias_is_shift_invariant(pos_mode, causal):
    torch.manual_seed(0)
    enc = build_positional(pos_mode, d_model=8, max_len=8, n_heads=4, causal=causal)
    q_pos, k_pos = torch.arange(6), torch.arange(9)
    base = enc.score_bias(q_pos, k_pos)
    assert base.shape == (4, 6, 9)
    for shift in (1, 7, 300):  # bias(i, j) == bias(i + s, j + s), past any max_len
        torch.testing.assert_close(enc.score_bias(q_pos + shift, k_pos + shift), base)


# -- relative (T5 buckets) ---------------------------------------------------------------


def t5_bucket(offset: int, bidirectional: bool, num_buckets: int = 32, max_distance: int = 128):
    """T5's formula, in plain Python floats: the reference the tensor version must match."""
    bucket = 0
    if bidirectional:
        num_buckets //= 2
        bucket += num_buckets if offset > 0 else 0
        distance = abs(offset)
    else:
        distance = max(-offset, 0)
    max_exact = num_buckets // 2
    if distance < max_exact:
        return bucket + distance
    large = max_exact + int(
        math.log(distance / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    )
    return bucket + min(large, num_buckets - 1)


def test_relative_buckets_worked_numbers():
    offsets = torch.tensor([-1000, -100, -20, -8, -3, 0, 3, 5, 20, 1000])  # j - i
    both = relative_bucket(offsets, bidirectional=True).tolist()
    assert both == [15, 15, 10, 8, 3, 0, 19, 21, 26, 31]
    causal = relative_bucket(offsets, bidirectional=False).tolist()
    assert causal == [31, 30, 17, 8, 3, 0, 0, 0, 0, 0]
    wide = torch.arange(-300, 301)
    for bidirectional in (True, False):
        expected = [t5_bucket(int(o), bidirectional) for o in wide]
        assert relative_bucket(wide, bidirectional=bidirectional).tolist() == expected


def test_relative_bias_reads_the_learned_table():
    enc = build_positional("relative", d_model=16, max_len=8, n_heads=2, causal=False)
    assert enc.table.weight.shape == (32, 2) and enc.table.weight.requires_grad
    pos = torch.arange(4)
    bias = enc.score_bias(pos, pos)
    # query 1, key 3: offset +2 -> bucket 16 + 2 = 18
    torch.testing.assert_close(bias[:, 1, 3], enc.table.weight[18])
    bias.sum().backward()
    assert enc.table.weight.grad is not None


# -- randomized --------------------------------------------------------------------------


def test_randomized_training_positions_are_a_sorted_subset():
    enc = build_positional("randomized", d_model=8, max_len=40).train()
    torch.manual_seed(0)
    draws = [enc.positions(10) for _ in range(20)]
    for p in draws:
        assert p.shape == (10,) and p.dtype == torch.long
        assert bool((p[1:] > p[:-1]).all())  # sorted, strictly increasing
        assert int(p.min()) >= 0 and int(p.max()) < 40
    assert any(int(p.max()) > 9 for p in draws)  # spread over [0, 40), not 0..9
    assert len({tuple(p.tolist()) for p in draws}) > 1  # a fresh draw per forward
    torch.manual_seed(0)
    assert all(torch.equal(enc.positions(10), p) for p in draws)  # same seed, same draws
    torch.manual_seed(1)
    assert not torch.equal(enc.positions(10), draws[0])


def test_randomized_evaluation_is_deterministic_and_leaves_the_global_rng():
    enc = build_positional("randomized", d_model=8, max_len=40).eval()
    state = torch.get_rng_state()
    first = enc.positions(10)
    assert torch.equal(enc.positions(10), first)
    assert torch.equal(torch.get_rng_state(), state)
    g = torch.Generator().manual_seed(EVAL_SEED)
    assert torch.equal(first, torch.randperm(40, generator=g)[:10].sort().values)
    assert bool((first[1:] > first[:-1]).all())
    # it adds the sinusoidal rows at those positions
    x = torch.randn(2, 10, 8)
    torch.testing.assert_close(enc(x), x + enc.table.pe[first])


def test_randomized_range_and_offset_errors():
    enc = build_positional("randomized", d_model=8, max_len=12)
    assert torch.equal(enc.positions(12).sort().values, torch.arange(12))  # T = L: all of them
    with pytest.raises(ValueError, match=r"length 13 exceeds .*max_len=12.*raise max_len"):
        enc.positions(13)
    with pytest.raises(ValueError, match="pass positions="):
        enc(torch.zeros(1, 1, 8), offset=3)


# -- every mode through attention ----------------------------------------------------------


def explicit_attention(mha, x, positions, allowed):
    """softmax(q k^T / sqrt(dh) + bias) v by hand: the reference for both paths."""
    q = mha._split_heads(mha.q_proj(x))
    k, v = mha._split_heads(mha.k_proj(x)), mha._split_heads(mha.v_proj(x))
    bias = 0.0
    if positions is not None:
        q = positions.encoding.rotate(q, positions.q_pos)
        k = positions.encoding.rotate(k, positions.k_pos)
        bias = 0.0 if positions.bias is None else positions.bias
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + bias
    weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
    return mha.out_proj(mha._merge_heads(weights @ v)), weights


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_sdpa_matches_explicit_weights_for_every_mode(pos_mode, causal):
    torch.manual_seed(0)
    B, T, d, H = 2, 6, 16, 4
    mha = MultiHeadAttention(d, H).eval()
    enc = build_positional(pos_mode, d, max_len=16, n_heads=H, causal=causal).eval()
    x = enc(torch.randn(B, T, d))  # the input-only encodings act here
    positions = AttentionPositions.of(enc, torch.arange(T))
    assert (positions is not None) == (pos_mode in IN_ATTENTION)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, -2:] = True
    allowed = ~pad[:, None, None, :]
    if causal:
        allowed = allowed & torch.ones(T, T, dtype=torch.bool).tril()
    kwargs = dict(key_padding_mask=pad, causal=causal, positions=positions)
    fast, none = mha(x, **kwargs)
    slow, w = mha(x, need_weights=True, **kwargs)
    ref, ref_w = explicit_attention(mha, x, positions, allowed)
    assert none is None
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=1e-4)
    assert torch.all(w[1, :, :, -2:] == 0)  # padding keys get nothing
    if causal:
        assert torch.all(w.triu(diagonal=1) == 0)  # nor does the future
        unpadded, _ = mha(x, causal=True, positions=positions)  # the is_causal / bias path
        ref, _ = explicit_attention(mha, x, positions, torch.ones(T, T, dtype=torch.bool).tril())
        torch.testing.assert_close(unpadded, ref, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("pos_mode", IN_ATTENTION)
def test_positions_inside_attention_change_the_output(pos_mode):
    # control for the equality above: the positions are really used
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4).eval()
    enc = build_positional(pos_mode, 16, max_len=16, n_heads=4)
    with torch.no_grad():  # a visible bias for the relative table
        if pos_mode == "relative":
            enc.table.weight.normal_(std=2.0)
    x = torch.randn(1, 6, 16)
    with_pos, _ = mha(x, positions=AttentionPositions.of(enc, torch.arange(6)))
    assert not torch.allclose(with_pos, mha(x)[0], atol=1e-3)


# -- initial weights do not depend on max_len (issue 11) -----------------------------------


def shared_state_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        rows = min(a[name].shape[0], b[name].shape[0]) if a[name].dim() else None
        left, right = (a[name], b[name]) if rows is None else (a[name][:rows], b[name][:rows])
        assert torch.equal(left, right), name


@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_backbone_init_does_not_depend_on_max_len(pos_mode):
    states = []
    for max_len in (20, 80):
        torch.manual_seed(0)
        model = TransformerBackbone(d_model=16, n_heads=4, pos_mode=pos_mode, max_len=max_len)
        states.append(model.state_dict())
    shared_state_equal(*states)  # the learnable table's first 20 rows included
    if pos_mode == "learnable":
        assert states[1]["pos.pe"].shape == (80, 16)


@pytest.mark.parametrize("pos_mode", POS_MODES)
def test_seq2seq_init_does_not_depend_on_max_len(pos_mode):
    states = []
    for max_len in (20, 80):
        torch.manual_seed(0)
        model = TransformerSeq2Seq(
            vocab_size=12, d_model=16, n_heads=4, pos_mode=pos_mode, max_len=max_len
        )
        states.append(model.state_dict())
    shared_state_equal(*states)


def test_system_init_does_not_depend_on_max_len():
    states = []
    for max_len in (20, 80):
        torch.manual_seed(0)
        states.append(StepBinary(max_len=max_len, pos_mode="learnable").state_dict())
    assert states[1]["net.backbone.pos.pe"].shape[0] == 80
    shared_state_equal(*states)


def test_learnable_table_starts_at_the_sinusoidal_scale():
    torch.manual_seed(0)
    table = LearnablePositionalEncoding(d_model=64, max_len=512).pe.detach()
    assert abs(table.std().item() - LEARNABLE_INIT_STD) < 0.01
    # rows of norm ~ sqrt(d/2), as a sinusoidal row exactly has
    sinusoidal = build_positional("sinusoidal", 64, 512).pe
    torch.testing.assert_close(sinusoidal.norm(dim=1), torch.full((512,), math.sqrt(32)))
    assert abs(table.norm(dim=1).mean().item() - math.sqrt(32)) < 0.2


# -- every mode trains on every task ----------------------------------------------------------

TRANSFORMER_CONFIGS = [p for p in CONFIGS if p.stem == "transformer"]
# the whole command line (Trainer, validation, every test set) for one task of each system kind
# that a mode's code paths differ on: causal per-step (echo) and the encoder-decoder (seq2seq)
FIT_CONFIGS = [p for p in TRANSFORMER_CONFIGS if p.parent.name in ("echo", "seq2seq")]


@pytest.mark.integration
@pytest.mark.parametrize("pos_mode", POS_MODES)
@pytest.mark.parametrize("config", TRANSFORMER_CONFIGS, ids=lambda p: p.parent.name)
def test_every_pos_mode_takes_finite_training_steps_on_every_task(config, pos_mode):
    """The system a fit would build (same parser and constructors), two optimizer steps on a
    small batch of its own task: finite loss, every parameter that gets a gradient moves."""
    cli = check_config(["--config", str(config), f"--model.init_args.pos_mode={pos_mode}"])
    system, data = cli.model, cli.datamodule
    batch = data.draw(8, data.train_length, torch.Generator().manual_seed(0), split="train")
    optimizer, _ = system.build_optimizer(total_steps=2)
    before = [p.detach().clone() for p in system.parameters()]
    for _ in range(2):
        loss = system.loss(batch)
        assert torch.isfinite(loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    moved = [not torch.equal(a, b) for a, b in zip(before, system.parameters(), strict=True)]
    assert sum(moved) > len(moved) // 2


@pytest.mark.integration
@pytest.mark.parametrize("pos_mode", POS_MODES)
@pytest.mark.parametrize("config", FIT_CONFIGS, ids=lambda p: p.parent.name)
def test_every_pos_mode_fits_through_the_command_line(config, pos_mode, tmp_path):
    record = tiny_fit(
        config,
        tmp_path / "run",
        f"--model.init_args.pos_mode={pos_mode}",
        "--trainer.max_steps=2",
        "--trainer.val_check_interval=2",
        "--trainer.limit_val_batches=1",
        "--trainer.limit_test_batches=1",
    )
    assert record.steps == 2
    assert all(math.isfinite(v) for v in record.metrics.values())
