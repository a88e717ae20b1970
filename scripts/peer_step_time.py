"""The training step of Delétang et al. 2023's own JAX/Haiku models, timed on this CPU.

    cd /tmp && XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
        PYTHONPATH=/path/to/peer_src /path/to/peer_venv/bin/python \\
        /path/to/lit_seq/scripts/peer_step_time.py --out peer_step.json

The venv and checkout are scripts/peer_reference.py's (jax, dm-haiku, optax; never a
dependency of lit_seq). Each of their six Table 2 models is built by its
``MODEL_BUILDERS`` entry at the paper's sizes (``hidden_size`` 256; their example.py's
tape of 40 cells of 8; stacks of 30 cells of 8; the NDStack with 2 states and 2 symbols;
the Transformer encoder at its defaults: 5 x 64, 8 heads), wrapped as their example.py's
non-autoregressive model (``make_model_with_empty_targets``), and trained on reverse_string
batches of 128 at a fixed length L by their own ``_update_parameters`` under ``jax.jit``,
with their optimizer (clipping at 1.0, then Adam). For each model and length: the CPU time
of the first call (XLA's compilation plus one step; their training recompiles for every
new length) and the median CPU time of ``--repeats`` further steps, the result blocked
on. ``python -m lit_seq.bench --sections deletang_step`` times ours on the same shapes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import haiku as hk  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

PACKAGE = "neural_networks_chomsky_hierarchy"
ARCHS = {  # ours -> theirs, with the paper's sizes
    "rnn": ("rnn", {"hidden_size": 256}),
    "lstm": ("lstm", {"hidden_size": 256}),
    "stack_rnn": ("stack_rnn", {"hidden_size": 256, "stack_cell_size": 8, "stack_size": 30}),
    "ndstack_rnn": (
        "ndstack_rnn",
        {"hidden_size": 256, "stack_states": 2, "stack_symbols": 2, "stack_size": 30},
    ),
    "tape_rnn": ("tape_rnn", {"hidden_size": 256, "memory_cell_size": 8, "memory_size": 40}),
    "transformer": ("transformer_encoder", {}),
}
BATCH = 128
LEARNING_RATE = 5e-4


def _import():
    from neural_networks_chomsky_hierarchy.experiments import constants, training, utils

    return constants, training, utils


def time_model(arch: str, lengths: list[int], repeats: int) -> list[dict]:
    """One row per length: compile-and-first-step CPU s, then the median CPU ms a step."""
    constants, training, utils = _import()
    name, params_kw = ARCHS[arch]
    task = constants.TASK_BUILDERS["reverse_string"]()
    model = constants.MODEL_BUILDERS[name](
        output_size=task.output_size, return_all_outputs=True, **params_kw
    )
    model = hk.transform(utils.make_model_with_empty_targets(model, task, 0, False))

    def loss_fn(output, target):  # example.py's
        return jnp.mean(jnp.sum(task.pointwise_loss_fn(output, target), axis=-1)), {}

    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(LEARNING_RATE))
    rng = jax.random.PRNGKey(0)
    rows = []
    for length in lengths:
        batch = task.sample_batch(jax.random.PRNGKey(length), BATCH, length)
        params = model.init(rng, batch["input"])
        state = optimizer.init(params)

        @jax.jit
        def step(params, state, batch):
            new_params, new_state, (loss, _, _) = training._update_parameters(
                params=params,
                rng_key=rng,
                batch=batch,
                model_apply_fn=model.apply,
                loss_fn=loss_fn,
                accuracy_fn=None,
                optimizer=optimizer,
                opt_state=state,
            )
            return new_params, new_state, loss

        start = time.process_time()
        params, state, loss = step(params, state, batch)
        loss.block_until_ready()
        first = time.process_time() - start
        times = []
        for _ in range(repeats):
            start = time.process_time()
            params, state, loss = step(params, state, batch)
            loss.block_until_ready()
            times.append(time.process_time() - start)
        rows.append(
            {
                "arch": arch,
                "length": length,
                "batch": BATCH,
                "compile_s": round(first, 1),
                "step_ms": round(1000 * statistics.median(times), 1),
                "load": round(os.getloadavg()[0], 1),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archs", default=",".join(ARCHS), help="comma-separated, ours")
    parser.add_argument("--lengths", default="10,20,40", help="comma-separated L")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args(argv)
    if PACKAGE not in {p.rsplit("/", 1)[-1] for p in sys.path} and not any(
        os.path.isdir(os.path.join(p, PACKAGE)) for p in sys.path
    ):
        raise SystemExit(f"put the folder holding {PACKAGE}/ on PYTHONPATH")
    lengths = [int(x) for x in args.lengths.split(",")]
    rows = [r for a in args.archs.split(",") for r in time_model(a, lengths, args.repeats)]
    meta = {
        "jax": jax.__version__,
        "haiku": hk.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS"),
    }
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "environment": meta}, f, indent=1)


if __name__ == "__main__":
    main()
