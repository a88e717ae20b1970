"""The branches only a GPU takes, run on the CPU through the same code, the device (or the
machine's GPU count) passed in as an argument.

CONTRIBUTING ("GPU branches and the CPU tests that stand in for them") lists which test here
stands in for which branch; ``tests/test_gpu.py`` runs the GPU side where there is one.
"""

import copy
import time
from types import SimpleNamespace

import pytest
import torch
from lightning.pytorch.plugins.precision import MixedPrecision

from lit_seq.bench import overhead
from lit_seq.bench.common import quiet_fit, sync, work_clock
from lit_seq.fit import build_cli, check_config, run
from lit_seq.fit.checkpoints import DeviceRng, rng_states, set_rng_states
from lit_seq.fit.input_checks import check_precision, check_trainer
from lit_seq.population.loader import PopulationData
from lit_seq.population.train import fit_population
from lit_seq.systems.optimizers import build_optimizer, optimizer_options
from lit_seq.util.devices import (
    accelerator_type,
    default_precision,
    matmul_precision,
    visible_gpu_ids,
    worker_gpu,
)
from tests.helpers import REPO, TINY

BF16_CLIPPED = ["--trainer.precision=bf16-mixed", "--trainer.gradient_clip_val=1.0"]


def _config(name: str) -> str:
    return str(REPO / "configs" / f"{name}.yaml")


def _kernels(optimizer: torch.optim.Optimizer) -> dict[str, bool]:
    """The kernel options an optimizer was built with, as :func:`optimizer_options` says them."""
    return {k: True for k in ("fused", "foreach") if optimizer.defaults.get(k)}


def _fused_runs_on_cpu() -> bool:
    """Whether this torch has fused Adam for CPU parameters (torch >= 2.4)."""
    try:
        torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], fused=True)
    except RuntimeError:
        return False
    return True


# ---- the optimizer's kernels (systems/optimizers.py: optimizer_options) ---------------------


# Guards the H200 fault fixed in commit 1349981: a clipped run on a GPU was given fused Adam
# (base.py then chose ``fused`` on ``device.type == "cuda"`` alone), and Lightning's
# mixed-precision plugin refuses to clip an optimizer that unscales its own gradients: every
# clipped solo fit failed. On that code the ("cuda", True) row gives {"fused": True}.
@pytest.mark.parametrize(
    ("device_type", "clips", "options"),
    [
        ("cuda", True, {"foreach": True}),
        ("cuda", False, {"fused": True}),
        ("cpu", True, {}),
        ("cpu", False, {}),
    ],
)
def test_the_optimizer_kernels_follow_the_device_and_the_clipping(device_type, clips, options):
    assert optimizer_options(device_type, clips) == options


@pytest.mark.parametrize("clips", [True, False])
def test_a_cpu_run_builds_its_optimizer_with_torchs_defaults(clips):
    net = torch.nn.Linear(3, 2)
    hp = SimpleNamespace(optimizer="adamw", lr=1e-3, weight_decay=0.1, schedule="constant")
    hp.warmup_steps = 0
    optimizer, _ = build_optimizer(net, hp, 10, torch.device("cpu"), clips)
    assert isinstance(optimizer, torch.optim.AdamW) and _kernels(optimizer) == {}


@pytest.mark.skipif(not _fused_runs_on_cpu(), reason="fused Adam on CPU needs torch >= 2.4")
def test_lightnings_bf16_plugin_clips_what_a_clipped_gpu_run_is_given():
    # the H200 fault itself, on the CPU: the optimizer a clipped CUDA run builds (its kernels
    # run on CPU parameters too) goes through the same Lightning clip as on the GPU
    net = torch.nn.Linear(3, 2)
    hp = SimpleNamespace(optimizer="adam", lr=1e-3, weight_decay=0.0, schedule="constant")
    hp.warmup_steps = 0
    plugin = MixedPrecision("bf16-mixed", "cpu")
    clipped, _ = build_optimizer(net, hp, 10, torch.device("cuda"), clips=True)
    for p in net.parameters():
        p.grad = torch.full_like(p, 10.0)
    plugin.clip_gradients(clipped, clip_val=1.0)
    norm = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in net.parameters()]))
    assert norm == pytest.approx(1.0, rel=1e-4)
    # what the code before the fix built for that run: Lightning refuses to clip it
    unclipped, _ = build_optimizer(net, hp, 10, torch.device("cuda"), clips=False)
    with pytest.raises(RuntimeError, match="fused"):
        plugin.clip_gradients(unclipped, clip_val=1.0)


# ---- bf16-mixed with clipping: a solo fit and a population ----------------------------------


@pytest.mark.integration
def test_a_solo_fit_trains_in_bf16_mixed_with_clipping_on_the_cpu(tmp_path):
    args = ["--config", _config("signal/transformer"), f"--run_dir={tmp_path}", *TINY]
    small = ["--data.length=16", "--data.n_per_class=50", "--data.n_eval_per_class=20"]
    cli = build_cli([*args, *small, *BF16_CLIPPED])
    result = run(cli)
    device = cli.trainer.strategy.root_device
    assert isinstance(cli.trainer.precision_plugin, MixedPrecision)
    assert (result.precision, result.steps, device.type) == ("bf16-mixed", 6, "cpu")
    # the fit's optimizer is the one its device and clipping choose (on a GPU: foreach)
    assert _kernels(cli.trainer.optimizers[0]) == optimizer_options(device.type, clips=True)
    assert cli.datamodule.train_set.tensors["x"].device == device
    assert 0.0 <= result.metrics[f"test/{result.main_metric}"] <= 1.0


@pytest.mark.integration
def test_a_population_trains_in_bf16_mixed_with_clipping_on_the_cpu(tmp_path):
    base = ["--config", _config("echo/rnn"), *TINY, *BF16_CLIPPED]
    members = [
        [*base, f"--run_dir={tmp_path / str(k)}", f"--seed_everything={k}"] for k in range(3)
    ]
    outcomes = fit_population(members)
    for outcome in outcomes:
        assert not isinstance(outcome, BaseException), outcome
        assert (outcome.precision, outcome.steps) == ("bf16-mixed", 6)
        assert 0.0 <= outcome.metrics[f"test/{outcome.main_metric}"] <= 1.0
    # three seeds, three runs: the members did not collapse into one
    assert len({o.metrics["test/loss"] for o in outcomes}) == 3


# ---- the precision a fit defaults to (util/devices.py, fit/input_checks.py) -----------------


def test_a_fit_defaults_to_bf16_mixed_on_a_gpu_and_float32_on_a_cpu():
    assert (default_precision("cuda"), default_precision("cpu")) == ("bf16-mixed", "32-true")
    assert (matmul_precision("cuda"), matmul_precision("cpu")) == ("high", None)
    assert (accelerator_type(True), accelerator_type(False)) == ("cuda", "cpu")
    # what this machine's fit is given when its config names no precision
    cli = check_config(["--config", _config("echo/rnn")])
    assert cli.config.trainer.precision == default_precision(accelerator_type())


def test_16_mixed_and_a_gpu_accelerator_pass_where_cuda_is_and_fail_where_not():
    trainer = {"precision": "16-mixed", "accelerator": "auto"}
    check_precision(trainer, cuda_available=True)
    with pytest.raises(ValueError, match="needs a CUDA GPU"):
        check_precision(trainer, cuda_available=False)
    with pytest.raises(ValueError, match="needs a CUDA GPU"):  # asked for the CPU on a GPU machine
        check_precision({**trainer, "accelerator": "cpu"}, cuda_available=True)
    check_trainer({"accelerator": "gpu"}, cuda_available=True)
    with pytest.raises(ValueError, match="no CUDA device is visible"):
        check_trainer({"accelerator": "gpu"}, cuda_available=False)


# ---- data on the training device (data/base.py setup, population/loader.py) -----------------


def _on_device(device: str) -> SimpleNamespace:
    """What a data module reads of its Trainer to place its data: the strategy's root device
    (a real Trainer's is a CPU or a GPU; the meta device stands in for a GPU here)."""
    return SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(device)))


def _devices(dm) -> set[str]:
    splits = [dm.train_set, dm.val_set, *dm.test_sets]
    return {t.device.type for split in splits for t in split.tensors.values()}


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_a_fits_data_is_made_on_its_training_device(device):
    dm = check_config(["--config", _config("echo/rnn"), "--data.n_train=64"]).datamodule
    dm.trainer = _on_device(device)
    dm.setup("fit")
    assert _devices(dm) == {device}


def test_each_members_data_is_made_on_the_populations_training_device():
    members = [
        check_config(["--config", _config("echo/rnn"), f"--seed_everything={k}"]).datamodule
        for k in range(2)
    ]
    data = PopulationData(members)
    data.trainer = _on_device("meta")
    data.setup("fit")
    assert [_devices(dm) for dm in members] == [{"meta"}, {"meta"}]


# ---- the device generators in a checkpoint (fit/checkpoints.py: rng_states) -----------------


def _two_device_rng(generators: list[torch.Generator], in_use: bool = True) -> DeviceRng:
    """A two-GPU machine's RNG, played by two CPU generators under CUDA's name."""

    def set_all(states: list[torch.Tensor]) -> None:
        for g, state in zip(generators, states, strict=True):
            g.set_state(state)

    return DeviceRng("cuda", lambda: in_use, lambda: [g.get_state() for g in generators], set_all)


def test_a_checkpoint_saves_and_restores_every_device_generator(tmp_path):
    generators = [torch.Generator().manual_seed(s) for s in (1, 2)]
    device = _two_device_rng(generators)
    states = rng_states(device)
    torch.save(states, tmp_path / "rng.pt")  # as a checkpoint holds them: weights_only-safe
    states = torch.load(tmp_path / "rng.pt", weights_only=True)
    first = [torch.rand(3, generator=g) for g in generators]
    set_rng_states(states, device)
    again = [torch.rand(3, generator=g) for g in generators]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert not torch.equal(first[0], first[1])  # each device its own stream


def test_device_generators_are_left_alone_where_unused_or_absent():
    generators = [torch.Generator().manual_seed(1)]
    assert "cuda" not in rng_states(_two_device_rng(generators, in_use=False))
    assert "cuda" not in rng_states(None)  # a CPU machine
    saved = rng_states(_two_device_rng(generators))
    first = torch.rand(3, generator=generators[0])
    set_rng_states(saved, None)  # a GPU run's checkpoint resumed on a CPU
    assert not torch.equal(torch.rand(3, generator=generators[0]), first)


# ---- which GPU a grid worker gets (util/devices.py, ablate/local_pool.py) ---------------------


@pytest.mark.parametrize(
    ("available", "visible", "ids"),
    [(2, None, ["0", "1"]), (2, "3, 5", ["3", "5"]), (0, "3", []), (0, None, [])],
)
def test_the_gpus_a_grid_hands_out_are_the_ones_this_process_sees(available, visible, ids):
    assert visible_gpu_ids(available, visible) == ids


def test_grid_workers_take_the_gpus_round_robin_and_none_without_any():
    assert [worker_gpu(i, ["3", "5"]) for i in range(5)] == ["3", "5", "3", "5", "3"]
    assert [worker_gpu(i, []) for i in range(2)] == [None, None]


# ---- the benchmark's device handling (bench/common.py, bench/overhead.py) -------------------


def test_the_bench_times_a_cpu_by_cpu_time_and_a_gpu_by_the_wall_after_a_sync():
    assert work_clock("cpu") is time.process_time
    assert work_clock("cuda") is time.perf_counter
    sync("cpu")  # nothing queued on a CPU: returns without touching CUDA


@pytest.mark.integration
def test_the_bench_hand_loop_makes_a_bf16_fits_updates_on_the_device_given(tmp_path):
    # the loop the GPU speed rows time (bf16 autocast, clipping), run with device="cpu"
    with quiet_fit():
        cli = overhead.build(
            "echo", "rnn", 3, tmp_path, "--trainer.enable_progress_bar=false", BF16_CLIPPED[0]
        )
    overhead.prepare_data(cli)
    start = {k: v.clone() for k, v in cli.model.net.state_dict().items()}
    hand = copy.deepcopy(cli.model)
    with quiet_fit():
        overhead.lit_loop(cli)
        marks, _ = overhead.hand_loop(hand, cli.datamodule, 3, 1.0, "bf16-mixed", device="cpu")
    assert len(marks) == 3 + 1
    fit = cli.model.net.state_dict()  # echo / rnn's config clips at 1.0, as the hand loop
    for name, value in hand.net.state_dict().items():
        # the same updates up to bf16 rounding: far nearer Lightning's bf16-mixed fit than
        # the start both moved from (measured: <= 17% of the update, the recurrent weights)
        moved = (fit[name] - start[name]).abs().max()
        assert moved > 0 and (value - fit[name]).abs().max() <= moved / 2, name
