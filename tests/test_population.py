"""Population training (``lit_seq.population``, ``lit_seq.ablate.packing``): K runs of one
shape trained as one model in one loop, each member computing what its solo run computes
and recorded as the run it is."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from lit_seq import fit
from lit_seq.ablate.__main__ import main
from lit_seq.ablate.grid import load_grid
from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.packing import pack_key, packs
from lit_seq.ablate.run_one import run_pack_and_record
from lit_seq.data.loaders import TensorDictDataset, batch_loader
from lit_seq.evaluate import evaluate
from lit_seq.fit.signals import FitInterrupted
from lit_seq.population.loader import StackedLoader, stack_batches
from lit_seq.population.optimizer import MemberHyper, PopulationAdam
from lit_seq.population.train import fit_population
from lit_seq.record import read_records
from lit_seq.systems.schedules import schedule_factor
from tests.helpers import CONFIG_DIR, REPO, sigterm_once_file_exists, write_grid
from tests.test_wandb_files import read_runs

# -- the optimizer step -------------------------------------------------------------------


def test_one_population_step_is_each_members_torch_adam_step_clipped_by_its_own_norm():
    torch.manual_seed(0)
    shapes = [(5, 3), (3,)]
    kinds = [
        ("cosine", True, 0.0, 1e-2),
        ("noam", False, 0.1, 3e-3),
        ("constant", True, 0.01, 5e-2),
    ]
    hypers = [
        MemberHyper(lr=lr, weight_decay=wd, decoupled=dec, factor=schedule_factor(s, 5, 30))
        for s, dec, wd, lr in kinds
    ]
    start = [[torch.randn(s, dtype=torch.float64) for s in shapes] for _ in hypers]
    stacked = [torch.nn.Parameter(torch.stack([m[i] for m in start])) for i in range(len(shapes))]
    population = PopulationAdam(stacked, hypers, clip_norm=1.0)
    solo = []
    for member, hyper in zip(start, hypers, strict=True):
        params = [torch.nn.Parameter(t.clone()) for t in member]
        cls = torch.optim.AdamW if hyper.decoupled else torch.optim.Adam
        opt = cls(params, lr=hyper.lr, weight_decay=hyper.weight_decay)
        solo.append((params, opt, torch.optim.lr_scheduler.LambdaLR(opt, hyper.factor)))
    for _ in range(30):
        grads = [[torch.randn(s, dtype=torch.float64) * 3 for s in shapes] for _ in hypers]
        for i, p in enumerate(stacked):
            p.grad = torch.stack([g[i] for g in grads])
        population.clip_gradients()
        population.step()
        for (params, opt, schedule), member_grads in zip(solo, grads, strict=True):
            for p, g in zip(params, member_grads, strict=True):
                p.grad = g.clone()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            schedule.step()
    for k, (params, _, _) in enumerate(solo):
        for i, p in enumerate(params):
            torch.testing.assert_close(stacked[i][k], p, rtol=0, atol=1e-14)


def test_a_stopped_member_keeps_its_weights_bit_for_bit():
    hyper = MemberHyper(lr=0.1, weight_decay=0.1, decoupled=True, factor=lambda n: 1.0)
    param = torch.nn.Parameter(torch.randn(2, 4, dtype=torch.float64))
    population = PopulationAdam([param], [hyper, hyper])
    population.stop(1)
    before = param.detach().clone()
    param.grad = torch.full_like(param, float("nan"))
    param.grad[0] = 1.0
    population.step()
    assert torch.equal(param[1], before[1]) and not torch.equal(param[0], before[0])
    assert population.steps.tolist() == [1, 0]


def test_member_batches_must_share_their_shapes():
    a = {"x": torch.zeros(4, 10)}
    assert stack_batches([a, a])["x"].shape == (2, 4, 10)
    with pytest.raises(ValueError, match="batch key 'x': members' shapes differ"):
        stack_batches([a, {"x": torch.zeros(4, 12)}])
    with pytest.raises(ValueError, match="one length"):
        StackedLoader([[a], [a, a]])


def test_the_stacked_loader_yields_each_members_loader_batches_and_positions():
    # it reads the members' samplers and datasets itself: the batches their loaders give
    data = [{"x": torch.arange(10.0 * k, 10.0 * k + 10).unsqueeze(1)} for k in range(2)]

    def loaders():
        return [batch_loader(TensorDictDataset(d), 4, True, seed=k) for k, d in enumerate(data)]

    stacked, expected = StackedLoader(loaders()), loaders()
    for epoch in range(2):
        stacked.sampler.set_epoch(epoch)
        for loader in expected:
            loader.sampler.set_epoch(epoch)
        for batch, *theirs in zip(stacked, *expected, strict=True):
            assert torch.equal(batch["x"], torch.stack([b["x"] for b in theirs]))
    assert stacked.state_dict() == {"members": [lo.state_dict() for lo in expected]}


# -- which runs pack ----------------------------------------------------------------------


def _grid(tmp_path, body: str):
    return load_grid(write_grid(tmp_path, "packs", body))[1]


def test_seeds_and_learning_rates_pack_other_shapes_do_not(tmp_path):
    runs = _grid(
        tmp_path,
        """seeds: [0, 1]
blocks:
- {name: a, axes: {task: [echo], arch: [rnn], lr: [0.001, 0.01]}}
- {name: deep, axes: {task: [echo], arch: [rnn], n_layers: [2]}}
- {name: drop, axes: {task: [echo], arch: [rnn], dropout: [0.1], n_layers: [2]}}
""",
    )
    by_block = {}
    for run in runs:
        by_block.setdefault(run.block, set()).add(run.pack_key)
    assert len(by_block["a"]) == 1 and by_block["a"] != by_block["deep"]
    assert by_block["drop"] == {""}  # a fused recurrence's dropout draws torch's masks
    assert sorted(len(u) for u in packs(runs, "on", "cpu")) == [1, 1, 2, 4]
    assert packs(runs, "off", "cpu") == [[r] for r in runs]
    assert packs(runs, "on", "cpu", max_size=3)[0] == runs[:3]
    with pytest.raises(ValueError, match="allowed"):
        packs(runs, "sometimes", "cpu")


def test_auto_packs_only_the_families_measured_to_gain(tmp_path, monkeypatch):
    runs = _grid(tmp_path, "seeds: [0, 1]\nblocks:\n- {axes: {task: [echo], arch: [rnn, lstm]}}\n")
    monkeypatch.setattr("lit_seq.ablate.packing.AUTO_FAMILIES", {"cpu": ("echo/rnn",)})
    assert sorted(len(u) for u in packs(runs, "auto", "cpu")) == [1, 1, 2]
    assert sorted(len(u) for u in packs(runs, "auto", "cuda")) == [1, 1, 1, 1]


@pytest.mark.parametrize(
    ("config", "override"),
    [
        ("signal/rnn.yaml", "--model.init_args.bidirectional=true"),
        ("seq2seq/rnn.yaml", "--seed_everything=0"),  # the encoder-decoder's own nn.RNN
        ("signal/transformer.yaml", "--model.init_args.pos_mode=randomized"),
        # a fixed curriculum's batch lengths come from each member's own shuffle
        ("deletang/parity_check/rnn.yaml", "--data.init_args.sampling=fixed"),
    ],
)
def test_what_cannot_train_stacked_is_never_packed(config, override):
    cli = fit.check_config(["--config", str(CONFIG_DIR / config), override])
    assert pack_key(cli) == ""


# -- a member is its solo run -------------------------------------------------------------


def _args(config: str, run_dir: Path, seed: int, *extra: str, wandb: str = "off") -> list[str]:
    return [
        "--config",
        str(CONFIG_DIR / config),
        f"--run_dir={run_dir}",
        f"--seed_everything={seed}",
        "--trainer.max_steps=20",
        "--trainer.val_check_interval=10",
        "--trainer.check_val_every_n_epoch=null",
        "--trainer.log_every_n_steps=1",
        "--trainer.precision=64-true",
        "--trainer.enable_progress_bar=false",
        f"--wandb={wandb}",
        *extra,
    ]


def _losses(run_dir: Path) -> list[float]:
    frame = pd.read_csv(run_dir / "metrics.csv")
    return frame["train/loss"].dropna().tolist()


def _assert_equal_runs(member, solo, member_dir: Path, solo_dir: Path, tol: float = 1e-10):
    assert member.steps == solo.steps
    assert Path(member.best_checkpoint).name == Path(solo.best_checkpoint).name
    assert member.metrics.keys() == solo.metrics.keys()
    for key in solo.metrics:
        assert member.metrics[key] == pytest.approx(solo.metrics[key], abs=tol), key
    for key in solo.val_metrics:
        assert member.val_metrics[key] == pytest.approx(solo.val_metrics[key], abs=tol), key
    torch.testing.assert_close(_losses(member_dir), _losses(solo_dir), rtol=0, atol=tol)


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize(
    "config",
    ["echo/rnn.yaml", "echo/lstm.yaml", "signal/transformer.yaml", "seq2seq/transformer.yaml"],
)
def test_a_member_trains_exactly_as_its_solo_run_in_float64(tmp_path, config):
    lrs = ["--model.init_args.lr=0.01", "--model.init_args.lr=0.003"]
    # smaller evaluation sets (equal is equal at any size): ~100 examples each; signal sets
    # them per class (100 a class, three classes, at each of its test lengths)
    small = ["--data.init_args.n_val=100", "--data.init_args.n_test=100"]
    small = ["--data.init_args.n_eval_per_class=34"] if config.startswith("signal") else small
    members = [_args(config, tmp_path / f"m{k}", k, lrs[k], *small) for k in range(2)]
    outcomes = fit_population(members)
    for k, outcome in enumerate(outcomes):
        solo = fit.cli_main(_args(config, tmp_path / f"s{k}", k, lrs[k], *small))
        _assert_equal_runs(outcome, solo, tmp_path / f"m{k}", tmp_path / f"s{k}")
        # every file a solo fit writes, and its checkpoint scores as its record says
        names = {p.name for p in (tmp_path / f"s{k}").iterdir()}
        assert names <= {p.name for p in (tmp_path / f"m{k}").iterdir()}
    _, scored = evaluate(tmp_path / "m0")
    for key, value in scored["metrics"].items():
        assert value == pytest.approx(outcomes[0].metrics[key], abs=1e-6), key


@pytest.mark.integration
def test_fresh_batches_over_a_curriculum_train_as_a_population_equal_to_solo_runs(tmp_path):
    # Delétang et al.'s protocol: batch s has one length, drawn from s alone, for every seed
    small = [
        "--data.init_args.length=8",
        "--data.init_args.gen_factors=[2]",
        "--data.init_args.n_val=64",
        "--data.init_args.n_test=32",
        "--range_eval.max_factor=2",
        "--range_eval.step=4",
        "--range_eval.n=32",
    ]
    config = "deletang/reverse_string/lstm.yaml"
    lrs = ["--model.init_args.lr=0.0005", "--model.init_args.lr=0.0001"]
    members = [_args(config, tmp_path / f"m{k}", k, lrs[k], *small) for k in range(2)]
    assert pack_key(fit.check_config(members[0])) == pack_key(fit.check_config(members[1])) != ""
    for k, outcome in enumerate(fit_population(members)):
        solo = fit.cli_main(_args(config, tmp_path / f"s{k}", k, lrs[k], *small))
        _assert_equal_runs(outcome, solo, tmp_path / f"m{k}", tmp_path / f"s{k}")
        assert "range_ood/acc" in outcome.metrics


@pytest.mark.integration
def test_a_member_stopped_at_its_target_equals_its_solo_run_stopped_there(tmp_path):
    target = ["--target.metric=val/acc", "--target.threshold=0.6"]
    slow = "--model.init_args.lr=0.0001"  # never reaches it in 20 steps
    member_args = [
        _args("echo/rnn.yaml", tmp_path / "m0", 0, *target),
        _args("echo/rnn.yaml", tmp_path / "m1", 1, *target, slow),
    ]
    fast, late = fit_population(member_args)
    solo = fit.cli_main(_args("echo/rnn.yaml", tmp_path / "s0", 0, *target))
    assert solo.target_reached and solo.steps == 10  # it stops at its first validation
    _assert_equal_runs(fast, solo, tmp_path / "m0", tmp_path / "s0")
    assert fast.target_step == solo.target_step
    solo_late = fit.cli_main(_args("echo/rnn.yaml", tmp_path / "s1", 1, *target, slow))
    _assert_equal_runs(late, solo_late, tmp_path / "m1", tmp_path / "s1")


@pytest.mark.integration
def test_a_diverging_member_fails_and_the_others_finish_as_their_solo_runs(tmp_path):
    # lr 1e300 overflows to inf, then NaN, in training (a real failure), beside a good run
    huge = "--model.init_args.lr=1e300"
    bad = _args("echo/transformer.yaml", tmp_path / "bad", 0, huge, wandb="offline")
    good = _args("echo/transformer.yaml", tmp_path / "good", 1, wandb="offline")
    failed, ok = fit_population([bad, good])
    assert isinstance(failed, FloatingPointError) and "training diverged" in str(failed)
    solo = fit.cli_main(_args("echo/transformer.yaml", tmp_path / "solo", 1))
    _assert_equal_runs(ok, solo, tmp_path / "good", tmp_path / "solo")
    # each member has its own offline W&B run, finished or failed as it ended
    [bad_view] = read_runs(tmp_path / "bad")
    [good_view] = read_runs(tmp_path / "good")
    assert (bad_view.state, good_view.state) == ("failed", "finished")
    assert good_view.summary["steps"] == ok.steps


@pytest.mark.integration
def test_a_pack_in_a_grid_records_every_member(tmp_path):
    runs = _grid(tmp_path, "seeds: [0, 1]\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n")
    [unit] = packs(runs, "on", "cpu")
    out = tmp_path / "out"
    handed = []
    run_pack_and_record(unit, GridJob(out, "packs", "off", pack="on"), "test", handed.append)
    records = read_records(out)
    assert sorted(r.run_id for r in handed) == sorted(r.run_id for r in runs) == sorted(records)
    for record in records.values():
        assert record.ok and record.pack_size == 2 and Path(record.log).is_file()
        assert json.loads((Path(record.run_dir) / "metrics.json").read_text())["steps"] > 0


@pytest.mark.integration
@pytest.mark.slow
def test_a_killed_packed_grid_resumes_with_nothing_lost_or_duplicated(tmp_path, capsys):
    # two packs on two workers: the short one finishes, the long one is killed mid-training
    body = """seeds: [0, 1, 2]
blocks:
- {name: short, axes: {task: [echo], arch: [rnn]}}
- {name: long, axes: {task: [echo], arch: [rnn], trainer.max_steps: [800],
                      trainer.val_check_interval: [400]}}
"""
    grid = write_grid(tmp_path, "killpack", body)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "lit_seq.ablate", str(grid), "--out", str(out)]
    flags = ["--pack", "on", "--wandb", "off"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    proc = subprocess.Popen([*command, *flags, "--workers", "2"], cwd=REPO, **quiet)
    deadline = time.time() + 240
    try:
        while len(list((out / "records").glob("short*.json"))) < 3:
            assert proc.poll() is None and time.time() < deadline, "the short pack never ended"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    finished = {p.name: p.read_bytes() for p in (out / "records").glob("*.json")}
    assert sorted(finished) == sorted(
        f"short__task=echo__arch=rnn__seed={s}.json" for s in range(3)
    )
    assert {json.loads(c)["pack_size"] for c in finished.values()} == {3}

    # the resume is the driver's code in this process (only the kill needs a process of
    # its own); one worker, as the one pack left takes one
    rerun = [str(grid), "--out", str(out), *flags, "--workers", "1"]
    assert main([*rerun, "--dry-run"]) == 0
    assert "3 done, 3 to run" in capsys.readouterr().out
    assert main(rerun) == 0
    ids = [r.run_id for r in load_grid(grid)[1]]
    assert sorted(p.name for p in (out / "records").iterdir()) == sorted(f"{i}.json" for i in ids)
    for name, content in finished.items():
        assert (out / "records" / name).read_bytes() == content  # kept, not re-run
    assert set(pd.read_csv(out / "runs.csv")["status"]) == {"ok"}


@pytest.mark.integration
def test_sigterm_stops_a_population_with_each_members_last_checkpoint_resumable_solo(tmp_path):
    # SIGTERM once the members are training: every member stops at one step boundary with its
    # last.ckpt saved there, and a solo fit resumes from it (--ckpt_path): the solo format
    members = [
        _args("echo/rnn.yaml", tmp_path / f"m{k}", k, "--trainer.max_steps=200") for k in range(2)
    ]

    killer = sigterm_once_file_exists(tmp_path / "m0" / "checkpoints" / "last.ckpt")
    outcomes = fit_population(members)
    killer.join()
    assert all(isinstance(o, FitInterrupted) for o in outcomes), outcomes
    steps = {o.step for o in outcomes}
    assert len(steps) == 1 and next(iter(steps)) > 0  # one boundary for all
    for k in range(2):
        saved = torch.load(tmp_path / f"m{k}" / "checkpoints" / "last.ckpt", weights_only=False)
        assert saved["global_step"] == outcomes[k].step
    resumed = fit.cli_main([*members[0], "--ckpt_path=last"])
    whole = fit.cli_main(_args("echo/rnn.yaml", tmp_path / "solo", 0, "--trainer.max_steps=200"))
    # a solo fit resumed from its own last.ckpt moves by ~2e-9 at its first resumed step in
    # float64 (measured): that much, not more
    _assert_equal_runs(resumed, whole, tmp_path / "m0", tmp_path / "solo", tol=1e-7)
