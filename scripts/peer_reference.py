"""Reference fixtures from Delétang et al. 2023's own JAX/Haiku code, for lit_seq's tests.

    python3 -m venv /tmp/peer_venv
    /tmp/peer_venv/bin/pip install jax dm-haiku optax einshape chex dm-tree tqdm absl-py numpy
    git clone https://github.com/google-deepmind/neural_networks_chomsky_hierarchy.git \\
        /tmp/peer_src/neural_networks_chomsky_hierarchy
    git -C /tmp/peer_src/neural_networks_chomsky_hierarchy checkout 2b8eb4b
    /tmp/peer_venv/bin/python scripts/peer_reference.py --peer /tmp/peer_src \\
        --out tests/fixtures/peer

``--peer`` is the folder that holds the ``neural_networks_chomsky_hierarchy`` checkout (its
package is imported from there, never copied into lit_seq); ``--peer_commit`` is the commit
recorded in every fixture (default 2b8eb4b, the one the fixtures were made from; a git
checkout at another commit is refused). The fixtures were made with jax 0.10.2, dm-haiku
0.0.17 and optax 0.2.8 on the CPU (each fixture's json records the versions it was made
with); the arrays are float32, as their training runs.

Why: lit_seq re-implements their models, tasks and training step in PyTorch, and its tests
(no JAX anywhere in them) compare against these files, so "as the paper's code" is a number
a test checks rather than a reading of their code. What is written (format in
``tests/fixtures/peer/README.md``):

- one ``<model>.npz`` + ``<model>.json`` per model of their Table 2, each built by their
  ``MODEL_BUILDERS`` entry at small sizes and wrapped as their non-autoregressive example
  (``make_model_with_empty_targets``, ``computation_steps_mult=0``), on a ReverseString
  batch: the input, the target, their initial parameters, logits, loss, gradients, the
  parameters after one and after three steps of their optimizer, and the recurrent models'
  state at every step;
- one ``<task>.npz`` + ``<task>.json`` per task lit_seq ports: their ``sample_batch`` at
  several lengths, as integer tokens, outputs and (binary_multiplication) the accuracy mask.

The file bytes depend on the numbers alone (fixed zip dates), so rerunning the command
leaves git clean unless a value moved.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import inspect
import io
import json
import os
import platform
import random
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the fixtures are CPU numbers

import haiku as hk  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

PEER_COMMIT = "2b8eb4bee872acf5b637fcc672f01c06939dc4ef"
PACKAGE = "neural_networks_chomsky_hierarchy"
REPO = Path(__file__).resolve().parents[1]

# the model fixtures: one ReverseString batch (binary strings, output = input reversed)
MODEL_TASK = "reverse_string"
BATCH = 3
SEED = 0  # data, parameter initialisation and the apply rng (seed + 1)
LEARNING_RATE = 1e-3
STEPS = 3  # param_after after the first, param_after3 after the third, all on one batch
# a second run of the steps with a clipping norm below every model's gradient norm (theirs,
# 1.0, clips only the transformer's here), so that clipping acts in every fixture
CLIPPED_NORM = 0.05

# their task fixtures: every length reseeded, a handful of examples each
TASK_LENGTHS = (1, 2, 3, 4, 5, 6, 7, 8, 13, 40)
TASK_EXAMPLES = 8
NEW_TASKS = (
    "modular_arithmetic_brackets",
    "solve_equation",
    "missing_duplicate_string",
    "binary_multiplication",
    "compute_sqrt",
    "bucket_sort",
)
# where each task's sample_batch draws its randomness (read from its code)
TASK_SOURCES = {
    "modular_arithmetic_brackets": "np.random (the expression tree, digits, operators)",
    "solve_equation": "np.random (the expression, then which digit becomes x)",
    "missing_duplicate_string": "the jax key (strings, then the index replaced by 2)",
    "binary_multiplication": "np.random (the split of the length), random (the two numbers)",
    "compute_sqrt": "random (the number)",
    "bucket_sort": "the jax key (the string)",
}


@dataclasses.dataclass(frozen=True)
class ModelCase:
    """One model fixture: ``builder`` (a key of their ``MODEL_BUILDERS``) with ``kwargs``,
    on a ReverseString batch of input length ``length``; ``why`` says what it exercises
    (``tests/fixtures/peer/README.md`` says how each model uses its parameters)."""

    name: str
    builder: str
    kwargs: dict
    length: int
    why: str


MODEL_CASES = (
    ModelCase("rnn", "rnn", {"hidden_size": 8}, 5, "haiku's VanillaRNN: ReLU, two biases"),
    ModelCase(
        "lstm",
        "lstm",
        {"hidden_size": 8},
        5,
        "haiku's LSTM: one Linear, gates i g f o, forget gate + 1",
    ),
    ModelCase(
        "stack_rnn",
        "stack_rnn",
        {"hidden_size": 8, "stack_cell_size": 4, "stack_size": 6},
        5,
        "10 steps on a stack of 6 cells: a push moves the bottom cell off the stack",
    ),
    ModelCase(
        "ndstack_rnn",
        "ndstack_rnn",
        {"hidden_size": 8, "stack_states": 2, "stack_symbols": 2, "stack_size": 11},
        5,
        "10 steps, timesteps 1..10: every index inside the stack of 11",
    ),
    ModelCase(
        "ndstack_rnn_long",
        "ndstack_rnn",
        {"hidden_size": 8, "stack_states": 2, "stack_symbols": 2, "stack_size": 6},
        5,
        "10 steps on a stack of 6: timesteps 6..10 index past its end (JAX clamps the reads "
        "and drops the writes)",
    ),
    ModelCase(
        "tape_rnn",
        "tape_rnn",
        {"hidden_size": 8, "memory_cell_size": 4, "memory_size": 6, "mlp_layers_size": (8, 8)},
        8,
        "jumps of the input length 8 on a tape of 6 cells: a roll by 8, i.e. by 2 mod 6",
    ),
    ModelCase(
        "transformer_encoder",
        "transformer_encoder",
        {"embedding_dim": 8, "num_layers": 2, "num_heads": 2, "dropout_prob": 0.0},
        5,
        "their Table 2 Transformer: the encoder, every position attending to every other",
    ),
)


# -- the peer's package and the run's environment ---------------------------------------------


def import_peer(peer: Path, commit: str) -> SimpleNamespace:
    """Their modules, imported from ``peer`` (the folder holding the checkout); a git
    checkout at another commit than ``commit`` is refused."""
    root = peer / PACKAGE
    if not root.is_dir():
        raise SystemExit(f"--peer {peer}: no {PACKAGE}/ folder in it")
    if (root / ".git").exists():
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        if not head.startswith(commit) and not commit.startswith(head):
            raise SystemExit(f"--peer {root} is at {head}, not --peer_commit {commit}")
    sys.path.insert(0, str(peer))
    names = ("experiments.constants", "experiments.training", "experiments.utils", "tasks.task")
    modules = {n.split(".")[-1]: importlib.import_module(f"{PACKAGE}.{n}") for n in names}
    modules["pos_enc"] = importlib.import_module(f"{PACKAGE}.models.positional_encodings")
    return SimpleNamespace(**modules)


def environment(commit: str) -> dict:
    """What the numbers came from: the peer commit, library versions, platform."""
    packages = ("jax", "jaxlib", "dm-haiku", "optax", "chex", "einshape", "dm-tree", "numpy")
    return {
        "peer_repo": "https://github.com/google-deepmind/neural_networks_chomsky_hierarchy",
        "peer_commit": commit,
        "versions": {p: metadata.version(p) for p in packages},
        "python": platform.python_version(),
        "jax_backend": jax.default_backend(),
        "dtype": "float32",
        "script": "scripts/peer_reference.py",
    }


# -- writing -------------------------------------------------------------------------------


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed``'s format with fixed member dates: same numbers, same bytes."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.array(arrays[key], order="C"), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, buf.getvalue())


def write_fixture(out: Path, name: str, arrays: dict[str, np.ndarray], meta: dict) -> None:
    meta = {**meta, "arrays": {k: [list(v.shape), str(v.dtype)] for k, v in sorted(arrays.items())}}
    write_npz(out / f"{name}.npz", arrays)
    (out / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    size = (out / f"{name}.npz").stat().st_size
    print(f"{name}: {len(arrays)} arrays, {size} bytes")


def flat(tree: dict, prefix: str) -> dict[str, np.ndarray]:
    """A haiku parameter tree as ``{prefix + "module/name": array}``."""
    return {
        f"{prefix}{module}/{name}": np.asarray(value, np.float32)
        for module, params in tree.items()
        for name, value in params.items()
    }


def jsonable(value):
    """Builder options as json: classes and functions by name, tuples as lists."""
    if isinstance(value, type) or callable(value):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, tuple | list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, int | float | str | bool) or value is None:
        return value
    return repr(value)


def resolved_options(builder, kwargs: dict) -> dict:
    """Every option ``builder`` (a model builder or a task class, maybe a partial) is
    called with: its defaults (and its RNN cores', for their ``make_rnn`` partials), the
    partial's own keywords, then ``kwargs``."""
    func = builder.func if isinstance(builder, functools.partial) else builder
    fixed = dict(builder.keywords) if isinstance(builder, functools.partial) else {}
    options = {
        k: p.default
        for k, p in inspect.signature(func).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    for core in (fixed.get("rnn_core"), fixed.get("inner_core")):
        if core is not None:
            for k, p in inspect.signature(core.__init__).parameters.items():
                if k not in ("self", "name") and p.default is not inspect.Parameter.empty:
                    options.setdefault(k, p.default)
    options.update(fixed)
    options.update(kwargs)
    options.pop("rnn_kwargs", None)
    return jsonable(options)


# -- the model fixtures --------------------------------------------------------------------


def their_loss_fn(task):
    """example.py's ``loss_fn``: the pointwise loss summed over the last axis (the classes)
    and averaged over everything else, batch and output positions alike."""

    def loss_fn(output, target):
        return jnp.mean(jnp.sum(task.pointwise_loss_fn(output, target), axis=-1)), {}

    return loss_fn


def their_max_grad_norm(peer) -> float:
    """training.py's clipping norm: ``ClassicTrainingParams``' default ``max_grad_norm``."""
    return peer.training.ClassicTrainingParams.__dataclass_fields__["max_grad_norm"].default


def their_steps(peer, model, params, batch, rng, loss_fn, max_norm: float):
    """(losses, gradient norms, parameters) at each of ``STEPS`` steps of training.py's
    optimizer (``TrainingWorker.run``'s chain, clipping at ``max_norm``) made by its own
    ``_update_parameters``, all on ``batch``; a norm is the global norm before clipping."""
    optimizer = optax.chain(optax.clip_by_global_norm(max_norm), optax.adam(LEARNING_RATE))
    value_and_grad = jax.value_and_grad(peer.training._apply_loss_and_metrics_fn, has_aux=True)
    state = optimizer.init(params)
    losses, norms, after = [], [], []
    for _ in range(STEPS):
        _, grads = value_and_grad(params, rng, batch, model.apply, loss_fn, None)
        norms.append(float(optax.global_norm(grads)))
        params, state, (loss, _, _) = peer.training._update_parameters(
            params=params,
            rng_key=rng,
            batch=batch,
            model_apply_fn=model.apply,
            loss_fn=loss_fn,
            accuracy_fn=None,
            optimizer=optimizer,
            opt_state=state,
        )
        losses.append(float(loss))
        after.append(params)
    return losses, norms, after


def full_input(x: np.ndarray, n_out: int) -> np.ndarray:
    """(B, T, V) -> (B, T + n_out, V + 1): what ``make_model_with_empty_targets`` feeds the
    model at ``computation_steps_mult=0`` (a zero column, then n_out empty symbols V);
    checked against the model's logits in :func:`core_trace`."""
    B, T, V = x.shape
    empty = np.zeros((B, n_out, V + 1), np.float32)
    empty[..., V] = 1.0
    return np.concatenate([np.pad(x, ((0, 0), (0, 0), (0, 1))), empty], axis=1)


def core_trace(peer, case: ModelCase, params, x: np.ndarray, n_out: int, logits) -> dict:
    """A recurrent model's core unrolled as their ``make_rnn`` builds it, with every state:
    ``hidden`` (B, L, H) and the memory after each step; the top Linear over
    relu(hidden) must give back ``logits`` (same parameters, same input)."""
    builder = peer.constants.MODEL_BUILDERS[case.builder]
    core_kwargs = {k: v for k, v in builder.keywords.items() if k != "rnn_core"}
    core_cls = builder.keywords["rnn_core"]
    xs = full_input(x, n_out)
    B, T = x.shape[:2]

    def unrolled(inputs):
        core = core_cls(**core_kwargs, **case.kwargs)
        # a tape's jumps are the input length, T (make_rnn passes it to a TapeRNNCore only)
        tape = case.builder == "tape_rnn"
        state = core.initial_state(B, T) if tape else core.initial_state(B)
        return hk.dynamic_unroll(core, inputs, state, time_major=False, return_all_states=True)

    hidden, states = hk.transform(unrolled).apply(params, None, xs)
    head = params["linear"]
    again = jax.nn.relu(hidden[:, -n_out:]) @ head["w"] + head["b"]
    np.testing.assert_allclose(np.asarray(again), np.asarray(logits), rtol=1e-5, atol=1e-6)
    trace = {"hidden": hidden}
    if case.builder == "lstm":
        trace["cell"] = states.cell
    elif case.builder == "stack_rnn":
        trace["stack"] = states[0][:, :, 0]  # (B, L, stack_size, cell): the one stack
    elif case.builder == "ndstack_rnn":
        trace["stack_read"] = states[0].top_stack  # (B, L, symbols): read at the next step
        trace["alpha"] = states[0].alpha  # (B, L, stack_size, states, symbols)
        trace["timestep"] = states[1][:, :, None]  # (B, L, 1): 1..L
    elif case.builder == "tape_rnn":
        trace["tape"] = states[0][:, :, 0]  # (B, L, memory_size, cell): the one tape
    arrays = {}
    for k, v in trace.items():
        v = np.asarray(v)
        arrays[f"trace:{k}"] = v if v.dtype.kind == "i" else v.astype(np.float32)
    return arrays


def transformer_facts(peer, case: ModelCase, length: int) -> tuple[dict, dict]:
    """(arrays, json) of what their encoder adds at these positions, and its biases."""
    E = case.kwargs["embedding_dim"]
    table = peer.pos_enc.sinusoid_position_encoding(
        # TransformerEncoder.__call__'s arguments for SIN_COS
        sequence_length=length,
        hidden_size=E,
        memory_length=0,
        max_timescale=peer.pos_enc.SinCosParams().max_time,
        min_timescale=2,
        clamp_length=0,
        causal=True,
    )
    facts = {
        "builder_choice": "MODEL_BUILDERS has two: transformer_encoder (TransformerEncoder, "
        "then a Linear at every position) and transformer (encoder-decoder, called with the "
        "targets too). example.py's non-autoregressive path (make_model_with_empty_targets: "
        "answers at appended empty positions, the setup lit_seq's Delétang protocol copies) "
        "calls model(x) with one argument, which only transformer_encoder takes; transformer "
        "runs only with is_autoregressive. lit_seq's configs/deletang/*/transformer.yaml take "
        "it the same way (Transduction: a non-causal encoder over input + empty positions).",
        "positional_encoding": {
            "kind": "SIN_COS (their default: make_transformer_encoder's positional_encodings=None)",
            "call": "sinusoid_position_encoding(sequence_length=L, hidden_size=E, "
            "memory_length=0, max_timescale=10000, min_timescale=2, clamp_length=0, "
            "causal=True)",
            "array": "pos_encoding (L, E), L = input length + output length",
            "positions": [float(p) for p in np.arange(length, 0, -1.0)],
            "layout": "row i encodes position p_i = L - i (L, L-1, ..., 1: counted down "
            "from the sequence's length, none is 0): [sin(p f_0), ..., sin(p f_{E/2-1}), "
            "cos(p f_0), ..., cos(p f_{E/2-1})], f_j = 10000^(-2j/E): sines then cosines, "
            "not interleaved",
            "added_to": "the embeddings times sqrt(E), then dropout",
        },
        "biases": {
            "embedding": False,
            "q": False,
            "k": False,
            "v": False,
            "attention_output": False,
            "feed_forward": True,
            "output_layer": True,
        },
        "layer_norm": "haiku LayerNorm(axis=-1, create_scale, create_offset), eps 1e-5, "
        "post-LN: x = LN(x + attention(x)); x = LN(x + ffn(x)); no final LayerNorm",
        "attention": "scores q k^T / sqrt(E / heads), softmax over keys, no mask (encoder: "
        "causal_masking=False); per layer Linears named linear (q), linear_1 (k), "
        "linear_2 (v), linear_3 (out), inputs (in, out)",
        "feed_forward": "Linear(E -> 4E), ReLU, Linear(4E -> E)",
        "embedding": "Linear(V + 1 -> E, no bias, TruncatedNormal(0.02)) on the one-hot input, "
        "times sqrt(E)",
        "dropout": "hk.dropout after the positions, each attention and each feed-forward; it "
        "has no eval switch: their range evaluation applies the model with an rng, so "
        "dropout_prob 0.1 (their default) is on at test time too. Here dropout_prob=0.0.",
    }
    return {"pos_encoding": np.asarray(table, np.float32)}, facts


def model_fixture(peer, case: ModelCase, env: dict) -> tuple[dict, dict]:
    task = peer.constants.TASK_BUILDERS[MODEL_TASK]()
    batch = task.sample_batch(jax.random.PRNGKey(SEED), BATCH, case.length)
    n_out = task.output_length(case.length)
    builder = peer.constants.MODEL_BUILDERS[case.builder]
    kwargs = {"output_size": task.output_size, "return_all_outputs": True, **case.kwargs}
    model = builder(**kwargs)
    # example.py's non-autoregressive path: single_output is False for a string task
    model = peer.utils.make_model_with_empty_targets(
        model, task, computation_steps_mult=0, single_output=False
    )
    model = hk.transform(model)
    params = model.init(jax.random.PRNGKey(SEED), batch["input"])
    rng = jax.random.PRNGKey(SEED + 1)  # unused by the recurrent models; dropout is 0.0
    logits = model.apply(params, rng, batch["input"])

    loss_fn = their_loss_fn(task)
    value_and_grad = jax.value_and_grad(peer.training._apply_loss_and_metrics_fn, has_aux=True)
    (loss, _), grads = value_and_grad(params, rng, batch, model.apply, loss_fn, None)
    max_norm = their_max_grad_norm(peer)
    losses, norms, after = their_steps(peer, model, params, batch, rng, loss_fn, max_norm)
    _, clipped_norms, clipped = their_steps(peer, model, params, batch, rng, loss_fn, CLIPPED_NORM)
    if min(clipped_norms) <= CLIPPED_NORM:
        raise SystemExit(f"{case.name}: a gradient norm {min(clipped_norms)} <= {CLIPPED_NORM}")

    arrays = {
        "input": np.asarray(batch["input"], np.float32),
        "target": np.asarray(batch["output"], np.float32),
        "logits": np.asarray(logits, np.float32),
        "loss": np.asarray(loss, np.float32),
        "losses": np.asarray(losses, np.float32),
        "grad_norms": np.asarray(norms, np.float32),
        **flat(params, "param:"),
        **flat(grads, "grad:"),
        **flat(after[0], "param_after:"),
        **flat(after[-1], "param_after3:"),
        **flat(clipped[0], "param_after_clipped:"),
        **flat(clipped[-1], "param_after3_clipped:"),
    }
    meta = {
        "fixture": case.name,
        "what": case.why,
        "builder": case.builder,
        "builder_kwargs": jsonable(kwargs),
        "resolved_options": resolved_options(builder, kwargs),
        "wrapper": "experiments/utils.py make_model_with_empty_targets(model, task, "
        "computation_steps_mult=0, single_output=False), then hk.transform",
        "task": {
            "name": MODEL_TASK,
            "class": type(task).__name__,
            "input_size": task.input_size,
            "output_size": task.output_size,
            "input_length": case.length,
            "output_length": n_out,
            "model_input_length": case.length + n_out,
            "model_input_width": task.input_size + 1,
            "batch_size": BATCH,
            "sample": f"task.sample_batch(jax.random.PRNGKey({SEED}), {BATCH}, {case.length})",
        },
        "seed": SEED,
        "init": f"model.init(jax.random.PRNGKey({SEED}), input)",
        "apply": f"model.apply(params, jax.random.PRNGKey({SEED + 1}), input)",
        "loss": "example.py loss_fn: mean over (batch, output positions) of "
        "sum over classes of -target * log_softmax(logits)",
        "optimizer": {
            "chain": f"optax.chain(optax.clip_by_global_norm({max_norm}), "
            f"optax.adam({LEARNING_RATE}))",
            "source": "experiments/training.py TrainingWorker.run; max_grad_norm is "
            "ClassicTrainingParams' default",
            "adam_defaults": jsonable(
                {
                    k: p.default
                    for k, p in inspect.signature(optax.adam).parameters.items()
                    if p.default is not inspect.Parameter.empty
                }
            ),
            "learning_rate": LEARNING_RATE,
            "max_grad_norm": max_norm,
            "steps": "training.py _update_parameters, 3 times on the same batch and rng: "
            "param_after after step 1, param_after3 after step 3; losses[i] and "
            "grad_norms[i] (the global norm before clipping) at step i + 1",
            "clipping_fires": [bool(n > max_norm) for n in norms],
            "clipped_variant": f"param_after_clipped / param_after3_clipped: the same steps "
            f"from the same parameters with clip_by_global_norm({CLIPPED_NORM}), which fires "
            f"at every step (every grad_norms entry is above it)",
            "clipped_max_grad_norm": CLIPPED_NORM,
        },
        "parameters": {
            f"{module}/{name}": list(value.shape)
            for module, ps in params.items()
            for name, value in ps.items()
        },
        **env,
    }
    if case.builder == "transformer_encoder":
        extra, facts = transformer_facts(peer, case, case.length + n_out)
        arrays.update(extra)
        meta["transformer"] = facts
    else:
        arrays.update(core_trace(peer, case, params, arrays["input"], n_out, logits))
        meta["trace"] = (
            "trace:* arrays: the core unrolled over all L = T + T_out steps, as make_rnn "
            "does; entry t is the state after step t (what step t + 1 reads)"
        )
    return arrays, meta


# -- the task fixtures ---------------------------------------------------------------------


def tokens_of(one_hot: np.ndarray, what: str) -> np.ndarray:
    """The integer symbols of a one-hot array, refusing anything that is not one-hot."""
    one_hot = np.asarray(one_hot)
    if not np.array_equal(one_hot.sum(axis=-1), np.ones(one_hot.shape[:-1])):
        raise ValueError(f"{what} is not one-hot")
    return one_hot.argmax(axis=-1).astype(np.int32)


def task_fixture(peer, name: str, env: dict) -> tuple[dict, dict]:
    builder = peer.constants.TASK_BUILDERS[name]
    task = builder()
    has_mask = type(task).accuracy_mask is not peer.task.GeneralizationTask.accuracy_mask
    arrays, lengths = {}, {}
    for length in TASK_LENGTHS:
        seed = length
        random.seed(seed)
        np.random.seed(seed)
        batch = task.sample_batch(jax.random.PRNGKey(seed), TASK_EXAMPLES, length)
        arrays[f"tokens_len{length}"] = tokens_of(batch["input"], f"{name} input")
        arrays[f"outputs_len{length}"] = tokens_of(batch["output"], f"{name} output")
        if has_mask:
            mask = task.accuracy_mask(batch["output"])
            arrays[f"mask_len{length}"] = np.asarray(mask, bool)
        lengths[str(length)] = {"seed": seed, "output_length": task.output_length(length)}
    fixed = dict(builder.keywords) if isinstance(builder, functools.partial) else {}
    cls = builder.func if isinstance(builder, functools.partial) else builder
    meta = {
        "fixture": name,
        "task_class": f"{cls.__module__}.{cls.__qualname__}",
        "registered_kwargs": jsonable(fixed),
        "options": resolved_options(builder, {}),
        "input_size": task.input_size,
        "output_size": task.output_size,
        "examples_per_length": TASK_EXAMPLES,
        "lengths": lengths,
        "sample": "for each length N: random.seed(s); np.random.seed(s); "
        "batch = task.sample_batch(jax.random.PRNGKey(s), examples, N), s = N",
        "randomness": TASK_SOURCES[name],
        "tokens": "argmax of batch['input'] (B, N)",
        "outputs": "argmax of batch['output']: (B,) for a one-label task, (B, output_length) "
        "for a string",
        "mask": "task.accuracy_mask(batch['output']) (B, output_length)" if has_mask else None,
        **env,
    }
    return arrays, meta


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", type=Path, default=Path("/work/peer_src"))
    parser.add_argument("--peer_commit", default=PEER_COMMIT)
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "peer")
    args = parser.parse_args(argv)
    peer = import_peer(args.peer.resolve(), args.peer_commit)
    env = environment(args.peer_commit)
    args.out.mkdir(parents=True, exist_ok=True)
    for case in MODEL_CASES:
        write_fixture(args.out, case.name, *model_fixture(peer, case, env))
    for name in NEW_TASKS:
        write_fixture(args.out, name, *task_fixture(peer, name, env))


if __name__ == "__main__":
    main()
