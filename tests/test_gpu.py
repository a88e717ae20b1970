"""The GPU path: bf16 mixed precision, data on the device, fused optimizer (CUDA only)."""

import pytest
import torch

from lit_seq.fit import build_cli, run
from tests.helpers import REPO, TINY

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


@pytest.mark.parametrize(
    ("config", "extra"),
    [
        ("signal/transformer", []),
        ("echo/lstm", []),
        ("seq2seq/transformer", []),
        ("signal/transformer", ["--trainer.gradient_clip_val=0"]),  # unclipped: fused Adam
    ],
)
def test_fit_on_gpu_uses_bf16_and_device_resident_data(config, extra, tmp_path):
    cli = build_cli(
        ["--config", str(REPO / "configs" / f"{config}.yaml"), f"--run_dir={tmp_path}"]
        + [*TINY, *extra]
    )
    assert cli.trainer.precision == "bf16-mixed"
    result = run(cli)
    assert cli.datamodule.train_set.tensors["x" if "seq2seq" not in config else "src"].is_cuda
    # fused Adam only where no gradient clipping (Lightning's AMP plugin refuses the pair)
    clips = bool(cli.trainer.gradient_clip_val)
    assert bool(cli.trainer.optimizers[0].defaults.get("fused")) is not clips
    assert result.steps == 6
    assert 0.0 <= result.metrics[f"test/{result.main_metric}"] <= 1.0


@pytest.mark.integration
@pytest.mark.parametrize("config", ["echo/rnn", "signal/transformer"])
def test_a_population_trains_on_the_gpu_in_bf16(config, tmp_path):
    from lit_seq.population.train import fit_population

    args = [
        ["--config", str(REPO / "configs" / f"{config}.yaml"), f"--run_dir={tmp_path / str(k)}"]
        + [*TINY, f"--seed_everything={k}"]
        for k in range(3)
    ]
    for outcome in fit_population(args):
        assert not isinstance(outcome, BaseException), outcome
        assert outcome.steps == 6
        assert 0.0 <= outcome.metrics[f"test/{outcome.main_metric}"] <= 1.0
