"""Small helpers shared by the end-to-end tests."""

from pathlib import Path

from lit_seq.fit import cli_main

REPO = Path(__file__).resolve().parent.parent
CONFIGS = sorted((REPO / "configs").glob("*/*.yaml"))

# fast settings for any config: a few steps, no progress bar, no model summary
TINY = [
    "--trainer.max_steps=6",
    "--trainer.val_check_interval=3",
    "--trainer.limit_val_batches=2",
    "--trainer.limit_test_batches=2",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--wandb=off",
]


def tiny_fit(config: Path, run_dir: Path, *overrides: str) -> dict:
    """Run ``lit_seq.fit`` in-process on ``config`` with tiny settings; return metrics.json."""
    return cli_main(["--config", str(config), f"--run_dir={run_dir}", *TINY, *overrides])
