"""Packed runs (``lit_seq.pack``, ``lit_seq.ablate.packing``): K fits trained as one stacked
computation, each member computing exactly what it computes alone."""

import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from lit_seq import fit
from lit_seq.ablate.grid import load_grid
from lit_seq.ablate.jobs import GridJob
from lit_seq.ablate.packing import pack_key, packs
from lit_seq.ablate.run_one import packed_fit, run_pack_and_record
from lit_seq.fit.signals import StopOnSignal, fan_out_signals
from lit_seq.models.unrolled import unrolled
from lit_seq.pack.scheduler import Pack, _Request
from lit_seq.pack.stacked import stacked_call
from lit_seq.record import read_records
from tests.helpers import CONFIG_DIR, REPO, driver, write_grid
from tests.test_wandb_files import read_runs


@pytest.mark.parametrize("cell", [nn.RNN, nn.LSTM])
@pytest.mark.parametrize("layers", [1, 2])
def test_the_unrolled_recurrence_is_the_torch_module(cell, layers):
    torch.manual_seed(0)
    module = cell(5, 7, num_layers=layers, batch_first=True).double()
    x = torch.randn(3, 9, 5, dtype=torch.float64)
    torch.testing.assert_close(unrolled(module, x), module(x)[0], rtol=0, atol=1e-12)


def test_unrolled_refuses_what_it_does_not_compute():
    with pytest.raises(ValueError, match="forward-only"):
        unrolled(nn.RNN(3, 3, batch_first=True, bidirectional=True), torch.zeros(1, 2, 3))
    with pytest.raises(ValueError, match="tanh"):
        unrolled(nn.RNN(3, 3, batch_first=True, nonlinearity="relu"), torch.zeros(1, 2, 3))


def _systems(task: str, arch: str, seeds: range):
    return [
        fit.check_config(
            ["--config", str(CONFIG_DIR / task / f"{arch}.yaml"), f"--seed_everything={s}"]
        )
        for s in seeds
    ]


@pytest.mark.parametrize(
    ("task", "arch"), [("echo", "rnn"), ("echo", "lstm"), ("signal", "transformer")]
)
def test_a_stacked_call_is_each_network_called_alone(task, arch):
    clis = _systems(task, arch, range(3))
    nets = [cli.model.net.double().train() for cli in clis]
    firsts = [next(n.parameters()).sum().item() for n in nets]
    assert len(set(firsts)) == 3  # three different initialisations
    x = torch.randn(3, 4, 12, clis[0].model.hparams.in_features, dtype=torch.float64)
    outs = stacked_call(nets, [((x[k],), {}) for k in range(3)])
    for k, net in enumerate(nets):
        torch.testing.assert_close(outs[k], net(x[k]), rtol=0, atol=1e-12)
    # and gradients reach each network's own parameters, as its own backward would
    torch.autograd.backward([o.square().sum() for o in outs])
    stacked_grads = [[p.grad.clone() for p in n.parameters()] for n in nets]
    for net in nets:
        net.zero_grad()
    for k, net in enumerate(nets):
        net(x[k]).square().sum().backward()
        for p, g in zip(net.parameters(), stacked_grads[k], strict=True):
            torch.testing.assert_close(p.grad, g, rtol=0, atol=1e-10)


def _fit_args(config: Path, run_dir: Path, seed: int, steps: int, precision: str) -> list[str]:
    return [
        "--config",
        str(config),
        f"--seed_everything={seed}",
        f"--run_dir={run_dir}",
        "--wandb=off",
        f"--trainer.max_steps={steps}",
        f"--trainer.val_check_interval={steps // 2}",
        "--trainer.log_every_n_steps=1",
        f"--trainer.precision={precision}",
        "--trainer.enable_progress_bar=false",
        "--trainer.limit_val_batches=2",
        "--trainer.limit_test_batches=2",
        "--data.init_args.n_train=512",
        "--data.init_args.n_val=64",
        "--data.init_args.n_test=64",
    ]


def _losses(run_dir: Path) -> list[float]:
    frame = pd.read_csv(run_dir / "metrics.csv")
    return frame["train/loss"].dropna().tolist()


def _solo_and_packed(tmp_path, task, arch, steps, precision, seeds=(0, 1, 2)):
    config = CONFIG_DIR / task / f"{arch}.yaml"
    for seed in seeds:
        fit.cli_main(_fit_args(config, tmp_path / f"solo{seed}", seed, steps, precision))
    pack = Pack()
    for seed in seeds:
        args = _fit_args(config, tmp_path / f"pack{seed}", seed, steps, precision)
        pack.add(f"seed{seed}", functools.partial(packed_fit, pack, args), tmp_path / f"log{seed}")
    pack.run()
    assert [m.error for m in pack.members] == [None] * len(seeds)
    return pack


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task", "arch"), [("echo", "rnn"), ("echo", "lstm"), ("echo", "transformer")]
)
def test_a_packed_member_trains_exactly_as_its_solo_run_in_float64(tmp_path, task, arch):
    steps = 50
    pack = _solo_and_packed(tmp_path, task, arch, steps, "64-true")
    # every training forward was stacked: the members really trained as one
    assert [m.stats for m in pack.members] == [{"stacked": steps, "solo": 0}] * 3
    curves = []
    for seed in range(3):
        solo, packed = _losses(tmp_path / f"solo{seed}"), _losses(tmp_path / f"pack{seed}")
        assert len(solo) == len(packed) == steps
        torch.testing.assert_close(torch.tensor(packed), torch.tensor(solo), rtol=0, atol=1e-10)
        curves.append(solo)
        a = json.loads((tmp_path / f"solo{seed}" / "metrics.json").read_text())
        b = json.loads((tmp_path / f"pack{seed}" / "metrics.json").read_text())
        assert b["metrics"].keys() == a["metrics"].keys()
        for key, value in a["metrics"].items():
            assert b["metrics"][key] == pytest.approx(value, abs=1e-10), key
        assert b["val_metrics"] == a["val_metrics"] and b["steps"] == a["steps"] == steps
        assert Path(b["best_checkpoint"]).name == Path(a["best_checkpoint"]).name
    assert curves[0] != curves[1] != curves[2]  # three different runs, not one run three times


@pytest.mark.slow
def test_a_packed_member_matches_its_solo_run_in_float32_over_the_first_steps(tmp_path):
    _solo_and_packed(tmp_path, "echo", "rnn", 10, "32-true", seeds=(0, 1))
    for seed in (0, 1):
        solo, packed = _losses(tmp_path / f"solo{seed}"), _losses(tmp_path / f"pack{seed}")
        torch.testing.assert_close(torch.tensor(packed), torch.tensor(solo), rtol=0, atol=1e-5)


def test_members_of_a_pack_keep_their_own_rng_modes_and_gradients():
    pack = Pack()

    def member(seed, dtype):
        def main():
            torch.manual_seed(seed)
            torch.set_default_dtype(dtype)
            weight = torch.ones(2, dtype=torch.float64, requires_grad=True)
            draws, dtypes, grads = [], [], []
            for step in range(3):
                draws.append(torch.rand(()).item())
                loss = (weight * (seed + step)).sum()
                pack.request(_Request(pack.current, "backward", loss=loss))  # one backward
                dtypes.append(torch.get_default_dtype())
                grads.append(weight.grad.tolist())
                weight.grad = None
            return draws, dtypes, grads

        return main

    pack.add("a", member(1, torch.float64))
    pack.add("b", member(2, torch.float32))
    before = torch.get_default_dtype()
    pack.run()
    dtypes_of = (torch.float64, torch.float32)
    for member, seed, dtype in zip(pack.members, (1, 2), dtypes_of, strict=True):
        draws, dtypes, grads = member.result
        torch.manual_seed(seed)
        assert draws == [torch.rand((), dtype=dtype).item() for _ in range(3)]  # its own stream
        assert dtypes == [dtype] * 3
        assert grads == [[seed + step] * 2 for step in range(3)]  # its own gradient only
    assert torch.get_default_dtype() == before  # the hub's own state, restored


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
    assert by_block["drop"] == {""}  # dropout draws random masks: never packed
    units = packs(runs, "on", "cpu")
    assert sorted(len(u) for u in units) == [1, 1, 2, 4]
    assert packs(runs, "off", "cpu") == [[r] for r in runs]
    assert packs(runs, "on", "cpu", max_size=3)[0] == runs[:3]
    with pytest.raises(ValueError, match="allowed"):
        packs(runs, "sometimes", "cpu")


def test_auto_packs_only_the_families_measured_to_gain(tmp_path, monkeypatch):
    runs = _grid(tmp_path, "seeds: [0, 1]\nblocks:\n- {axes: {task: [echo], arch: [rnn, lstm]}}\n")
    monkeypatch.setattr("lit_seq.ablate.packing.AUTO_FAMILIES", {"cpu": ("rnn",)})
    assert sorted(len(u) for u in packs(runs, "auto", "cpu")) == [1, 1, 2]
    assert sorted(len(u) for u in packs(runs, "auto", "cuda")) == [1, 1, 1, 1]


def test_a_plugin_or_bidirectional_backbone_is_never_packed():
    cli = fit.check_config(
        [
            "--config",
            str(CONFIG_DIR / "signal" / "rnn.yaml"),
            "--model.init_args.bidirectional=true",
        ]
    )
    assert pack_key(cli) == ""


# -- packs in a grid ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_failing_member_is_recorded_failed_and_the_others_finish(tmp_path):
    # lr 1e30 diverges to NaN mid-training (a real failure), in the same pack as good runs
    runs = _grid(
        tmp_path,
        "seeds: [0, 1]\nblocks:\n- {axes: {task: [echo], arch: [transformer], lr: [1.0e+30, 0.003]}}\n",
    )
    [unit] = packs(runs, "on", "cpu")
    out = tmp_path / "out"
    job = GridJob(out, "packs", "offline", pack="on")
    handed = []
    run_pack_and_record(unit, job, "test", handed.append)
    records = read_records(out)
    assert sorted(r.run_id for r in handed) == sorted(r.run_id for r in runs) == sorted(records)
    for record in records.values():
        assert record.pack_size == 4 and Path(record.log).is_file()
        if record.axes["lr"] == 1e30:
            assert record.status == "failed" and record.error.startswith("FloatingPointError")
        else:
            assert record.ok and record.steps == 6
    # each member has its own offline W&B run, finished or failed as it ended
    for record in records.values():
        [view] = read_runs(Path(record.run_dir))
        assert view.config["run_id"] == record.run_id
        assert view.state == ("finished" if record.ok else "failed")
        if record.ok:
            assert view.summary["steps"] == record.steps


@pytest.mark.integration
@pytest.mark.slow
def test_a_killed_packed_grid_resumes_with_nothing_lost_or_duplicated(tmp_path):
    # one pack: the 6-step seeds finish first and leave it, the long ones are still training
    body = """seeds: [0, 1, 2]
blocks:
- {name: short, axes: {task: [echo], arch: [rnn]}}
- {name: long, axes: {task: [echo], arch: [rnn], trainer.max_steps: [600],
                      trainer.val_check_interval: [300]}}
"""
    grid = write_grid(tmp_path, "killpack", body)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "lit_seq.ablate", str(grid), "--out", str(out)]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    proc = subprocess.Popen([*command, "--pack", "on", "--wandb", "off"], cwd=REPO, **quiet)
    deadline = time.time() + 180
    try:
        while len(list((out / "records").glob("short*.json"))) < 3:
            assert proc.poll() is None and time.time() < deadline, "no short run finished"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    finished = {p.name: p.read_bytes() for p in (out / "records").glob("*.json")}
    assert sorted(finished) == sorted(
        f"short__task=echo__arch=rnn__seed={s}.json" for s in range(3)
    )
    assert {json.loads(c)["pack_size"] for c in finished.values()} == {6}

    result = driver(grid, "--out", out, "--pack", "on", "--wandb", "off", "--dry-run")
    assert "3 done, 3 to run" in result.stdout
    result = driver(grid, "--out", out, "--pack", "on", "--wandb", "off", timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    ids = [r.run_id for r in load_grid(grid)[1]]
    assert sorted(p.name for p in (out / "records").iterdir()) == sorted(f"{i}.json" for i in ids)
    for name, content in finished.items():
        assert (out / "records" / name).read_bytes() == content  # kept, not re-run
    assert set(pd.read_csv(out / "runs.csv")["status"]) == {"ok"}


def test_pack_on_is_refused_with_ray(capsys):
    from lit_seq.ablate.__main__ import main

    with pytest.raises(SystemExit):
        main(["ablations/smoke.yaml", "--executor", "ray", "--pack", "on"])
    assert "--pack on needs --executor local" in capsys.readouterr().err


def test_a_signal_stops_every_member_of_a_pack(tmp_path):
    previous = signal.getsignal(signal.SIGTERM)
    stoppers = [StopOnSignal(tmp_path / f"{i}.ckpt") for i in range(3)]
    with fan_out_signals():
        # two members' fits (nested as their greenlets nest them), one fit outside the pack
        with stoppers[0].handling_signals(), stoppers[1].handling_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        assert [s.signum for s in stoppers] == [signal.SIGTERM, signal.SIGTERM, None]
    assert signal.getsignal(signal.SIGTERM) is previous  # the handler before the pack


@pytest.mark.slow
def test_sigterm_stops_every_member_of_a_running_pack_at_a_step_boundary(tmp_path):
    runs = _grid(
        tmp_path,
        "seeds: [0, 1, 2]\nblocks:\n- {axes: {task: [echo], arch: [rnn], "
        "trainer.max_steps: [100000], trainer.val_check_interval: [50000]}}\n",
    )
    [unit] = packs(runs, "on", "cpu")
    job = GridJob(tmp_path / "out", "packs", "off", pack="on")
    # SIGTERM to this process once every member trains: the pack's handler notes it for all
    timer = threading.Timer(8.0, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        records = []
        run_pack_and_record(unit, job, "test", records.append)
    finally:
        timer.cancel()
    assert len(records) == 3
    for record in records:
        assert record.status == "failed" and "stopped by SIGTERM at step" in record.error
        step = int(record.error.split("at step ")[1].split(",")[0])
        assert 0 < step < 100000
        last = torch.load(
            Path(record.run_dir) / "checkpoints" / "last.ckpt",
            map_location="cpu",
            weights_only=False,
        )
        assert last["global_step"] == step  # saved where it stopped: a resume goes on from there
