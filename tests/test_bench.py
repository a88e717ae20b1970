"""The benchmark measures what it claims: same data, same model, documented output.

No timing is asserted here: the numbers depend on the machine and its load.
"""

import copy
import json
import math

import pytest
import torch

from lit_seq.bench import __main__ as bench_main
from lit_seq.bench import grid, memory, overhead, quality, seed_recipes
from lit_seq.bench.common import quiet_fit
from lit_seq.data import echo_targets, parity_sum_targets, seq2seq_targets, sine_waves

# ---- the seed-style generators compute what lit_seq's vectorised ones compute ---------


def test_parity_sum_loop_matches_vectorised_targets():
    values = torch.randint(1, 11, (6, 13), generator=torch.Generator().manual_seed(0))
    x, y = seed_recipes.parity_sum_loop(values)
    assert torch.equal(y, parity_sum_targets(values).float())
    assert torch.equal(x[..., 0], values.float())
    assert torch.equal(x[..., 1], (torch.arange(13) % 2).float().expand(6, 13))
    # SPEC worked examples
    for seq, want in (
        ([1, 2, 3, 4, 5], [1, 2, 4, 6, 9]),
        ([1, 5, 2, 1, 5, 1, 3], [1, 5, 3, 6, 8, 7, 11]),
    ):
        assert seed_recipes.parity_sum_loop(torch.tensor([seq]))[1].tolist() == [want]


@pytest.mark.parametrize("lag", [0, 1, 2, 5])
def test_echo_loop_matches_vectorised_targets(lag):
    bits, y = seed_recipes.echo_data_loop(20, 9, lag, seed=lag)
    assert torch.equal(y, echo_targets(bits, lag))
    assert seed_recipes.echo_targets_loop([1, 0, 1, 1, 0], 2).tolist() == [0, 0, 1, 0, 1]


@pytest.mark.parametrize("op", ["copy", "reverse", "sort"])
def test_seq2seq_loop_matches_vectorised_targets(op):
    src, tgt = seed_recipes.seq2seq_data_loop(30, 2, 8, vocab=6, op=op)
    lengths = (src != 0).sum(dim=1)
    assert torch.equal(tgt, seq2seq_targets(src, lengths, op))


def test_signal_loop_draws_the_same_sines_as_lit_seq():
    n_per_class, length, freqs = 4, 16, (1.0, 2.0, 3.0)
    x, y = seed_recipes.signal_data_loop(n_per_class, length, freqs, noise=0.0, seed=3)
    # replay the loop's draws: per example one phase, then the (here zero-weighted) noise
    gen = torch.Generator().manual_seed(3)
    phases = []
    for _ in range(n_per_class * len(freqs)):
        phases.append(torch.rand(1, generator=gen) * 2 * math.pi)
        torch.randn(length, generator=gen)
    order = torch.randperm(len(phases), generator=gen)
    labels = torch.arange(len(freqs)).repeat_interleave(n_per_class)
    want = sine_waves(torch.tensor(freqs)[labels], torch.cat(phases), length, window=length)
    assert torch.equal(y, labels[order])
    torch.testing.assert_close(x, want[order], atol=1e-5, rtol=0)


def test_seed_summing_transformer_has_the_seeds_parameter_count():
    model = seed_recipes.SeedSummingTransformer()
    assert sum(p.numel() for p in model.parameters()) == 1_190_145  # printed by seed 002


# ---- the compared loops train the same model ----------------------------------------


@pytest.mark.parametrize(
    "task,arch", [("signal", "transformer"), ("parity_sum", "lstm"), ("echo", "rnn")]
)
@pytest.mark.integration
def test_hand_loop_and_fit_make_the_same_updates(task, arch, tmp_path):
    steps = 3
    with quiet_fit():
        cli = overhead.build(
            task, arch, steps, tmp_path / "run", "--trainer.enable_progress_bar=false"
        )
    overhead.prepare_data(cli)
    start = {k: v.clone() for k, v in cli.model.net.state_dict().items()}
    hand_model = copy.deepcopy(cli.model)
    plain_model = copy.deepcopy(cli.model)
    with quiet_fit():
        marks, _ = overhead.lit_loop(cli)
        hand_marks, _ = overhead.hand_loop(
            hand_model, cli.datamodule, steps, cli.trainer.gradient_clip_val, "32-true"
        )
        overhead.plain_trainer_loop(plain_model, cli.datamodule, steps, cli.trainer)
    assert len(marks) == len(hand_marks) == steps + 1
    after = cli.model.net.state_dict()
    assert any(not torch.equal(after[k], start[k]) for k in start)  # it did train
    for other in (hand_model, plain_model):
        for key, value in other.net.state_dict().items():
            torch.testing.assert_close(value, after[key], atol=1e-5, rtol=1e-4, msg=key)


# ---- the command and its JSON --------------------------------------------------------


@pytest.mark.integration
@pytest.mark.slow
def test_quick_bench_writes_every_documented_row(tmp_path):
    out = tmp_path / "bench.json"
    code = bench_main.main(["--quick", "--sections", "datagen,overhead", "--out", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    assert {"meta", "datagen", "overhead"} <= set(result)
    assert result["meta"]["quick"] is True
    assert {r["task"] for r in result["datagen"]["rows"]} == {
        "signal",
        "parity_sum",
        "echo",
        "seq2seq",
    }
    for row in result["datagen"]["rows"]:
        assert row["ratio"] > 0 and row["examples"] > 0
    pairs = {(r["task"], r["arch"]) for r in result["overhead"]["rows"]}
    assert len(pairs) == 12
    for row in result["overhead"]["rows"]:
        for key in ("ratio", "cpu_ratio", "trainer_ratio", "fit_ratio"):
            assert row[key] > 0
        assert isinstance(row["passed"], bool)


def test_unknown_section_is_refused(capsys):
    with pytest.raises(SystemExit):
        bench_main.main(["--sections", "overhead,speed"])
    assert "speed" in capsys.readouterr().err


def test_grid_section_runs_the_shipped_grid(monkeypatch, tmp_path):
    calls = []

    def fake_run_grid(path, out_dir, workers, timeout):
        calls.append((path, workers))
        return {"workers": workers, "seconds": 1.0, "exit_code": 0}

    monkeypatch.setattr(grid, "run_grid", fake_run_grid)
    result = grid.run(True, tmp_path)
    assert [workers for _, workers in calls] == [1, 2]
    assert all(path.is_absolute() and path.is_file() for path, _ in calls)
    assert result["grid"] == "ablations/smoke.yaml"  # the same in a checkout and any install
    assert result["efficiency"] == 0.5 and result["status"] == "ok"


@pytest.mark.integration
def test_target_clock_and_seed_fields_for_one_quality_row(tmp_path):
    lit = quality.lit_seq_run("echo", "rnn", 1.0, tmp_path / "run", quick=True)
    assert lit["steps"] == 20 and 0.0 <= lit["test_metric"] <= 1.0
    assert [step for step, _, _ in lit["val_history"]] == [10, 20]
    assert (lit["seconds_to_target"] is None) == (lit["step_at_target"] is None)
    seed = quality.seed_run("echo", "rnn", quick=True)
    assert seed["seed_seconds"] > 0 and 0.0 <= seed["seed_metric"] <= 1.0


@pytest.mark.integration
@pytest.mark.slow
def test_memory_section_reports_worker_growth(tmp_path):
    result = memory.run(True, tmp_path)
    assert len(result["worker_rss_mb"]) == 5
    assert result["rows"][0]["peak_rss_mb"] > 0
    assert math.isfinite(result["rows"][1]["growth"])


@pytest.mark.integration
@pytest.mark.slow
def test_the_pack_section_compares_packed_and_sequential_runs_of_one_family(tmp_path):
    from lit_seq.bench import pack

    result = pack.run(quick=True, workdir=tmp_path, families=[("echo", "rnn")])
    rows = result["rows"]
    assert [(r["task"], r["arch"], r["k"]) for r in rows] == [
        ("echo", "rnn", 1),
        ("echo", "rnn", 3),
    ]
    alone, packed = rows
    # float32: a population adds in another order than a solo run, by rounding only
    assert alone["first_loss_diff"] < 1e-5 and packed["first_loss_diff"] < 1e-5
    assert packed["float64_diff"] < 1e-9 and result["passed"]  # float64: its solo run
    assert packed["loop_speedup"] > 0
    assert packed["solo_s"] > 0 and packed["speedup"] == pytest.approx(
        packed["solo_s"] / packed["packed_s"], rel=0.02
    )


@pytest.mark.integration
def test_the_pack_step_section_folds_attention_into_one_call_whatever_k(tmp_path):
    from lit_seq.bench import pack_step

    result = pack_step.run(quick=True, workdir=tmp_path)
    one, three = result["rows"]
    assert (one["k"], three["k"]) == (1, 3) and result["passed"]
    # folded: the same ops for 1 member or 3; vmap's loop over members: more with K
    assert one["folded_ops"] == three["folded_ops"] < three["looped_ops"]
    assert three["looped_ops"] > one["looped_ops"]
    assert min(three["folded_ms"], three["looped_ms"], three["solo_ms"]) > 0


def test_the_deletang_step_it_times_is_their_training_step():
    """One timed step is loss, backward, clipping at 1.0 and Adam: the parameters move and
    the gradient it applied has a global norm of at most 1.0, as their optimizer's."""
    from lit_seq.bench import deletang_step

    torch.manual_seed(0)
    model = deletang_step._model("rnn")
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
    batch = deletang_step._batch(10)
    assert batch["x"].shape[:2] == (deletang_step.BATCH, 10) and batch["y"].shape[1] == 10
    before = [p.detach().clone() for p in model.parameters()]
    seconds = deletang_step._step(model, optimizer, batch)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    assert seconds > 0 and float(norm) <= deletang_step.CLIP + 1e-5
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters(), strict=True))
