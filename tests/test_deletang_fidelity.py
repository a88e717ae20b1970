"""Delétang et al. 2023's networks as their code builds them (issue 56), each option against a
reference computation: haiku's initialisation (``init: haiku``), haiku's one-bias LSTM
(``single_bias``), their encoder's bias-free attention, ReLU FFN, dropout sites and sin|cos
positions counted from the end; their loss, which needs no option; the range evaluation up
to their 500 (``range_eval.max_length``); and the configs that set them, the only ones whose
digests move."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lit_seq.ablate.grid import config_digest, load_grid
from lit_seq.data import ReverseStringData
from lit_seq.fit import check_config
from lit_seq.fit.scoring import RangeEval
from lit_seq.models import MultiHeadAttention, RecurrentBackbone, SinusoidalPositionalEncoding
from lit_seq.models.dropout import Dropout, dropout_stream
from lit_seq.models.haiku_init import haiku_init, truncated_normal_
from lit_seq.models.stacked_recurrence import members_unrolled
from lit_seq.models.transformer import FeedForward
from lit_seq.models.unrolled import unrolled
from lit_seq.population.system import PopulationSystem
from lit_seq.systems import SYSTEMS, SequenceClassification, Transduction
from lit_seq.systems.length_score import score_length
from lit_seq.util.checks import BadInput
from tests.helpers import CONFIG_DIR, REPO

DELETANG = CONFIG_DIR / "deletang"
B, T, D, H = 2, 5, 8, 2
# the std of N(0, 1) cut at +-2 (haiku's TruncatedNormal does not rescale it)
PHI2 = math.exp(-2.0) / math.sqrt(2 * math.pi)  # the density at 2
CUT_STD = math.sqrt(1 - 4 * PHI2 / math.erf(2 / math.sqrt(2)))  # 0.8796


def lstm_transduction(**options) -> Transduction:
    faithful = dict(input_embedding=False, readout_relu=True, forget_bias=1.0, single_bias=True)
    faithful |= dict(n_layers=1, dropout=0.0)
    return Transduction(
        in_features=2, out_features=2, arch="lstm", d_model=D, **faithful, **options
    )


# -- haiku's initialisation --------------------------------------------------------------------


def test_haikus_cut_normal_has_its_std_and_bound_and_every_linear_gets_it_with_zero_bias():
    assert pytest.approx(0.87962566, abs=1e-7) == CUT_STD
    torch.manual_seed(0)
    layer = nn.Linear(400, 1000)  # 400,000 draws of std 1/20
    drawn = haiku_init(layer)
    w = layer.weight.detach().double()
    assert [id(p) for p in drawn] == [id(layer.weight), id(layer.bias)]
    assert w.abs().max() <= 2 / 20 and w.abs().max() > 0.099  # cut at 2 std, reached
    assert abs(float(w.mean())) < 4 * 0.044 / math.sqrt(w.numel())
    assert float(w.std()) == pytest.approx(CUT_STD / 20, rel=0.005)
    assert torch.equal(layer.bias, torch.zeros(1000))
    # the cut normal of std s is the standard one scaled: the bound is 2 s, not 2
    assert float(truncated_normal_(torch.empty(10_000), 3.0).abs().max()) <= 6.0


def test_haikus_lstm_is_one_linear_over_x_and_h_its_rnn_two_and_frozen_ones_stay():
    torch.manual_seed(0)
    rnn = RecurrentBackbone(d_model=256, cell="rnn", input_size=300)
    lstm = RecurrentBackbone(d_model=256, cell="lstm", input_size=300, forget_bias=1.0)
    frozen = RecurrentBackbone(
        d_model=256, cell="lstm", input_size=300, forget_bias=1.0, single_bias=True
    )
    for net in (rnn, lstm, frozen):
        haiku_init(net)
    # VanillaRNN: input_to_hidden fan-in 300, hidden_to_hidden 256, biases 0
    assert float(rnn.rnn.weight_ih_l0.std()) == pytest.approx(CUT_STD / math.sqrt(300), rel=0.01)
    assert float(rnn.rnn.weight_hh_l0.std()) == pytest.approx(CUT_STD / 16, rel=0.01)
    assert not rnn.rnn.bias_ih_l0.any() and not rnn.rnn.bias_hh_l0.any()
    # LSTM: one Linear(300 + 256 -> 4 x 256): both halves drawn with its fan-in
    for weight in (lstm.rnn.weight_ih_l0, lstm.rnn.weight_hh_l0):
        assert float(weight.std()) == pytest.approx(CUT_STD / math.sqrt(556), rel=0.01)
        assert float(weight.abs().max()) <= 2 / math.sqrt(556)
    forget = torch.zeros(1024)
    forget[256:512] = 1.0  # torch's gates i, f, g, o
    # both biases trained: the +1 of forget_bias kept in bias_ih; frozen: held by bias_hh
    assert torch.equal(lstm.rnn.bias_ih_l0, forget) and not lstm.rnn.bias_hh_l0.any()
    assert not frozen.rnn.bias_ih_l0.any() and torch.equal(frozen.rnn.bias_hh_l0, forget)
    assert not frozen.rnn.bias_hh_l0.requires_grad
    with pytest.raises(ValueError, match="haiku_init has no rule for GRU"):
        haiku_init(nn.GRU(3, 4))


@pytest.mark.parametrize("arch", ["rnn", "lstm", "transformer"])
def test_haiku_init_draws_every_trained_parameter_of_the_deletang_networks(arch):
    system = check_config(["--config", str(DELETANG / "reverse_string" / f"{arch}.yaml")]).model
    torch.manual_seed(0)
    drawn = {id(p) for p in haiku_init(system.net)}
    trained = [n for n, p in system.net.named_parameters() if p.requires_grad]
    assert trained and [n for n, p in system.net.named_parameters() if id(p) in drawn] == trained
    # haiku's own parameter counts at their sizes (reverse_string: 2 symbols + the empty one)
    assert system.num_parameters == {"rnn": 67_330, "lstm": 266_754, "transformer": 248_962}[arch]
    if arch == "transformer":  # the embedding of the one-hot input, empty symbol included
        net = system.net
        assert net.embed.bias is None
        for emb in (net.embed.weight, net.empty_token):
            assert float(emb.abs().max()) <= 0.04
        ln = net.backbone.blocks[0].ln1
        assert torch.equal(ln.weight, torch.ones(64)) and not ln.bias.any()


def test_init_haiku_is_drawn_by_the_systems_of_their_tasks_and_refused_elsewhere():
    torch.manual_seed(0)
    system = lstm_transduction(init="haiku")
    assert not system.net.head.bias.any() and not system.net.backbone.rnn.bias_ih_l0.any()
    with pytest.raises(
        ValueError, match=r"^init='haiku' is not one of \['torch'\] for StepBinary "
    ):
        SYSTEMS["binary"](in_features=2, out_features=1, init="haiku")


def test_the_options_at_their_defaults_draw_the_weights_they_drew_before():
    """Sums of every initial parameter, measured at commit 2d1b4ca (before issue 56's
    options): the defaults draw the same numbers from the same stream."""

    def sums(system):
        params = [p.detach().double() for p in system.parameters()]
        return sum(float(p.sum()) for p in params), sum(float((p * p).sum()) for p in params)

    torch.manual_seed(0)
    lstm = Transduction(
        in_features=2, out_features=2, arch="lstm", d_model=8, input_embedding=False,
        readout_relu=True, forget_bias=1.0,
    )  # fmt: skip
    torch.manual_seed(0)
    rnn = Transduction(in_features=2, out_features=2, arch="rnn", d_model=8, nonlinearity="relu")
    torch.manual_seed(0)
    transformer = SequenceClassification(
        in_features=2, out_features=2, d_model=8, n_heads=2, readout="empty", norm="post",
        embed_scale=True,
    )  # fmt: skip
    assert sums(lstm) == pytest.approx((15.5139723582, 58.2297988726), abs=1e-8)
    assert sums(rnn) == pytest.approx((-4.8468321558, 15.2993894205), abs=1e-8)
    assert sums(transformer) == pytest.approx((29.4399948502, 92.8665237622), abs=1e-8)


# -- haiku's LSTM: one trained bias, the forget gate's +1 a constant ---------------------------


def haiku_lstm_cell(x, w, b):
    """haiku's ``hk.LSTM`` over x (B, T, in): gated = concat(x_t, h) @ w + b, gates in ITS
    order i, g, f, o, and f = sigmoid(f + 1); w (in + hidden, 4 hidden), b (4 hidden)."""
    hidden = b.shape[0] // 4
    h = c = x.new_zeros(x.shape[0], hidden)
    outs = []
    for t in range(x.shape[1]):
        i, g, f, o = (torch.cat([x[:, t], h], dim=1) @ w + b).chunk(4, dim=1)
        c = torch.sigmoid(f + 1) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs, dim=1)


def torch_gates(haiku: torch.Tensor) -> torch.Tensor:
    """Rows (or entries) in haiku's gate order i, g, f, o -> torch's i, f, g, o."""
    i, g, f, o = haiku.chunk(4, dim=0)
    return torch.cat([i, f, g, o])


def test_single_bias_lstm_is_haikus_lstm_and_its_gradients_in_float64():
    torch.manual_seed(0)
    n_in = 3
    w = (torch.randn(n_in + D, 4 * D, dtype=torch.float64) * 0.4).requires_grad_()
    b = (torch.randn(4 * D, dtype=torch.float64) * 0.3).requires_grad_()
    x = torch.randn(B, T, n_in, dtype=torch.float64)
    ours = RecurrentBackbone(
        d_model=D, cell="lstm", input_size=n_in, forget_bias=1.0, single_bias=True
    ).double()
    rnn = ours.rnn
    with torch.no_grad():  # haiku's (in + hidden, 4h) kernel, split and transposed
        rnn.weight_ih_l0.copy_(torch_gates(w[:n_in].T))
        rnn.weight_hh_l0.copy_(torch_gates(w[n_in:].T))
        rnn.bias_ih_l0.copy_(torch_gates(b))
    expected = haiku_lstm_cell(x, w, b)
    probe = torch.randn_like(expected)  # a loss that weighs every output differently
    (expected * probe).sum().backward()
    for name, forward in [
        ("fused", ours),
        ("unrolled", lambda x: unrolled(rnn, x)),
        ("members_unrolled", lambda x: members_unrolled(rnn, x)),
    ]:
        rnn.zero_grad()
        out = forward(x)
        torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12, msg=name)
        (out * probe).sum().backward()
        torch.testing.assert_close(rnn.weight_ih_l0.grad, torch_gates(w.grad[:n_in].T))
        torch.testing.assert_close(rnn.weight_hh_l0.grad, torch_gates(w.grad[n_in:].T))
        torch.testing.assert_close(rnn.bias_ih_l0.grad, torch_gates(b.grad))
        assert rnn.bias_hh_l0.grad is None, name  # the constant: no gradient at all


def test_the_frozen_bias_never_moves_and_is_left_out_of_every_parameter_list():
    torch.manual_seed(0)
    system = lstm_transduction(optimizer="adamw", weight_decay=0.1, init="haiku")
    frozen = system.net.backbone.rnn.bias_hh_l0
    held = frozen.detach().clone()
    assert held[D : 2 * D].eq(1).all() and not held[:D].any() and not held[2 * D :].any()
    optimizer, _ = system.build_optimizer(total_steps=3, clips=True)
    assert all(frozen is not p for g in optimizer.param_groups for p in g["params"])
    batch = {
        "x": F.one_hot(torch.randint(0, 2, (4, 6)), 2).float(),
        "y": torch.randint(0, 2, (4, 6)),
    }
    for _ in range(3):  # clipped AdamW with weight decay: what reaches every trained one
        optimizer.zero_grad()
        system.loss(batch).backward()
        torch.nn.utils.clip_grad_norm_(system.parameters(), 1.0)
        optimizer.step()
    assert torch.equal(frozen, held) and frozen.grad is None
    # the parameter count is haiku's: the constant is not a parameter there
    assert system.num_parameters == sum(p.numel() for p in system.parameters()) - 4 * D
    # a checkpoint holds it (its state dict), and a reload builds it frozen again
    again = lstm_transduction(init="haiku")
    again.load_state_dict(system.state_dict())
    assert torch.equal(again.net.backbone.rnn.bias_hh_l0, held)
    assert not again.net.backbone.rnn.bias_hh_l0.requires_grad


def test_a_population_keeps_its_members_frozen_bias_frozen():
    torch.manual_seed(0)
    members = [lstm_transduction(init="haiku") for _ in range(2)]
    population = PopulationSystem(members, clip_norm=1.0)
    name = "net__backbone__rnn__bias_hh_l0"
    held = population.stacked[name].detach().clone()
    assert not population.stacked[name].requires_grad
    optimizer = population.configure_optimizers()
    assert all(p.requires_grad for p in optimizer.param_groups[0]["params"])
    x = F.one_hot(torch.randint(0, 2, (2, 4, 6)), 2).float()
    batch = {"x": x, "y": torch.randint(0, 2, (2, 4, 6))}
    seeds, steps = torch.zeros(2, dtype=torch.long), torch.zeros(2, dtype=torch.long)
    for _ in range(2):
        optimizer.zero_grad()
        population.stacked_losses(population.weights(), batch, seeds, steps).sum().backward()
        optimizer.clip_gradients()
        optimizer.step()
    assert torch.equal(population.stacked[name], held)
    assert population.stacked["net__backbone__rnn__bias_ih_l0"].grad is not None


def test_single_bias_is_refused_where_no_lstm_reads_it():
    with pytest.raises(
        ValueError, match=r"^single_bias=True only applies to arch='lstm', not 'rnn'"
    ):
        SYSTEMS["transduction"](in_features=2, out_features=2, arch="rnn", single_bias=True)
    with pytest.raises(ValueError, match=r"^single_bias=True does not apply to seq2seq"):
        SYSTEMS["seq2seq"](in_features=3, out_features=3, arch="lstm", single_bias=True)


# -- their encoder: bias-free attention, a ReLU FFN, dropout at three sites, their positions ---


def test_bias_free_attention_is_softmax_qk_v_with_no_bias_anywhere():
    torch.manual_seed(0)
    attn = MultiHeadAttention(D, H, bias=False).double()
    assert all(getattr(attn, p).bias is None for p in ("q_proj", "k_proj", "v_proj", "out_proj"))
    x = torch.randn(B, T, D, dtype=torch.float64)
    split = lambda t: t.view(B, T, H, D // H).transpose(1, 2)  # noqa: E731 (B, H, T, dh)
    q, k, v = (split(x @ getattr(attn, f"{n}_proj").weight.T) for n in "qkv")
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D // H), dim=-1)
    expected = (weights @ v).transpose(1, 2).reshape(B, T, D) @ attn.out_proj.weight.T
    torch.testing.assert_close(attn(x)[0], expected)


def test_the_relu_ffn_is_fc2_of_relu_of_fc1():
    torch.manual_seed(0)
    ffn = FeedForward(D, 16, activation="relu").double()
    x = torch.randn(B, T, D, dtype=torch.float64)
    torch.testing.assert_close(ffn(x), ffn.fc2(torch.relu(ffn.fc1(x))))
    with pytest.raises(
        ValueError, match=r"^ffn_activation='tanh' is not one of \['gelu', 'relu'\]"
    ):
        FeedForward(D, 16, activation="tanh")


def test_positions_from_the_end_with_sin_then_cos_are_their_table():
    # d = 4: frequencies 1 and 1/100; a length-3 input at positions 3, 2, 1
    def row(p):
        return [math.sin(p), math.sin(p / 100), math.cos(p), math.cos(p / 100)]

    expected = torch.tensor([row(3), row(2), row(1)])
    for max_len in (16, 2):  # from the table, and past it (computed on demand)
        pe = SinusoidalPositionalEncoding(4, max_len, from_end=True, layout="concatenated")
        torch.testing.assert_close(pe(torch.zeros(1, 3, 4))[0], expected, rtol=0, atol=1e-7)
    # from the start, interleaved: what it was
    start = SinusoidalPositionalEncoding(4, 16)(torch.zeros(1, 2, 4))[0]
    torch.testing.assert_close(
        start[1], torch.tensor([math.sin(1), math.cos(1), 0.01, 1.0]), atol=1e-4, rtol=0
    )
    with pytest.raises(ValueError, match=r"^from_end positions count from a whole sequence's end"):
        SinusoidalPositionalEncoding(4, 16, from_end=True)(torch.zeros(1, 3, 4), offset=1)


def test_their_table_is_the_sinusoidal_encodings_own_and_attention_bias_the_transformers():
    """Another encoding ignores the table's options, as it ignores ``pos_range`` (a grid
    sweeps ``pos_mode`` over a Delétang config: their other encodings have no table)."""
    torch.manual_seed(0)
    given = SequenceClassification(
        in_features=2,
        out_features=2,
        pos_mode="rotary",
        pos_from_end=True,
        sincos_layout="concatenated",
    )
    torch.manual_seed(0)
    plain = SequenceClassification(in_features=2, out_features=2, pos_mode="rotary")
    x = torch.randn(B, T, 2)
    torch.testing.assert_close(given.eval()(x), plain.eval()(x), rtol=0, atol=0)
    with pytest.raises(
        ValueError, match=r"^attention_bias=False only applies to arch='transformer'"
    ):
        SequenceClassification(in_features=2, out_features=2, arch="lstm", attention_bias=False)


@pytest.mark.parametrize("inner_dropout", [True, False])
def test_without_inner_dropout_only_the_input_and_sublayer_outputs_drop(inner_dropout):
    """With the three outer sites (input, attention output, FFN output) at p = 0 a block in
    training is its eval self only if no other site drops; and those three run once each."""
    torch.manual_seed(0)
    system = SequenceClassification(
        in_features=2, out_features=2, d_model=D, n_heads=H, n_layers=2, dropout=0.5,
        norm="post", inner_dropout=inner_dropout,
    )  # fmt: skip
    backbone = system.net.backbone
    outer = [backbone.drop] + [b.drop for b in backbone.blocks]
    calls = []
    for module in outer:
        module.register_forward_hook(lambda m, i, o: calls.append(m))
    x = torch.randn(B, T, 2)
    with dropout_stream(0, 0):
        system.net.train()(x)
    assert len(calls) == 1 + 2 * 2  # the input, then each block's two sub-layer outputs
    for module in outer:
        module.p = 0.0
    with dropout_stream(0, 0):
        trained = system.net.train()(x)
    evaluated = system.net.eval()(x)
    assert torch.allclose(trained, evaluated, atol=1e-6) is not inner_dropout
    inner = [m for m in backbone.modules() if isinstance(m, Dropout) and m not in outer]
    assert all(m.p == (0.5 if inner_dropout else 0.0) for m in inner)
    assert all(b.attn.dropout == (0.5 if inner_dropout else 0.0) for b in backbone.blocks)


def their_encoder(net, x):
    """Delétang et al.'s ``transformer_encoder`` over ``make_model_with_empty_targets``, one
    empty position read (a one-label task), written out from their code with ``net``'s
    weights: the one-hot input one symbol wider, a bias-free embedding times sqrt(d), their
    table (positions T .. 1, sines then cosines), post-LN blocks of bias-free attention and a
    ReLU FFN, the last position's output through the readout. Eval mode (no dropout)."""
    backbone = net.backbone
    d = backbone.blocks[0].ln1.normalized_shape[0]
    V = x.shape[2]
    empty = F.one_hot(torch.tensor(V), V + 1).to(x).expand(x.shape[0], 1, V + 1)
    one_hot = torch.cat([F.pad(x, (0, 1)), empty], dim=1)  # (B, T + 1, V + 1)
    emb = torch.cat([net.embed.weight, net.readout.empty_token[0].T], dim=1)  # (d, V + 1)
    h = one_hot @ emb.T * math.sqrt(d)
    length = h.shape[1]
    inv = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(length, 0, -1, dtype=torch.float64)[:, None] * inv
    table = torch.cat([angles.sin(), angles.cos()], dim=1)  # numpy's float64, then
    h = h + table.float().to(h)  # added to their float32 embeddings
    n_heads = backbone.blocks[0].attn.n_heads
    heads = lambda t: t.view(t.shape[0], length, n_heads, -1).transpose(1, 2)  # noqa: E731
    for block in backbone.blocks:
        a = block.attn
        q, k, v = (heads(h @ getattr(a, f"{n}_proj").weight.T) for n in "qkv")
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
        att = (w @ v).transpose(1, 2).reshape(h.shape) @ a.out_proj.weight.T
        h = F.layer_norm(h + att, (d,), block.ln1.weight, block.ln1.bias)
        hidden = torch.relu(F.linear(h, block.ffn.fc1.weight, block.ffn.fc1.bias))
        ffn = F.linear(hidden, block.ffn.fc2.weight, block.ffn.fc2.bias)
        h = F.layer_norm(h + ffn, (d,), block.ln2.weight, block.ln2.bias)
    return F.linear(h[:, -1], net.head.weight, net.head.bias)


def test_the_deletang_transformer_is_their_encoder_in_float64():
    torch.manual_seed(0)
    config = DELETANG / "parity_check" / "transformer.yaml"
    system = check_config(["--config", str(config)]).model.double().eval()
    x = F.one_hot(torch.randint(0, 2, (3, 7)), 2).double()
    with torch.no_grad():
        torch.testing.assert_close(system(x), their_encoder(system.net, x), rtol=1e-10, atol=1e-10)


# -- their loss: the mean over the output positions and the batch (no option needed) --------


def test_their_loss_is_the_mean_cross_entropy_over_positions_and_batch_as_ours():
    """example.py: ``jnp.mean(jnp.sum(-target * log_softmax(output), axis=-1))``, with no
    axis: a mean over B and T alike (checked against their code: 0.7835 = the mean per
    position, not the 3.9175 a sum over T would give), so clipping at 1.0 sees the same
    gradient norm as ours."""
    torch.manual_seed(0)
    system = lstm_transduction()
    batch = {
        "x": F.one_hot(torch.randint(0, 2, (4, 6)), 2).float(),
        "y": torch.randint(0, 2, (4, 6)),
    }
    logits = system(batch["x"], 6)  # (B, T_out, C)
    target = F.one_hot(batch["y"], 2).float()
    theirs = torch.mean(torch.sum(-target * torch.log_softmax(logits, dim=-1), dim=-1))
    torch.testing.assert_close(system.loss(batch), theirs)
    classifier = SequenceClassification(
        in_features=2, out_features=2, readout="empty", label_smoothing=0.0, dropout=0.0
    )
    labels = torch.randint(0, 2, (4,))
    logits = classifier(batch["x"])
    theirs = torch.mean(torch.sum(-F.one_hot(labels, 2) * torch.log_softmax(logits, -1), dim=-1))
    torch.testing.assert_close(classifier.loss({"x": batch["x"], "y": labels}), theirs)


# -- the range up to their 500 -----------------------------------------------------------------


def test_range_eval_max_length_reaches_their_500_where_the_model_reads_it():
    every = RangeEval(max_length=500)
    every.check()
    assert every.lengths(40, None) == list(range(1, 501))
    appended = every.lengths(40, 200, output_length=lambda n: n)  # a learnable table of 200
    assert appended[-1] == 100  # input and its 100 appended outputs fill it
    assert RangeEval(max_factor=4).lengths(40, None)[-1] == 160  # as before
    with pytest.raises(BadInput, match=r"^range_eval.max_length=500 and range_eval.max_factor=4"):
        RangeEval(max_factor=4, max_length=500).check()
    for arch in ("rnn", "lstm", "transformer"):  # none has a length limit: 500 is in reach
        built = check_config(["--config", str(DELETANG / "reverse_string" / f"{arch}.yaml")])
        assert built.model.length_limit is None


def test_range_eval_dropout_scores_with_their_dropout_on_the_same_in_every_rerun():
    torch.manual_seed(0)
    system = Transduction(
        in_features=2, out_features=2, d_model=D, n_heads=H, n_layers=1, dropout=0.5,
        norm="post", inner_dropout=False,
    )  # fmt: skip
    data = ReverseStringData(length=4, n_train=64)

    def acc(dropout):
        metrics = system.build_metrics()
        values = score_length(system, data, 6, metrics, n=64, batch_size=16, sub_batch=16,
                              dropout=dropout)  # fmt: skip
        return values["acc"]

    system.train()
    on = acc(True)
    assert system.training and system.net.training  # left in the mode it was in
    assert acc(True) == on != acc(False)  # its masks are its own: the same in a rerun
    system.eval()
    assert acc(True) == on and not system.net.training
    for module in system.net.modules():  # nothing left to drop: eval mode's scores
        if isinstance(module, Dropout):
            module.p = 0.0
    assert acc(True) == acc(False)


# -- the configs -----------------------------------------------------------------------------

FAITHFUL = {
    "rnn": dict(init="haiku"),
    "lstm": dict(init="haiku", single_bias=True, forget_bias=1.0),
    "transformer": dict(
        init="haiku", attention_bias=False, inner_dropout=False, ffn_activation="relu",
        pos_from_end=True, sincos_layout="concatenated", embedding_bias=False,
    ),
}  # fmt: skip


CONFIGS = sorted(p for arch in FAITHFUL for p in DELETANG.glob(f"*/{arch}.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_every_deletang_config_sets_their_options(config):
    built = check_config(["--config", str(config)])
    hp = built.model.hparams
    assert {k: hp[k] for k in FAITHFUL[config.stem]} == FAITHFUL[config.stem]
    # scored with their dropout on, where there is some
    assert built.config.range_eval.dropout is (config.stem == "transformer")


def test_the_new_options_at_their_defaults_leave_every_digest_as_it_was():
    """A config that sets none of issue 56's options keeps its digest (a grid folder made
    before them stays resumable); set, they change it."""
    config = check_config(
        ["--config", str(CONFIG_DIR / "parity_check" / "transformer.yaml")]
    ).config
    now = config_digest(config)
    before = config.clone()
    added = ("init", "embedding_bias", "single_bias", "attention_bias", "inner_dropout")
    for key in (*added, "ffn_activation", "pos_from_end", "sincos_layout"):
        del before.model.init_args[key]
    del before.range_eval["max_length"]
    del before.range_eval["dropout"]
    assert config_digest(before) == now
    for key, value in {**FAITHFUL["transformer"], "single_bias": True}.items():
        changed = config.clone()
        changed.model.init_args[key] = value
        assert config_digest(changed) != now, key
    changed = config.clone()
    changed.range_eval["dropout"] = True
    assert config_digest(changed) != now


def _published_grids(uses_deletang: bool) -> list[str]:
    """The shipped grids with a published fingerprint, by whether a block reads a
    configs/deletang config (whose digests issue 56 moves on purpose)."""
    found = []
    for fingerprint in sorted((REPO / "docs" / "results").glob("*/fingerprint.json")):
        grid = REPO / "ablations" / f"{fingerprint.parent.name}.yaml"
        if grid.is_file() and ("configs/deletang/" in grid.read_text()) is uses_deletang:
            found.append(fingerprint.parent.name)
    return found


@pytest.mark.integration
@pytest.mark.parametrize("grid", _published_grids(uses_deletang=False))
def test_every_published_grid_outside_deletang_keeps_its_run_digests(grid):
    """Every run of mixers, matrix, pe_extrapolation, ...: the digest its folder records."""
    committed = json.loads((REPO / "docs" / "results" / grid / "fingerprint.json").read_text())
    _, runs = load_grid(REPO / "ablations" / f"{grid}.yaml")
    assert {r.run_id: r.digest for r in runs} == committed["run_digests"]
