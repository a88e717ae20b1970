"""A population's attention: one kernel call over every member's batch, equal to each
member's own attention (losses and gradients, float64) for every positional encoding that
can train stacked, causal or not, with padding and cross-attention (seq2seq)."""

import pytest
import torch
import torch.nn.functional as F

from lit_seq.data.seq2seq import Seq2SeqData
from lit_seq.models.stacking import MembersAsBatchAttention
from lit_seq.population.stacked import member_losses, stack_weights
from lit_seq.systems import Seq2Seq, SequenceClassification, StepBinary

K, B, T = 3, 4, 6
STACKABLE = ("sinusoidal", "learnable", "none", "rotary", "alibi", "relative")


def _members(make, seed: int = 0) -> list:
    torch.manual_seed(seed)
    members = [make().double() for _ in range(K)]
    for m in members:  # every weight its own, biases and tables included (not their inits)
        with torch.no_grad():
            for p in m.parameters():
                p.add_(0.1 * torch.randn_like(p))
    return members


def _batches(draw) -> list[dict]:
    return [draw(torch.Generator().manual_seed(k)) for k in range(K)]


def _assert_members_equal_solo(members: list, batches: list[dict]) -> None:
    stacked = stack_weights(members)
    for weights in stacked.values():
        weights.requires_grad_(True)
    batch = {key: torch.stack([b[key] for b in batches]) for key in batches[0]}
    losses = member_losses(members[0], stacked, batch)
    losses.sum().backward()
    for k, (member, own) in enumerate(zip(members, batches, strict=True)):
        solo = member.loss(own)
        solo.backward()
        torch.testing.assert_close(losses[k], solo, rtol=0, atol=1e-12)
        for name, param in member.named_parameters():
            torch.testing.assert_close(stacked[name].grad[k], param.grad, rtol=0, atol=1e-12)


def _attention_calls(monkeypatch) -> list[int]:
    """The batch size of every attention kernel call (vmap's loop over members would call
    it with each member's batch of B; the folded call with K * B)."""
    sizes = []
    sdpa = F.scaled_dot_product_attention

    def spy(q, *args, **kwargs):
        sizes.append(q.shape[0])
        return sdpa(q, *args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    return sizes


@pytest.mark.parametrize("pos_mode", STACKABLE)
def test_a_classifiers_members_attend_in_one_call_as_their_solo_runs(pos_mode, monkeypatch):
    def make():
        return SequenceClassification(
            in_features=2, out_features=3, max_len=T, d_model=8, n_layers=2, n_heads=2,
            dropout=0.0, pos_mode=pos_mode, readout="mean",
        )  # fmt: skip

    def draw(gen):
        return {"x": torch.randn(B, T, 2, generator=gen, dtype=torch.float64),
                "y": torch.randint(0, 3, (B,), generator=gen)}  # fmt: skip

    sizes = _attention_calls(monkeypatch)
    _assert_members_equal_solo(_members(make), _batches(draw))
    # the population: one call a layer, every member's batch in it; then K solo runs
    assert sizes == [K * B] * 2 + [B] * 2 * K


@pytest.mark.parametrize("pos_mode", STACKABLE)
def test_causal_members_attend_in_one_call_as_their_solo_runs(pos_mode, monkeypatch):
    def make():
        return StepBinary(
            in_features=1, max_len=T, d_model=8, n_layers=1, n_heads=2, dropout=0.0,
            pos_mode=pos_mode, causal=True,
        )  # fmt: skip

    def draw(gen):
        return {"x": torch.randn(B, T, 1, generator=gen, dtype=torch.float64),
                "y": torch.randint(0, 2, (B, T), generator=gen).double(),
                "mask": torch.ones(B, T, dtype=torch.bool)}  # fmt: skip

    sizes = _attention_calls(monkeypatch)
    _assert_members_equal_solo(_members(make), _batches(draw))
    assert sizes == [K * B] + [B] * K


@pytest.mark.parametrize("pos_mode", ["sinusoidal", "relative"])
def test_seq2seq_members_with_padding_and_cross_attention_equal_their_solo_runs(
    pos_mode, monkeypatch
):
    data = Seq2SeqData(op="reverse", vocab=5, min_length=2, max_length=T)

    def make():
        return Seq2Seq(
            in_features=data.in_features, max_len=T + 2, d_model=8, n_layers=1, n_heads=2,
            dropout=0.0, pos_mode=pos_mode, label_smoothing=0.0,
        )  # fmt: skip

    batches = _batches(lambda gen: data.draw(B, T, gen))
    assert any((b["src"] == 0).any() for b in batches)  # some padding to mask
    sizes = _attention_calls(monkeypatch)
    _assert_members_equal_solo(_members(make), batches)
    assert sizes == [K * B] * 3 + [B] * 3 * K  # encoder, decoder self and cross


def test_outside_a_population_it_is_plain_attention_with_its_gradients():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 5, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    bias = torch.randn(1, 2, 5, 5, generator=gen, dtype=torch.float64)
    for mask, causal in ((None, True), (bias, False)):
        ours = [t.clone().requires_grad_() for t in (q, k, v)]
        ref = [t.clone().requires_grad_() for t in (q, k, v)]
        ours_mask = None if mask is None else mask.clone().requires_grad_()
        ref_mask = None if mask is None else mask.clone().requires_grad_()
        y = MembersAsBatchAttention.apply(*ours, ours_mask, causal)
        y_ref = F.scaled_dot_product_attention(*ref, attn_mask=ref_mask, is_causal=causal)
        torch.testing.assert_close(y, y_ref, rtol=0, atol=1e-12)
        grad = torch.randn_like(y)
        y.backward(grad)
        y_ref.backward(grad)
        for a, b in zip([*ours, ours_mask], [*ref, ref_mask], strict=True):
            if a is not None:
                torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=1e-12)


def test_a_mask_one_for_all_members_folds_with_them():
    """A padding mask every member shares (its batch dimension, no member dimension) goes
    with each member's rows; a (T, S) one broadcasts as it is."""
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(K, B, 2, T, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    padded = torch.zeros(B, 1, 1, T, dtype=torch.bool)
    padded[1:, ..., -2:] = True  # the last two keys of rows 1.. are padding
    for mask in (~padded, torch.ones(T, T, dtype=torch.bool).tril()):

        def attend(a, b, c, mask=mask):
            return MembersAsBatchAttention.apply(a, b, c, mask, False)

        ours = torch.func.vmap(attend, in_dims=(0, 0, 0))
        expected = torch.stack(
            [F.scaled_dot_product_attention(q[i], k[i], v[i], attn_mask=mask) for i in range(K)]
        )
        torch.testing.assert_close(ours(q, k, v), expected, rtol=0, atol=1e-12)
