"""The captured training step (``--compile``, ``lit_seq.systems.compiled``): the training loss
of every family traces with no host synchronisation, its compiled form computes what the
eager one computes, and a fit / a population with ``--compile on`` trains as without it.

Inductor's compile costs 10 s to 5 min a graph on this CPU, so these tests compile with
``aot_eager`` (Dynamo's trace and AOTAutograd's forward / backward graphs, run by eager
kernels: whatever the graph capture gets wrong shows there) and only the two integration
tests, one per path (solo, population), pay for Inductor. The bench section ``compile``
compares eager and Inductor steps for every family at their shipped sizes.
"""

from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml
from torch._dynamo.utils import counters

from lit_seq import fit
from lit_seq.ablate.__main__ import build_parser, plan
from lit_seq.ablate.grid import config_digest
from lit_seq.population.stacked import member_losses, stack_weights
from lit_seq.population.train import fit_population
from lit_seq.systems import Transduction
from lit_seq.systems.compiled import compile_loss, compiles, describe_compile
from tests.helpers import CONFIG_DIR, write_grid

# fused nn.RNN / nn.LSTM: Dynamo does not trace them (run eagerly between two graphs)
FUSED_RNN_BREAK = "Attempted to wrap RNN, GRU, or LSTM"


def _system(arch: str, seed: int = 0) -> Transduction:
    """A tiny Delétang-style transduction system in float64, dropout off."""
    torch.manual_seed(seed)
    sizes = dict(n_heads=2, d_ff=16) if arch in ("transformer", "linear_attention") else {}
    system = Transduction(
        in_features=3, out_features=3, data_max_len=24, arch=arch, d_model=8, n_layers=1,
        dropout=0.0, **sizes,
    )  # fmt: skip
    return system.double().train()


def _batch(length: int, seed: int = 0, size: int = 4) -> dict[str, torch.Tensor]:
    """(size, length) one-hot inputs over 3 symbols, as many outputs, all scored."""
    g = torch.Generator().manual_seed(seed)
    x = F.one_hot(torch.randint(0, 3, (size, length), generator=g), 3).double()
    y = torch.randint(0, 3, (size, length), generator=g)
    return {"x": x, "y": y, "mask": torch.ones(size, length, dtype=torch.bool)}


def _break_reasons(fn, *args, unrolled: bool = False) -> list[str]:
    """Why Dynamo broke ``fn``'s graph when tracing it on ``args`` (none: one whole graph);
    ``unrolled``: as ``compile_loss(..., unrolled=True)`` traces it."""
    torch._dynamo.reset()
    with torch._dynamo.config.patch(allow_rnn=unrolled):
        explained = torch._dynamo.explain(fn)(*args)
    return [reason.reason for reason in explained.break_reasons]


# -- the choice --------------------------------------------------------------------------


def test_auto_compiles_on_a_gpu_only_and_the_header_says_how():
    assert not compiles("auto", "cpu") and compiles("auto", "cuda")
    assert compiles("on", "cpu") and not compiles("off", "cuda")
    assert describe_compile("auto", "cpu") == "off (auto on cpu)"
    assert describe_compile("auto", "cuda") == "on (reduce-overhead, auto on cuda)"
    assert describe_compile("on", "cpu") == "on (default)"
    with pytest.raises(ValueError, match=r"compile='yes'; allowed: \['auto', 'on', 'off'\]"):
        compiles("yes", "cpu")


# -- no host synchronisation: one graph, or breaks only at a fused recurrence -------------


@pytest.mark.parametrize("arch", ["transformer", "mamba", "linear_rnn", "linear_attention"])
def test_the_solo_training_loss_traces_as_one_graph(arch):
    # a .item(), float(tensor) or Python branch on a tensor value breaks the graph here
    assert _break_reasons(_system(arch).loss, _batch(5)) == []


@pytest.mark.parametrize("arch", ["rnn", "lstm"])
def test_a_recurrent_solo_loss_breaks_only_at_its_fused_recurrence(arch):
    reasons = _break_reasons(_system(arch).loss, _batch(5))
    assert reasons and all(FUSED_RNN_BREAK in r for r in reasons), reasons


@pytest.mark.parametrize("arch", ["rnn", "lstm", "transformer"])
def test_the_population_training_losses_trace_as_one_graph(arch):
    members = [_system(arch, seed) for seed in range(2)]
    weights = stack_weights(members)
    batch = {k: torch.stack([v, _batch(5, seed=1)[k]]) for k, v in _batch(5).items()}
    losses = lambda w, b: member_losses(members[0], w, b)  # noqa: E731
    assert _break_reasons(losses, weights, batch, unrolled=True) == []


# -- compiled equals eager (aot_eager: the captured graphs, forward and backward) ---------


def _solo_step(system, loss_fn, batch) -> tuple[torch.Tensor, list[torch.Tensor]]:
    system.zero_grad(set_to_none=True)
    loss = loss_fn(batch)
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in system.parameters()]


@pytest.mark.integration  # compiles (aot_eager: 1-15 s a graph on 2 loaded cores)
@pytest.mark.parametrize("arch", ["rnn", "lstm", "transformer"])
def test_a_compiled_solo_step_equals_the_eager_one_over_lengths(arch):
    system = _system(arch)
    torch._dynamo.reset()  # no graph of an earlier test (of the same loss code) reused
    compiled = compile_loss(system.loss, "cpu", backend="aot_eager")
    counters.clear()
    for length in (5, 7, 9):  # a second length makes the length dynamic: no third graph
        eager_loss, eager_grads = _solo_step(system, system.loss, _batch(length, seed=length))
        loss, grads = _solo_step(system, compiled, _batch(length, seed=length))
        torch.testing.assert_close(loss, eager_loss, rtol=0, atol=1e-12)
        for grad, eager in zip(grads, eager_grads, strict=True):
            torch.testing.assert_close(grad, eager, rtol=0, atol=1e-12)
    if arch == "transformer":  # one frame: static at 5, then one dynamic graph for 7 and 9
        assert counters["stats"]["unique_graphs"] == 2


@pytest.mark.integration
@pytest.mark.parametrize("arch", ["rnn", "transformer"])
def test_a_compiled_population_step_equals_the_eager_one(arch):
    members = [_system(arch, seed) for seed in range(2)]
    template = members[0]
    batch = {k: torch.stack([v, _batch(6, seed=1)[k]]) for k, v in _batch(6).items()}
    eager_fn = lambda w, b: member_losses(template, w, b)  # noqa: E731
    compiled = compile_loss(eager_fn, "cpu", backend="aot_eager", unrolled=True)
    results = []
    for fn in (eager_fn, compiled):
        weights = {n: w.requires_grad_(True) for n, w in stack_weights(members).items()}
        losses = fn(weights, batch)
        losses.sum().backward()
        results.append((losses.detach(), {n: w.grad for n, w in weights.items()}))
    (eager_losses, eager_grads), (losses, grads) = results
    torch.testing.assert_close(losses, eager_losses, rtol=0, atol=1e-12)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, eager_grads[name], rtol=0, atol=1e-12)


# -- the fit and the population with --compile on (Inductor) -----------------------------

# a tiny transformer on fixed-length data (one shape: one graph), in float64
TINY_TRANSFORMER = [
    "--config",
    str(CONFIG_DIR / "signal/transformer.yaml"),
    "--model.init_args.d_model=8",
    "--model.init_args.n_layers=1",
    "--model.init_args.n_heads=2",
    "--model.init_args.d_ff=16",
    "--data.init_args.n_per_class=16",
    "--data.init_args.length=8",
    "--data.init_args.batch_size=16",
    "--trainer.max_steps=4",
    "--trainer.val_check_interval=4",
    "--trainer.check_val_every_n_epoch=null",
    "--trainer.log_every_n_steps=1",
    "--trainer.precision=64-true",
    "--trainer.enable_progress_bar=false",
    "--wandb=off",
]


def _losses(run_dir: Path) -> list[float]:
    return pd.read_csv(run_dir / "metrics.csv")["train/loss"].dropna().tolist()


@pytest.mark.integration
def test_a_compiled_fit_trains_as_the_eager_one_and_says_so(tmp_path, capsys, monkeypatch):
    # traced and autograd-compiled without code generation (aot_eager): the wiring of
    # --compile through a solo fit is what this tests; Inductor's generated code is run by
    # the population test below (a cold Inductor compile is 1-2 min on 2 loaded cores)
    def traced_only(fn, device, **options):
        return compile_loss(fn, device, **{**options, "backend": "aot_eager"})

    monkeypatch.setattr("lit_seq.systems.base.compile_loss", traced_only)
    eager = fit.cli_main([*TINY_TRANSFORMER, f"--run_dir={tmp_path / 'eager'}", "--compile=off"])
    counters.clear()
    compiled = fit.cli_main([*TINY_TRANSFORMER, f"--run_dir={tmp_path / 'on'}", "--compile=on"])
    assert counters["stats"]["unique_graphs"] >= 1  # the step did go through torch.compile
    assert "compile on (default)" in capsys.readouterr().out
    config = yaml.safe_load((tmp_path / "on" / "config.yaml").read_text())
    assert config["compile"] == "on"
    # Inductor reorders float64 sums: equal to ~1e-12 a step, not bit for bit
    torch.testing.assert_close(
        _losses(tmp_path / "on"), _losses(tmp_path / "eager"), atol=1e-9, rtol=0
    )
    for key, value in eager.metrics.items():
        assert compiled.metrics[key] == pytest.approx(value, abs=1e-9), key


@pytest.mark.integration
@pytest.mark.slow  # Inductor: 1-2 min cold on 2 loaded cores, the suite's one Inductor compile
def test_a_compiled_population_trains_as_the_eager_one(tmp_path):
    def members(label: str, choice: str) -> list[list[str]]:
        return [
            [*TINY_TRANSFORMER, f"--run_dir={tmp_path / f'{label}{k}'}", f"--seed_everything={k}"]
            + [f"--compile={choice}"]
            for k in range(2)
        ]

    eager = fit_population(members("eager", "off"))
    compiled = fit_population(members("on", "on"))
    for k, (member, reference) in enumerate(zip(compiled, eager, strict=True)):
        assert yaml.safe_load((tmp_path / f"on{k}" / "config.yaml").read_text())["compile"] == "on"
        torch.testing.assert_close(
            _losses(tmp_path / f"on{k}"), _losses(tmp_path / f"eager{k}"), atol=1e-9, rtol=0
        )
        for key, value in reference.metrics.items():
            assert member.metrics[key] == pytest.approx(value, abs=1e-9), key


# -- the grid ------------------------------------------------------------------------------


def test_a_grid_hands_its_compile_to_every_run_and_no_digest_depends_on_it(tmp_path):
    grid = write_grid(tmp_path, "g", "blocks:\n- {axes: {task: [echo], arch: [rnn]}}\n")
    for choice in ("on", "off"):
        args = [str(grid), "--out", str(tmp_path / "out"), "--compile", choice]
        [run] = plan(build_parser().parse_args(args)).runs
        assert f"--compile={choice}" in run.overrides
    # a folder made with one --compile resumes with another: the same computation
    args = ["--config", str(CONFIG_DIR / "echo/rnn.yaml")]
    on, off = (fit.check_config([*args, f"--compile={c}"]).config for c in ("on", "off"))
    assert config_digest(on) == config_digest(off)


def test_a_compiled_loss_draws_the_dropout_streams_masks_as_eager_does():
    # the stream is a module global the compiler reads (a ContextVar broke the graph)
    from lit_seq.models.dropout import dropout_stream

    torch.manual_seed(0)
    system = Transduction(
        in_features=3, out_features=3, data_max_len=24, arch="transformer", d_model=8,
        n_layers=1, n_heads=2, d_ff=16, dropout=0.3,
    ).double().train()  # fmt: skip
    batch = _batch(5)
    compiled = torch.compile(system.loss, backend="aot_eager", fullgraph=True)
    losses = []
    for step in (5, 6):  # another step: other masks, in both
        with dropout_stream(3, step):
            eager = system.loss(batch)
        with dropout_stream(3, step):
            assert compiled(batch).item() == eager.item()
        losses.append(eager.item())
    assert losses[0] != losses[1]
