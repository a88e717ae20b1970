"""Our Delétang RNN is theirs, number for number: logits, loss, gradients and Adam steps.

``tests/fixtures/peer/rnn.npz`` is their ``MODEL_BUILDERS["rnn"]`` (``make_rnn`` over haiku's
``VanillaRNN``, hidden 8) wrapped by ``make_model_with_empty_targets`` on a ReverseString
batch (B 3, T 5, 5 appended empty positions), from ``scripts/peer_reference.py``. Ours is
the network ``configs/deletang/reverse_string/rnn.yaml`` builds (its model options, at the
fixture's width): a ``Transduction`` system's ``AppendedOutputHead`` (one-hot input, ReLU
before the output layer) over an ``RNNBackbone(nonlinearity="relu")``. Given their
parameters, everything must agree in float32 to ``TOL``.

Parameter map (haiku's ``w`` is (in, out), x @ w + b; torch's weight is (out, in)):
``vanilla_rnn/linear`` (input_to_hidden) -> ``weight_ih_l0`` / ``bias_ih_l0``,
``vanilla_rnn/linear_1`` (hidden_to_hidden) -> ``weight_hh_l0`` / ``bias_hh_l0``,
``linear`` (the output layer) -> ``net.head``.

Their loss (example.py ``loss_fn``) sums -target * log_softmax over the classes and averages
over batch and output positions: our ``Transduction.loss`` (the mean cross-entropy over
every appended position) at scale 1 (``LOSS_SCALE``). Their optimizer (training.py) is
``optax.chain(clip_by_global_norm(1.0), adam(lr))``; ours is the system's own Adam
(``build_optimizer``) after ``clip_grad_norm_``, which is what Lightning's
``gradient_clip_val`` calls.
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

# haiku name -> (our parameter, transposed)
HAIKU_TO_OURS = {
    "vanilla_rnn/linear/w": ("net.backbone.rnn.weight_ih_l0", True),
    "vanilla_rnn/linear/b": ("net.backbone.rnn.bias_ih_l0", False),
    "vanilla_rnn/linear_1/w": ("net.backbone.rnn.weight_hh_l0", True),
    "vanilla_rnn/linear_1/b": ("net.backbone.rnn.bias_hh_l0", False),
    "linear/w": ("net.head.weight", True),
    "linear/b": ("net.head.bias", False),
}


@pytest.fixture(scope="module")
def fixture():
    return load("rnn")


def ours_from(haiku: dict) -> dict[str, Tensor]:
    """Haiku's arrays under our parameter names, in our layout."""
    out = {}
    for name, (ours, transposed) in HAIKU_TO_OURS.items():
        value = torch.from_numpy(haiku[name])
        out[ours] = value.T.contiguous() if transposed else value
    return out


def our_system(meta: dict) -> Transduction:
    """The shipped config's network at the fixture's sizes and rate, holding their initial
    parameters (set by :func:`set_params`)."""
    options = yaml.safe_load(CONFIG.read_text())["model"]["init_args"]
    task = meta["task"]
    return Transduction(
        **{
            **options,
            "d_model": meta["builder_kwargs"]["hidden_size"],
            "lr": meta["optimizer"]["learning_rate"],
        },
        in_features=task["input_size"],
        out_features=task["output_size"],
        max_len=task["model_input_length"],
    )


def set_params(system: Transduction, haiku: dict) -> None:
    values = ours_from(haiku)
    ours = dict(system.named_parameters())
    assert set(ours) == set(values), "every parameter of ours has one of theirs, and back"
    with torch.no_grad():
        for name, value in values.items():
            ours[name].copy_(value)


def batch_of(arrays: dict) -> dict[str, Tensor]:
    """Their batch as a Transduction batch: one-hot x, target symbols y, every position scored."""
    y = torch.from_numpy(arrays["target"]).argmax(dim=-1)  # (B, T_out)
    return {"x": torch.from_numpy(arrays["input"]), "y": y, "mask": torch.ones_like(y, dtype=bool)}


def trained(fixture, max_norm: float, steps: int, scale: float = LOSS_SCALE) -> dict[str, Tensor]:
    """Our parameters after ``steps`` Adam steps on their batch, from theirs, our loss
    times ``scale`` and its gradients clipped to ``max_norm``."""
    arrays, meta = fixture
    system = our_system(meta)
    set_params(system, params(arrays))
    optimizer, schedule = system.build_optimizer(total_steps=steps, clips=True)
    batch = batch_of(arrays)
    for _ in range(steps):
        optimizer.zero_grad()
        (system.loss(batch) * scale).backward()
        torch.nn.utils.clip_grad_norm_(system.parameters(), max_norm)
        optimizer.step()
        schedule.step()
    return {name: p.detach() for name, p in system.named_parameters()}


def test_the_fixture_is_their_rnn_and_our_adam_has_their_settings(fixture):
    arrays, meta = fixture
    assert meta["builder"] == "rnn" and meta["resolved_options"]["double_bias"] is True
    assert sorted(params(arrays)) == sorted(HAIKU_TO_OURS)
    assert meta["optimizer"]["max_grad_norm"] == 1.0
    adam = meta["optimizer"]["adam_defaults"]  # optax.adam's: eps outside the square root
    group = our_system(meta).build_optimizer(total_steps=1, clips=True)[0].param_groups[0]
    assert (adam["b1"], adam["b2"], adam["eps"], adam["eps_root"]) == (0.9, 0.999, 1e-8, 0.0)
    assert (group["betas"], group["eps"], group["weight_decay"]) == ((0.9, 0.999), 1e-8, 0.0)
    assert group["lr"] == meta["optimizer"]["learning_rate"]


def test_our_logits_are_theirs(fixture):
    arrays, meta = fixture
    system = our_system(meta).eval()
    set_params(system, params(arrays))
    batch = batch_of(arrays)
    with torch.no_grad():
        logits = system(batch["x"], batch["y"].shape[1])  # (B, T_out, C)
    torch.testing.assert_close(logits, torch.from_numpy(arrays["logits"]), **TOL)


def test_our_loss_and_gradients_are_theirs_at_scale_one(fixture):
    arrays, meta = fixture
    system = our_system(meta)
    set_params(system, params(arrays))
    loss = system.loss(batch_of(arrays)) * LOSS_SCALE
    torch.testing.assert_close(loss, torch.from_numpy(arrays["loss"]).reshape(()), **TOL)
    loss.backward()
    grads = {name: p.grad for name, p in system.named_parameters()}
    for name, theirs in ours_from(params(arrays, "grad:")).items():
        torch.testing.assert_close(grads[name], theirs, **TOL, msg=lambda m, n=name: f"{n}: {m}")


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
    """Their norm (1.0) never clips this RNN's gradients (norms ~0.11, ``grad_norms``); the
    ``_clipped`` runs (0.05) clip at every step."""
    arrays, meta = fixture
    ours = trained(fixture, meta["optimizer"][norm_key], steps)
    for name, theirs in ours_from(params(arrays, prefix)).items():
        torch.testing.assert_close(ours[name], theirs, **TOL, msg=lambda m, n=name: f"{n}: {m}")


def test_the_clipped_fixture_tells_clipping_from_none(fixture):
    """The comparison above can fail: three steps left unclipped miss the clipped run's
    parameters by more than TOL."""
    arrays, _ = fixture
    unclipped = trained(fixture, float("inf"), 3)
    theirs = ours_from(params(arrays, "param_after3_clipped:"))
    assert not all(torch.allclose(unclipped[n], theirs[n], **TOL) for n in theirs)


def test_the_steps_tell_their_loss_scale_from_a_sum_over_positions(fixture):
    """Adam is blind to a loss's scale only up to its eps: our loss summed over the 5
    output positions (5x theirs) misses their three steps by more than TOL (by ~7e-5)."""
    arrays, meta = fixture
    n_out = meta["task"]["output_length"]
    summed = trained(fixture, meta["optimizer"]["max_grad_norm"], 3, scale=float(n_out))
    theirs = ours_from(params(arrays, "param_after3:"))
    assert not all(torch.allclose(summed[n], theirs[n], **TOL) for n in theirs)
