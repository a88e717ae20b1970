"""The mixers (mamba, linear_rnn, linear_attention): parallel form = step form in float64,
causality, trailing padding, the docstrings' worked examples, populations and compile."""

import math

import pytest
import torch
from torch.func import functional_call, vmap

from lit_seq.bench import mixers as mixers_bench
from lit_seq.fit import cli_main
from lit_seq.models import MIXERS, build_backbone
from lit_seq.models import selective_scan as selective_scan_module
from lit_seq.models.linear_attention import (
    EPS,
    LinearAttention,
    LinearAttentionBackbone,
    feature_map,
    global_linear_attention,
)
from lit_seq.models.linear_rnn import LinearRecurrence
from lit_seq.models.scan import linear_scan
from lit_seq.models.selective_scan import selective_scan
from lit_seq.models.stacking import stacked_members
from lit_seq.population.stacked import stack_weights
from lit_seq.population.train import fit_population
from lit_seq.systems import SequenceClassification
from tests.helpers import CONFIG_DIR, backbone_options, tiny_fit

B, T, D = 2, 7, 8


def make(arch: str, *, causal: bool = True, **overrides) -> torch.nn.Module:
    chosen = dict(
        d_model=D,
        n_layers=2,
        n_heads=2,
        d_ff=16,
        dropout=0.0,
    )
    options = backbone_options(**(chosen | overrides))
    return build_backbone(arch, options, causal=causal, max_len=32).eval()


CASES = [("mamba", {}), ("mamba", {"d_state": 3}), ("linear_attention", {})] + [
    ("linear_rnn", {"eigenvalues": e}) for e in ("positive", "signed")
]
IDS = [f"{a}-{'-'.join(map(str, o.values()))}" for a, o in CASES]


@pytest.mark.parametrize(("arch", "overrides"), CASES, ids=IDS)
def test_the_parallel_form_equals_the_step_form_in_float64(arch, overrides):
    torch.manual_seed(0)
    model = make(arch, **overrides).double()
    x = torch.randn(B, T, D, dtype=torch.float64)
    torch.testing.assert_close(model(x), model.recurrent(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("arch", MIXERS)
def test_outputs_at_t_ignore_inputs_after_t(arch):
    torch.manual_seed(0)
    model = make(arch)
    x = torch.randn(B, T, D)
    t = 3
    x2 = x.clone()
    x2[:, t + 1 :] = torch.randn(B, T - t - 1, D)
    y, y2 = model(x), model(x2)
    torch.testing.assert_close(y[:, : t + 1], y2[:, : t + 1], rtol=0, atol=0)
    assert not torch.allclose(y[:, t + 1 :], y2[:, t + 1 :])  # the test can fail


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("arch", MIXERS)
def test_trailing_padding_changes_no_real_position(arch, causal):
    torch.manual_seed(0)
    model = make(arch, causal=causal)
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, -3:] = True
    longer = torch.cat([x, torch.randn(B, 4, D)], dim=1)
    longer_pad = torch.cat([pad, torch.ones(B, 4, dtype=torch.bool)], dim=1)
    real = ~pad
    torch.testing.assert_close(model(longer, longer_pad)[:, :T][real], model(x, pad)[real])


def test_non_causal_linear_attention_reads_the_future_and_the_recurrent_ones_do_not():
    torch.manual_seed(0)
    x = torch.randn(B, T, D)
    x2 = x.clone()
    x2[:, -1] = torch.randn(B, D)
    for arch in MIXERS:
        model = make(arch, causal=False)
        sees = not torch.allclose(model(x)[:, 0], model(x2)[:, 0])
        assert sees == (arch == "linear_attention"), arch


def test_scan_worked_example():
    a = torch.tensor([[0.5, -1.0, 2.0]])
    b = torch.ones(1, 3)
    assert linear_scan(a, b).tolist() == [[1.0, 0.0, 1.0]]


def test_mamba_recurrence_worked_example():
    # one channel, N = 1, A = -1, step ln 2 (decay 1/2), B = C = 1, u = [1, 1]
    dt = torch.full((1, 2, 1), math.log(2.0), dtype=torch.float64)
    ones = torch.ones(1, 2, 1, dtype=torch.float64)
    y = selective_scan(dt, -torch.ones(1, 1, dtype=torch.float64), ones, ones, ones)
    assert y.flatten().tolist() == pytest.approx([math.log(2), 1.5 * math.log(2)])
    assert y.flatten().tolist() == pytest.approx([0.693, 1.040], abs=5e-4)


def _selective_scan_by_autograd(dt, A, B, C, u):
    """The reference: the (B, T, D, N) decay and drive, ``linear_scan``, autograd throughout."""
    decay = torch.exp(dt[..., None] * A)
    drive = dt[..., None] * B[:, :, None, :] * u[..., None]
    return torch.einsum("btdn,btn->btd", linear_scan(decay, drive), C)


def _selective_scan_by_autograd_loss(*inputs):
    return _selective_scan_by_autograd(*inputs).square().sum()


@pytest.mark.parametrize("chunk", [2**19, 1, 2 * 3 * 5 * 4], ids=["one", "per-position", "2+2+2"])
def test_the_selective_scan_and_its_gradients_equal_autograd_over_the_loop_in_float64(
    monkeypatch, chunk
):
    """Values and gradients (autograd's, finite differences', vmapped as a population runs
    it) with the positions in one chunk, one a chunk, and 2 a chunk (CHUNK / (B N D))."""
    monkeypatch.setattr(selective_scan_module, "CHUNK", chunk)
    torch.manual_seed(0)
    b, t, d, n = 3, 6, 5, 4
    inputs = [
        torch.rand(b, t, d, dtype=torch.float64),  # steps > 0
        -torch.rand(d, n, dtype=torch.float64) - 0.1,  # A < 0
        *(torch.randn(b, t, k, dtype=torch.float64) for k in (n, n, d)),  # B, C, u
    ]
    inputs = [x.requires_grad_() for x in inputs]
    y = selective_scan(*inputs)
    expected = _selective_scan_by_autograd(*inputs)
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-12)
    grad_y = torch.randn_like(y)
    grads = torch.autograd.grad(y, inputs, grad_y)
    for got, want in zip(grads, torch.autograd.grad(expected, inputs, grad_y), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    assert torch.autograd.gradcheck(selective_scan, inputs)  # and against finite differences
    # two members' inputs stacked and vmapped (generate_vmap_rule), each its solo gradient
    members = [[x.detach() for x in inputs], [x.detach().flip(0) for x in inputs]]
    stacked = [torch.stack(pair) for pair in zip(*members, strict=True)]
    loss = lambda *xs: selective_scan(*xs).square().sum()  # noqa: E731
    vmapped = vmap(torch.func.grad(loss, argnums=tuple(range(5))))(*stacked)
    for k, member in enumerate(members):
        solo = torch.func.grad(_selective_scan_by_autograd_loss, argnums=tuple(range(5)))(*member)
        for got, want in zip(vmapped, solo, strict=True):
            torch.testing.assert_close(got[k], want, rtol=0, atol=1e-12)


@pytest.mark.integration  # compiles (aot_eager: a few seconds on 2 loaded cores)
def test_the_compiled_selective_scan_and_its_gradients_equal_eager_in_float64(monkeypatch):
    """Compiled, the scans run out of place (``torch.compiler.is_compiling``): same numbers."""
    monkeypatch.setattr(selective_scan_module, "CHUNK", 2 * 2 * 3 * 4)  # 2 positions a chunk
    torch.manual_seed(0)
    b, t, d, n = 2, 5, 4, 3
    inputs = [torch.rand(b, t, d, dtype=torch.float64), -torch.rand(d, n, dtype=torch.float64)]
    inputs += [torch.randn(b, t, k, dtype=torch.float64) for k in (n, n, d)]
    inputs = [x.requires_grad_() for x in inputs]
    torch._dynamo.reset()
    compiled = torch.compile(selective_scan, backend="aot_eager", fullgraph=True)
    y, y_eager = compiled(*inputs), selective_scan(*inputs)
    torch.testing.assert_close(y, y_eager, rtol=0, atol=1e-12)
    grad_y = torch.randn_like(y)
    grads = torch.autograd.grad(y, inputs, grad_y)
    for got, want in zip(grads, torch.autograd.grad(y_eager, inputs, grad_y), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def _parity_recurrence(eigenvalues: str) -> LinearRecurrence:
    """One channel: λ = 2 sigmoid(20 - 40 u) - 1 (about +1 on a 0, -1 on a 1), input u."""
    mixer = LinearRecurrence(1, eigenvalues).double()
    with torch.no_grad():
        mixer.transition.weight.fill_(-40.0)
        mixer.transition.bias.fill_(20.0)
        mixer.in_proj.weight.fill_(1.0)
        mixer.out_proj.weight.fill_(1.0)
        mixer.out_proj.bias.zero_()
        mixer.D.zero_()
    return mixer


def test_signed_linear_rnn_worked_example_tracks_parity_and_positive_does_not():
    u = torch.tensor([1.0, 0.0, 1.0, 1.0], dtype=torch.float64).view(1, 4, 1)
    signed = _parity_recurrence("signed")(u).flatten()
    assert signed.tolist() == pytest.approx([1, 1, 0, 1], abs=1e-6)  # odd, odd, even, odd
    # the same weights in (0, 1): λ = sigmoid(-20) ~ 0 on a 1 resets the state, never flips it
    positive = _parity_recurrence("positive")(u).flatten()
    assert positive.tolist() == pytest.approx([1, 1, 1, 1], abs=1e-6)


def test_linear_attention_worked_example_is_the_running_mean():
    attn = LinearAttention(1, 1).double()
    with torch.no_grad():  # q = k = 0 -> phi = 1 everywhere; v = x; out = identity
        attn.qkv.weight.copy_(torch.tensor([[0.0], [0.0], [1.0]]))
        attn.qkv.bias.zero_()
        attn.out_proj.weight.fill_(1.0)
        attn.out_proj.bias.zero_()
    v = torch.tensor([2.0, 4.0, 6.0], dtype=torch.float64).view(1, 3, 1)
    assert attn(v).flatten().tolist() == pytest.approx([2, 3, 4], abs=1e-5)


def _outputs_and_gradients(model, forward, x):
    y = forward(x)
    return y, torch.autograd.grad(y.square().sum(), list(model.parameters()))


@pytest.mark.parametrize("length", [1, 5, 8, 13])
@pytest.mark.parametrize("chunk", [1, 3, 4, 32])
def test_chunked_causal_linear_attention_and_its_gradients_equal_the_step_form_in_float64(
    chunk, length
):
    # lengths a multiple of the chunk, not one, shorter than one chunk; chunk 32: one chunk
    torch.manual_seed(0)
    model = LinearAttentionBackbone(D, n_layers=2, n_heads=2, d_ff=16, causal=True, chunk=chunk)
    model = model.double().eval()
    x = torch.randn(B, length, D, dtype=torch.float64)
    y, grads = _outputs_and_gradients(model, model, x)
    y_step, grads_step = _outputs_and_gradients(model, model.recurrent, x)
    torch.testing.assert_close(y, y_step, rtol=0, atol=1e-12)
    for got, want in zip(grads, grads_step, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("chunk", [2, 3])
def test_chunked_causal_linear_attention_with_padding_equals_the_one_chunk_form(chunk):
    """The padding mask's zero keys inside chunks: the same outputs and gradients as the
    (T, T) form (one chunk), which the step form has no mask to compare with."""
    torch.manual_seed(0)
    attn = LinearAttention(D, 2, chunk=chunk).double()
    x = torch.randn(B, 11, D, dtype=torch.float64)
    pad = torch.zeros(B, 11, dtype=torch.bool)
    pad[0, -4:] = True
    y, grads = _outputs_and_gradients(attn, lambda x: attn(x, pad), x)
    attn.chunk = 11
    y_one, grads_one = _outputs_and_gradients(attn, lambda x: attn(x, pad), x)
    torch.testing.assert_close(y, y_one, rtol=0, atol=1e-12)
    for got, want in zip(grads, grads_one, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-10)


def test_global_linear_attention_equals_each_heads_sums_in_float64():
    """The heads as blocks of one (d, d + H) state = each head's own S and z (the definition)."""
    torch.manual_seed(0)
    H, dh = 3, 4
    q, k, v = (torch.randn(B, 9, H * dh, dtype=torch.float64) for _ in range(3))
    q, k = feature_map(q), feature_map(k).masked_fill(torch.rand(B, 9, 1) < 0.3, 0.0)
    y = global_linear_attention(q, k, v, H)
    qh, kh, vh = (t.view(B, 9, H, dh) for t in (q, k, v))
    S = torch.einsum("bshi,bshj->bhij", kh, vh)  # each head's sum of phi(k) v^T
    z = kh.sum(1)  # (B, H, dh)
    num = torch.einsum("bthi,bhij->bthj", qh, S)
    want = num / (torch.einsum("bthi,bhi->bth", qh, z)[..., None] + EPS)
    torch.testing.assert_close(y, want.reshape(B, 9, H * dh), rtol=0, atol=1e-12)


@pytest.mark.parametrize("arch", MIXERS)
def test_a_stacked_member_computes_its_solo_forward_in_float64(arch):
    """What a population does (``population.stacked``): K members' weights stacked, one
    vmapped ``functional_call``; each member's output and gradient are its solo run's."""
    torch.manual_seed(0)
    members = [make(arch).double() for _ in range(3)]
    stacked = {n: w.requires_grad_() for n, w in stack_weights(members).items()}
    x = torch.randn(3, B, T, D, dtype=torch.float64)

    def one(weights, xs):
        return functional_call(members[0], weights, (xs,))

    with stacked_members():
        out = vmap(one, randomness="error")(stacked, x)
    out.square().sum().backward()
    for k, member in enumerate(members):
        solo = member(x[k])
        torch.testing.assert_close(out[k], solo, rtol=0, atol=1e-12)
        solo.square().sum().backward()
        for name, param in member.named_parameters():
            torch.testing.assert_close(stacked[name].grad[k], param.grad, rtol=0, atol=1e-10)


@pytest.mark.integration  # tracing: 4-16 s a mixer on 2 loaded cores
@pytest.mark.parametrize("arch", MIXERS)
def test_the_forward_traces_whole_and_the_traced_forward_equals_eager(arch):
    # fullgraph: a graph break would fail here (what --compile needs of a backbone); traced
    # without code generation, as Inductor's cold compile costs 0.5-1 min a mixer
    torch.manual_seed(0)
    model = make(arch)
    x = torch.randn(B, T, D)
    traced = torch.compile(model, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(traced(x), model(x), rtol=1e-5, atol=1e-5)


# -- everywhere the product goes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"arch": "lstm", "d_state": 8}, r"^d_state=8 only applies to arch='mamba', not 'lstm'$"),
        (
            {"arch": "mamba", "eigenvalues": "signed"},
            r"^eigenvalues='signed' only applies to arch='linear_rnn', not 'mamba'$",
        ),
        (
            {"arch": "linear_rnn", "bidirectional": True},
            r"^bidirectional=True only applies to arch='rnn' or arch='lstm', not 'linear_rnn'$",
        ),
        ({"arch": "mamba", "pos_mode": "rotary"}, r"^pos_mode='rotary' only applies to arch="),
        ({"arch": "linear_rnn", "eigenvalues": "both"}, r"^eigenvalues='both' is not one of"),
        ({"arch": "mamba", "d_state": 0}, r"^d_state must be an integer >= 1"),
    ],
)
def test_an_option_the_arch_does_not_read_is_refused_in_one_line(overrides, message):
    with pytest.raises(ValueError, match=message):
        SequenceClassification(out_features=2, **overrides)


def test_a_mixer_reads_its_option_from_the_system():
    mamba = SequenceClassification(out_features=2, arch="mamba", d_state=5).net.backbone
    assert mamba.mixers[0].A_log.shape[-1] == 5
    signed = SequenceClassification(out_features=2, arch="linear_rnn", eigenvalues="signed")
    assert signed.net.backbone.mixers[0].signed


@pytest.mark.parametrize("arch", MIXERS)
def test_a_cls_readout_is_refused_where_the_first_position_sees_nothing_after_it(arch):
    blind = arch != "linear_attention"  # the recurrences are causal even on a non-causal task
    if blind:
        with pytest.raises(ValueError, match="readout='cls' needs a backbone"):
            SequenceClassification(out_features=2, arch=arch, readout="cls")
    else:
        SequenceClassification(out_features=2, arch=arch, readout="cls")


KINDS = ["parity_check", "echo", "associative_recall", "deletang/reverse_string", "sum_mod"]


@pytest.mark.integration
@pytest.mark.parametrize("task", KINDS)
@pytest.mark.parametrize("arch", MIXERS)
def test_every_mixer_trains_on_every_task_kind_and_its_record_names_it(tmp_path, arch, task):
    """Classifier, per-step binary, causal per-step, Delétang transduction and sum_mod."""
    # Delétang's protocol: width 256, every length up to 4 x 40 scored; small ones here
    short = ["--model.d_model=32", "--data.init_args.length=8", "--range_eval.max_factor=2"]
    short += ["--range_eval.n=32", "--data.init_args.n_val=64", "--data.init_args.n_test=64"]
    # the config's LSTM-only options of Delétang's LSTM, back at their defaults for a mixer
    short += [
        "--model.forget_bias=0.0",
        "--model.single_bias=false",
        "--model.input_embedding=true",
    ]
    extra = short if task.startswith("deletang") else []
    result = tiny_fit(CONFIG_DIR / task / "lstm.yaml", tmp_path, f"--model.arch={arch}", *extra)
    assert result.arch == arch
    assert all(math.isfinite(v) for k, v in result.metrics.items() if k.endswith("/loss"))


@pytest.mark.integration
def test_the_quick_mixers_bench_times_every_arch_against_the_lstm(tmp_path):
    result = mixers_bench.run(quick=True, workdir=tmp_path)
    rows = {row["arch"]: row for row in result["rows"]}
    assert list(rows) == ["lstm", "transformer", *MIXERS]
    assert rows["lstm"]["vs_lstm"] == 1.0
    for arch in MIXERS:  # the mixer has the lstm's width and depth, and its own step time
        assert (rows[arch]["d_model"], rows[arch]["n_layers"]) == (rows["lstm"]["d_model"], 1)
        assert rows[arch]["vs_lstm"] == pytest.approx(
            rows[arch]["cpu_ms"] / rows["lstm"]["cpu_ms"], abs=0.01
        )
        assert rows[arch]["passed"] == (rows[arch]["vs_lstm"] <= mixers_bench.GOAL)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("arch", MIXERS)
def test_a_population_member_trains_exactly_as_its_solo_run_in_float64(tmp_path, arch):
    """The whole fit (``population.train``), not only the forward: 2 members at 2 rates."""

    def args(run_dir, seed, lr):
        return [
            "--config",
            str(CONFIG_DIR / "echo" / "lstm.yaml"),
            f"--run_dir={run_dir}",
            f"--seed_everything={seed}",
            f"--model.arch={arch}",
            f"--model.lr={lr}",
            "--trainer.max_steps=12",
            "--trainer.val_check_interval=6",
            "--trainer.log_every_n_steps=1",
            "--trainer.precision=64-true",
            "--trainer.enable_progress_bar=false",
            "--data.init_args.n_val=64",
            "--data.init_args.n_test=64",
            "--wandb=off",
        ]

    lrs = [0.01, 0.003]
    outcomes = fit_population([args(tmp_path / f"m{k}", k, lrs[k]) for k in range(2)])
    for k, outcome in enumerate(outcomes):
        solo = cli_main(args(tmp_path / f"s{k}", k, lrs[k]))
        assert outcome.steps == solo.steps
        for key, value in solo.metrics.items():
            assert outcome.metrics[key] == pytest.approx(value, abs=1e-10), key
