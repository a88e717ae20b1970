"""lit_seq from Python, as in a notebook: one fit from a config plus overrides, then a grid.

    python examples/python_api.py [OUT]      # OUT: where its folders go (default: a temporary one)

A few seconds on a CPU: echo with an RNN, 30 steps on a small training set, W&B off. The
``__main__`` guard matters in a script: a grid's workers are spawned processes, which
import this file again (a notebook needs no guard).
"""

import sys
import tempfile
from pathlib import Path

import lit_seq

# small enough for seconds, the same for the fit and every run of the grid
TINY = {
    "steps": 30,
    "val_every": 10,
    "warmup_steps": 5,
    "data.n_train": 256,
    "data.n_val": 64,
    "data.n_test": 64,
    "data.gen_factors": [2],
}


def main(out: Path) -> None:
    fit = lit_seq.fit_one(
        "configs/echo/rnn.yaml",
        {**TINY, "lr": 0.01, "wandb.mode": "off"},
        run_dir=out / "fit",
    )
    print(f"fit: test/acc {fit.metrics['test/acc']:.3f} in {fit.run_dir}")
    print(f"fit: best checkpoint {fit.best_checkpoint.name}, last {fit.last_checkpoint.name}")

    grid = lit_seq.run_grid(
        {
            "name": "echo_lr",
            "seeds": [0],
            "overrides": TINY,
            "blocks": [{"config": "configs/echo/rnn.yaml", "axes": {"lr": [0.001, 0.01]}}],
        },
        out=out / "grid",
        wandb="off",
    )
    print(grid.runs[["run_id", "test/acc"]].to_string(index=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="lit_seq-")))
