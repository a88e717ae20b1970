"""Our Stack-RNN, NDStack-RNN and Tape-RNN are theirs, number for number: the controller's
states, logits, loss, gradients and Adam steps.

``tests/fixtures/peer/{stack_rnn,ndstack_rnn,ndstack_rnn_long,tape_rnn}.npz`` are their
``MODEL_BUILDERS`` models (``make_rnn`` over ``StackRNNCore``, ``NDStackRNNCore``,
``TapeInputLengthJumpCore``, each over haiku's ``VanillaRNN``) wrapped by
``make_model_with_empty_targets`` on a ReverseString batch, from ``scripts/peer_reference.py``
(their README says what each exercises: a stack of 6 cells pushed 10 times, the ND stack
inside its size and past it, the tape's jump by the input length 8 on 6 cells). Ours is the
network ``configs/deletang/reverse_string/rnn.yaml`` builds (its model options: one-hot
input, ReLU controller and readout ReLU, plain Adam) with ``arch`` swapped and the
fixture's sizes: a ``Transduction`` system's ``AppendedOutputHead`` over the memory RNN.
Given their parameters, everything agrees in float32 to ``TOL`` (measured: the logits and
controller states within 1e-7, an order of magnitude inside it).

Parameter map (haiku's ``w`` is (in, out), x @ w + b; torch's weight is (out, in)), under
``net.backbone.layers.0.``: ``controller.input_to_hidden`` / ``controller.hidden_to_hidden``
= the core's ``~/vanilla_rnn/linear`` / ``linear_1``; stack_rnn ``push`` / ``actions`` =
``stack_rnn_core/linear`` / ``linear_1``; ndstack_rnn ``actions`` =
``nd_stack_rnn_core/linear``; tape_rnn ``mlp.k`` = ``.../mlp/~/linear_k`` and ``actions`` =
``tape_input_length_jump_core/linear``; ``net.head`` = ``linear``.

Their loss (example.py ``loss_fn``) is the mean over batch and output positions of the
summed -target * log_softmax: our ``Transduction.loss`` at scale 1 (``LOSS_SCALE``). Their
optimizer is ``optax.chain(clip_by_global_norm(1.0), adam(lr))``; ours the system's own
Adam after ``clip_grad_norm_``.
"""

import pytest
import torch
import yaml
from torch import Tensor

from lit_seq.systems import Transduction
from lit_seq.util.assets import CONFIG_DIR
from tests.peer_fixtures import load, params

CONFIG = CONFIG_DIR / "deletang" / "reverse_string" / "rnn.yaml"
# float32: the same sums in another order (XLA against torch) differ in the last bits
TOL = {"rtol": 1e-5, "atol": 1e-6}
LOSS_SCALE = 1.0  # their loss / our loss: both are means over (batch, output positions)
LAYER = "net.backbone.layers.0."

CORES = {  # fixture -> (our arch, their core's module name, our module -> their Linear)
    "stack_rnn": ("stack_rnn", "stack_rnn_core", {"push": "linear", "actions": "linear_1"}),
    "ndstack_rnn": ("ndstack_rnn", "nd_stack_rnn_core", {"actions": "linear"}),
    "ndstack_rnn_long": ("ndstack_rnn", "nd_stack_rnn_core", {"actions": "linear"}),
    "tape_rnn": (
        "tape_rnn",
        "tape_input_length_jump_core",
        {"actions": "linear", **{f"mlp.{k}": f"mlp/~/linear_{k}" for k in range(3)}},
    ),
}
# their builder's options that are ours by the same name (hidden_size is our d_model)
SIZES = ("stack_cell_size", "stack_size", "stack_states", "stack_symbols", "memory_cell_size")
SIZES += ("memory_size", "mlp_layers_size")


def haiku_to_ours(name: str) -> dict[str, str]:
    """Their Linear's name -> our module's, for fixture ``name``."""
    _, core, own = CORES[name]
    linears = {
        f"{LAYER}controller.input_to_hidden": f"{core}/~/vanilla_rnn/linear",
        f"{LAYER}controller.hidden_to_hidden": f"{core}/~/vanilla_rnn/linear_1",
        **{f"{LAYER}{ours}": f"{core}/{theirs}" for ours, theirs in own.items()},
        "net.head": "linear",
    }
    return {theirs: ours for ours, theirs in linears.items()}


def ours_from(name: str, haiku: dict) -> dict[str, Tensor]:
    """Haiku's arrays under our parameter names, in our layout."""
    out = {}
    for theirs, ours in haiku_to_ours(name).items():
        out[f"{ours}.weight"] = torch.from_numpy(haiku[f"{theirs}/w"]).T.contiguous()
        out[f"{ours}.bias"] = torch.from_numpy(haiku[f"{theirs}/b"])
    return out


def our_system(name: str, meta: dict) -> Transduction:
    """The shipped config's network with the fixture's arch, sizes and rate."""
    options = yaml.safe_load(CONFIG.read_text())["model"]["init_args"]
    built = meta["builder_kwargs"]
    sizes = {key: built[key] for key in SIZES if key in built}
    ours = {"arch": CORES[name][0], "d_model": built["hidden_size"], **sizes}
    ours["lr"] = meta["optimizer"]["learning_rate"]
    task = meta["task"]
    return Transduction(
        **{**options, **ours},
        in_features=task["input_size"],
        out_features=task["output_size"],
        max_len=task["model_input_length"],
    )


def set_params(name: str, system: Transduction, haiku: dict) -> None:
    values = ours_from(name, haiku)
    ours = dict(system.named_parameters())
    assert set(ours) == set(values), "every parameter of ours has one of theirs, and back"
    with torch.no_grad():
        for key, value in values.items():
            ours[key].copy_(value)


def batch_of(arrays: dict) -> dict[str, Tensor]:
    """Their batch as a Transduction batch: one-hot x, target symbols y, every position scored."""
    y = torch.from_numpy(arrays["target"]).argmax(dim=-1)  # (B, T_out)
    return {"x": torch.from_numpy(arrays["input"]), "y": y, "mask": torch.ones_like(y, dtype=bool)}


@pytest.fixture(scope="module", params=list(CORES))
def fixture(request):
    arrays, meta = load(request.param)
    return request.param, arrays, meta


def built(fixture) -> Transduction:
    name, arrays, meta = fixture
    system = our_system(name, meta)
    set_params(name, system, params(arrays))
    return system


def trained(fixture, max_norm: float, steps: int) -> dict[str, Tensor]:
    """Our parameters after ``steps`` Adam steps on their batch, from theirs, gradients
    clipped to ``max_norm``."""
    _, arrays, _ = fixture
    system = built(fixture)
    optimizer, schedule = system.build_optimizer(total_steps=steps, clips=True)
    batch = batch_of(arrays)
    for _ in range(steps):
        optimizer.zero_grad()
        (system.loss(batch) * LOSS_SCALE).backward()
        torch.nn.utils.clip_grad_norm_(system.parameters(), max_norm)
        optimizer.step()
        schedule.step()
    return {key: p.detach() for key, p in system.named_parameters()}


def test_the_fixture_is_their_model_at_their_defaults(fixture):
    name, arrays, meta = fixture
    resolved = meta["resolved_options"]
    assert resolved["double_bias"] is True and resolved["inner_core"].endswith("VanillaRNN")
    assert resolved.get("n_stacks", 1) == 1 and resolved.get("n_tapes", 1) == 1
    assert resolved.get("read_states", False) is False
    theirs = {key.rpartition("/")[0] for key in params(arrays)}
    assert theirs == set(haiku_to_ours(name))


def test_our_controller_states_and_logits_are_theirs(fixture):
    """The states: the backbone's outputs at every one of the T + T_out steps."""
    _, arrays, _ = fixture
    system = built(fixture).eval()
    batch = batch_of(arrays)
    states = []
    handle = system.net.backbone.register_forward_hook(lambda m, i, out: states.append(out))
    with torch.no_grad():
        logits = system(batch["x"], batch["y"].shape[1])  # (B, T_out, C)
    handle.remove()
    torch.testing.assert_close(states[0], torch.from_numpy(arrays["trace:hidden"]), **TOL)
    torch.testing.assert_close(logits, torch.from_numpy(arrays["logits"]), **TOL)


def test_our_loss_and_gradients_are_theirs_at_scale_one(fixture):
    name, arrays, _ = fixture
    system = built(fixture)
    loss = system.loss(batch_of(arrays)) * LOSS_SCALE
    torch.testing.assert_close(loss, torch.from_numpy(arrays["loss"]).reshape(()), **TOL)
    loss.backward()
    grads = {key: p.grad for key, p in system.named_parameters()}
    for key, theirs in ours_from(name, params(arrays, "grad:")).items():
        torch.testing.assert_close(grads[key], theirs, **TOL, msg=lambda m, k=key: f"{k}: {m}")


@pytest.mark.parametrize(
    ("steps", "prefix", "norm_key"),
    [
        (1, "param_after:", "max_grad_norm"),
        (3, "param_after3:", "max_grad_norm"),
        (1, "param_after_clipped:", "clipped_max_grad_norm"),
        (3, "param_after3_clipped:", "clipped_max_grad_norm"),
    ],
)
def test_our_clipped_adam_steps_are_theirs(fixture, steps, prefix, norm_key):
    """Their norm (1.0) clips none of these models' gradients (``grad_norms``); the
    ``_clipped`` runs (0.05) clip at every step."""
    name, arrays, meta = fixture
    ours = trained(fixture, meta["optimizer"][norm_key], steps)
    for key, theirs in ours_from(name, params(arrays, prefix)).items():
        torch.testing.assert_close(ours[key], theirs, **TOL, msg=lambda m, k=key: f"{k}: {m}")


def test_the_tape_jumps_by_the_input_length_and_the_fixture_tells_it():
    """The comparison can fail: their tape jumps by the input's 8 (2 mod 6); jumping by the
    whole 16 the backbone reads (4 mod 6) misses their logits."""
    arrays, meta = load("tape_rnn")
    system = built(("tape_rnn", arrays, meta)).eval()
    net, x = system.net, batch_of(arrays)["x"]
    B, T, _ = x.shape
    n_out = meta["task"]["output_length"]
    seq = torch.cat([net.embed(x), net.empty_token.expand(B, n_out, -1)], dim=1)
    theirs = torch.from_numpy(arrays["logits"])
    with torch.no_grad():
        for length, same in ((T, True), (T + n_out, False)):
            logits = net.head(net.act(net.backbone(seq, input_length=length)[:, T:]))
            assert torch.allclose(logits, theirs, **TOL) == same, length
