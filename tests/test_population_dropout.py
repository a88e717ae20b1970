"""Dropout that a population can run (``lit_seq.models.dropout``): each mask a function of
(seed, step, site, element), so a member computes its solo run's masks in the one vmapped
call; and the attention that drops its weights that way equals SDPA where nothing drops."""

import pytest
import torch
import torch.nn.functional as F

from lit_seq import fit
from lit_seq.ablate.packing import pack_key
from lit_seq.models.attention import MultiHeadAttention
from lit_seq.models.dropout import Dropout, dropout_stream, mix32
from lit_seq.population.stacked import member_losses, stack_weights
from lit_seq.population.train import fit_population
from lit_seq.systems import Seq2Seq, SequenceClassification
from tests.helpers import CONFIG_DIR
from tests.test_population import _args, _assert_equal_runs

B, T = 4, 6

# -- the mask -------------------------------------------------------------------------------


def test_mix32_is_wellons_lowbias32():
    # its C code on uint32 words (below, in Python): 0 -> 0, 1 -> 0x688990C0; a negative
    # int32 is the uint32 word 2**32 + it
    words = [0, 1, 2**31 - 1, -(2**31), -1, 123456789]
    hashed = [int(w) % 2**32 for w in mix32(torch.tensor(words, dtype=torch.int32))]
    assert hashed[:2] == [0, 0x688990C0]
    assert hashed == [lowbias32(w % 2**32) for w in words]


def lowbias32(x: int) -> int:
    x ^= x >> 16
    x = (x * 0x7FEB352D) % 2**32
    x ^= x >> 15
    x = (x * 0x846CA68B) % 2**32
    return x ^ (x >> 16)


def _masks(seed, step, n_sites: int = 2, shape=(200, 500), p: float = 0.25) -> list:
    ones = torch.ones(shape)
    with dropout_stream(seed, step):
        return [Dropout(p)(ones) == 0 for _ in range(n_sites)]


def test_a_mask_drops_p_of_its_elements_independently_of_every_other_mask():
    first, second = _masks(3, 10)
    other_step, other_seed = _masks(3, 11)[0], _masks(4, 10)[0]
    for mask in (first, second, other_step, other_seed):
        assert mask.float().mean().item() == pytest.approx(0.25, abs=0.005)  # 100,000 draws
    for other in (second, other_step, other_seed):  # both dropped: p * p, as independent
        assert (first & other).float().mean().item() == pytest.approx(0.0625, abs=0.004)
    # neighbours too: element i and i + 1 of one mask
    assert (first.flatten()[1:] & first.flatten()[:-1]).float().mean().item() == pytest.approx(
        0.0625, abs=0.004
    )


def test_a_mask_is_a_function_of_seed_and_step_whether_given_as_ints_or_tensors():
    again = _masks(torch.tensor(3), torch.tensor(10))
    for a, b in zip(_masks(3, 10), again, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(_masks(2**40 + 3, 10)[0], _masks(3, 10)[0])  # every seed bit counts


def test_a_forward_that_drops_nothing_computes_no_key():
    # the key is made at the first mask: a step without dropout runs none of its ops
    with torch.profiler.profile() as prof, dropout_stream(3, 10):
        pass  # a forward with no dropout in it
    assert not [e.name for e in prof.events() if e.name.startswith("aten::")]


def test_kept_elements_are_scaled_as_torchs_dropout_and_no_stream_is_torchs_dropout():
    x = torch.randn(50, 40, dtype=torch.float64)
    with dropout_stream(0, 0):
        y = Dropout(0.2)(x)
    kept = y != 0
    torch.testing.assert_close(y[kept], x[kept] / 0.8, rtol=1e-15, atol=0)
    torch.manual_seed(5)
    outside = Dropout(0.2)(x)
    torch.manual_seed(5)
    torch.testing.assert_close(outside, F.dropout(x, 0.2, True), rtol=0, atol=0)
    assert torch.equal(Dropout(0.2).eval()(x), x)


# -- the attention that drops its weights itself --------------------------------------------


@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_computing_its_weights_equals_sdpa_where_nothing_drops(padding, causal):
    """The path a dropout stream takes (weights computed, then dropped) at p = 0 against the
    SDPA path, float64: with and without a padding mask, causal or not."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.0).double()
    x = torch.randn(B, T, 8, dtype=torch.float64)
    mask = None
    if padding:
        mask = torch.zeros(B, T, dtype=torch.bool)
        mask[1:, -2:] = True
    fast, _ = mha(x, key_padding_mask=mask, causal=causal)
    explicit, _ = mha(x, key_padding_mask=mask, causal=causal, need_weights=True)
    torch.testing.assert_close(explicit, fast, rtol=0, atol=1e-14)
    mha.dropout = 0.5  # in training under a stream: the computed weights, dropped
    with dropout_stream(1, 2):
        dropped, _ = mha.train()(x, key_padding_mask=mask, causal=causal)
    assert not torch.allclose(dropped, fast)


# -- members -----------------------------------------------------------------------------


def _classifier():
    return SequenceClassification(
        in_features=2, out_features=3, max_len=T, d_model=8, n_layers=2, n_heads=2,
        dropout=0.3, readout="mean",
    ).double()  # fmt: skip


def _seq2seq():
    return Seq2Seq(
        in_features=6, max_len=T + 2, d_model=8, n_layers=1, n_heads=2, dropout=0.3,
        label_smoothing=0.0,
    ).double()  # fmt: skip


def _classifier_batch(gen):
    return {
        "x": torch.randn(B, T, 2, generator=gen, dtype=torch.float64),
        "y": torch.randint(0, 3, (B,), generator=gen),
    }


def _seq2seq_batch(gen):
    src = torch.randint(1, 6, (B, T), generator=gen)
    src[1:, -2:] = 0  # padding
    return {"src": src, "tgt": torch.randint(1, 6, (B, T + 1), generator=gen)}


def _population(make, draw, seeds: list[int], steps: list[int]):
    """Each seed's member (its weights and batch drawn from it), their (K,) losses stacked
    with their (seed, step) dropout, and the members."""
    members = []
    for seed in seeds:
        torch.manual_seed(seed)
        members.append(make())
    batches = [draw(torch.Generator().manual_seed(seed)) for seed in seeds]
    stacked = stack_weights(members)
    for weights in stacked.values():
        weights.requires_grad_(True)
    batch = {key: torch.stack([b[key] for b in batches]) for key in batches[0]}
    losses = member_losses(members[0], stacked, batch, torch.tensor(seeds), torch.tensor(steps))
    return members, batches, stacked, losses


@pytest.mark.parametrize(
    ("make", "draw"), [(_classifier, _classifier_batch), (_seq2seq, _seq2seq_batch)]
)
def test_a_member_with_dropout_computes_its_solo_runs_loss_and_gradients(make, draw):
    seeds, steps = [0, 7, 3], [5, 5, 12]
    members, batches, stacked, losses = _population(make, draw, seeds, steps)
    losses.sum().backward()
    for k, (member, batch) in enumerate(zip(members, batches, strict=True)):
        member.train()
        with dropout_stream(seeds[k], steps[k]):
            solo = member.loss(batch)
        solo.backward()
        torch.testing.assert_close(losses[k], solo, rtol=0, atol=1e-12)
        for name, param in member.named_parameters():
            torch.testing.assert_close(stacked[name].grad[k], param.grad, rtol=0, atol=1e-12)
        with dropout_stream(seeds[k], steps[k] + 1):  # another step: other masks
            assert member.loss(batch) != solo


def test_a_member_gives_the_same_numbers_in_any_population():
    _, _, _, alone = _population(_classifier, _classifier_batch, [7], [3])
    _, _, _, among = _population(_classifier, _classifier_batch, [1, 2, 7], [3, 3, 3])
    assert alone[0].item() == among[2].item()


def test_delétangs_transformer_configs_now_pack():
    cli = fit.check_config(["--config", str(CONFIG_DIR / "deletang/parity_check/transformer.yaml")])
    assert cli.model.hparams.dropout == 0.1 and pack_key(cli) != ""


@pytest.mark.integration
@pytest.mark.slow
def test_a_member_with_dropout_trains_exactly_as_its_solo_fit(tmp_path):
    # float64, dropout 0.1: both draw the masks of (seed, step), so equal, not just alike
    drop = ["--model.init_args.dropout=0.1", "--trainer.max_steps=10"]
    small = ["--data.init_args.n_val=32", "--data.init_args.n_test=32"]
    config = "echo/transformer.yaml"
    members = [_args(config, tmp_path / f"m{k}", k, *drop, *small) for k in range(2)]
    outcomes = fit_population(members)
    for k, outcome in enumerate(outcomes):
        solo = fit.cli_main(_args(config, tmp_path / f"s{k}", k, *drop, *small))
        _assert_equal_runs(outcome, solo, tmp_path / f"m{k}", tmp_path / f"s{k}")
