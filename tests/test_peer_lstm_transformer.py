"""Our Delétang LSTM and Transformer are theirs, number for number: logits, loss, gradients and
clipped Adam steps, against the fixtures their own JAX/Haiku code wrote (``tests/peer_fixtures``,
``scripts/peer_reference.py``).

Each fixture is their ``MODEL_BUILDERS`` entry (``lstm``: ``make_rnn`` over ``hk.LSTM``;
``transformer_encoder``) wrapped by ``make_model_with_empty_targets`` on a ReverseString batch.
Ours is the network the shipped ``configs/deletang/reverse_string/<arch>.yaml`` builds (every
model option of it, issue 56's included), at the fixture's sizes, holding their parameters.
Everything must agree in float32 to ``TOL``, as ``test_peer_rnn.py``'s RNN does.

Parameter maps (haiku's ``w`` is (in, out), x @ w + b; torch's weight is (out, in)):

- LSTM: haiku's one ``lstm/linear`` over concat(x, h), gates in ITS order i, g, f, o ->
  ``weight_ih_l0`` (its first ``in`` rows), ``weight_hh_l0`` (the others) and ``bias_ih_l0``,
  each reordered to torch's i, f, g, o; ours also holds ``bias_hh_l0``, the frozen +1 of
  the forget gate (``single_bias``), which is their constant, not a parameter of theirs.
- Transformer: the embedding (V + 1 rows, the last one the empty symbol's) -> ``embed`` and
  the head's ``empty_token``; per layer, attention ``linear`` .. ``linear_3`` (q, k, v,
  out) and the FFN's two Linears and the two LayerNorms, in their order of creation.

The LSTM's steps leave 4 elements to a looser bound (lr / 100, see the step test): their
gradients are float32 cancellation residues of ~3e-8, near Adam's eps once clipped. The
transformer's clipping at 1.0 fires at every step (norms 2.1, 1.9, 1.5): our
``clip_grad_norm_`` (max_norm / (norm + 1e-6)) and their ``clip_by_global_norm`` (max_norm /
norm) agree to ``TOL``.

Their loss is the mean over batch and output positions of the summed class cross-entropy
(example.py), ours at scale 1 (``tests/test_deletang_fidelity.py`` proves the two formulas
equal); their optimizer ``optax.chain(clip_by_global_norm(max_norm), adam(lr))``, ours the
system's own Adam after ``clip_grad_norm_`` (what Lightning's ``gradient_clip_val`` calls).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import yaml
from torch import Tensor

from lit_seq.systems import Transduction
from lit_seq.util.assets import CONFIG_DIR
from tests.peer_fixtures import load, params

# float32: the same sums in another order (XLA against torch) differ in the last bits
TOL = {"rtol": 1e-5, "atol": 1e-6}
STEPS = [
    (1, "param_after:", "max_grad_norm"),
    (3, "param_after3:", "max_grad_norm"),
    (1, "param_after_clipped:", "clipped_max_grad_norm"),
    (3, "param_after3_clipped:", "clipped_max_grad_norm"),
]


def torch_gates(haiku: np.ndarray) -> np.ndarray:
    """Rows in haiku's LSTM gate order i, g, f, o -> torch's i, f, g, o."""
    i, g, f, o = np.split(haiku, 4, axis=0)
    return np.concatenate([i, f, g, o])


def lstm_values(meta: dict, haiku: dict) -> dict[str, np.ndarray]:
    """Our parameter -> its value from haiku's arrays (initial, gradients or steps alike)."""
    n_in = meta["task"]["model_input_width"]  # the one-hot input, one empty symbol wider
    w, b = haiku["lstm/linear/w"], haiku["lstm/linear/b"]  # (in + hidden, 4 hidden), (4 hidden,)
    return {
        "net.backbone.rnn.weight_ih_l0": torch_gates(w[:n_in].T),
        "net.backbone.rnn.weight_hh_l0": torch_gates(w[n_in:].T),
        "net.backbone.rnn.bias_ih_l0": torch_gates(b),
        "net.head.weight": haiku["linear/w"].T,
        "net.head.bias": haiku["linear/b"],
    }


def nth(name: str, k: int) -> str:
    """haiku's name of the k-th module called ``name`` in one scope: name, name_1, ..."""
    return name if k == 0 else f"{name}_{k}"


def transformer_values(meta: dict, haiku: dict) -> dict[str, np.ndarray]:
    """Our parameter -> its value from haiku's arrays: their encoder's modules in order of
    creation (embedding ``linear``; per layer its attention's ``linear`` .. ``linear_3``, a
    ``layer_norm``, the FFN's next two ``linear``s, a ``layer_norm``), then the readout."""
    V = meta["task"]["input_size"]
    enc = "transformer_encoder"
    embedding = haiku[f"{enc}/linear/w"]  # (V + 1, d): the last row the empty symbol's
    out = {
        "net.embed.weight": embedding[:V].T,
        "net.empty_token": embedding[V:].reshape(1, 1, -1),
        "net.head.weight": haiku["linear/w"].T,
        "net.head.bias": haiku["linear/b"],
    }
    for i in range(meta["builder_kwargs"]["num_layers"]):
        block, attention = (
            f"net.backbone.blocks.{i}",
            nth(f"{enc}/multi_head_dot_product_attention", i),
        )
        for j, proj in enumerate(("q", "k", "v", "out")):
            out[f"{block}.attn.{proj}_proj.weight"] = haiku[f"{attention}/{nth('linear', j)}/w"].T
        for j, norm in enumerate(("ln1", "ln2")):
            name = nth(f"{enc}/layer_norm", 2 * i + j)
            out[f"{block}.{norm}.weight"] = haiku[f"{name}/scale"]
            out[f"{block}.{norm}.bias"] = haiku[f"{name}/offset"]
        for j, fc in enumerate(("fc1", "fc2")):
            name = f"{enc}/linear_{1 + 2 * i + j}"
            out[f"{block}.ffn.{fc}.weight"] = haiku[f"{name}/w"].T
            out[f"{block}.ffn.{fc}.bias"] = haiku[f"{name}/b"]
    return out


ARCHS = {"lstm": ("lstm", lstm_values), "transformer": ("transformer_encoder", transformer_values)}


@pytest.fixture(scope="module", params=list(ARCHS))
def case(request):
    """(arch, their arrays, their json, haiku's arrays -> ours by our names)."""
    arch = request.param
    fixture, values = ARCHS[arch]
    arrays, meta = load(fixture)
    return arch, arrays, meta, lambda haiku: values(meta, haiku)


def ours_from(mapping: Callable, haiku: dict) -> dict[str, Tensor]:
    """Haiku's arrays under our parameter names, in our layout."""
    return {name: torch.from_numpy(np.ascontiguousarray(v)) for name, v in mapping(haiku).items()}


def our_system(arch: str, meta: dict, haiku: dict, mapping: Callable) -> Transduction:
    """The shipped config's network at the fixture's sizes and rate, holding their initial
    parameters: every trained parameter of ours has one of theirs, and back."""
    config = CONFIG_DIR / "deletang" / "reverse_string" / f"{arch}.yaml"
    options = yaml.safe_load(config.read_text())["model"]["init_args"]
    options |= {"lr": meta["optimizer"]["learning_rate"], **sizes(arch, meta)}
    task = meta["task"]
    system = Transduction(
        **options,
        in_features=task["input_size"],
        out_features=task["output_size"],
        max_len=task["model_input_length"],
    )
    values = ours_from(mapping, haiku)
    trained = {n: p for n, p in system.named_parameters() if p.requires_grad}
    assert set(trained) == set(values)
    with torch.no_grad():
        for name, value in values.items():
            trained[name].copy_(value)
    return system


def sizes(arch: str, meta: dict) -> dict:
    kwargs = meta["builder_kwargs"]
    if arch == "lstm":
        return {"d_model": kwargs["hidden_size"]}
    width = kwargs["embedding_dim"]
    return {
        "d_model": width,
        "n_layers": kwargs["num_layers"],
        "n_heads": kwargs["num_heads"],
        "d_ff": 4 * width,  # their widening_factor's default
        "dropout": kwargs["dropout_prob"],
    }


def batch_of(arrays: dict) -> dict[str, Tensor]:
    """Their batch as a Transduction batch: one-hot x, target symbols y, every position scored."""
    y = torch.from_numpy(arrays["target"]).argmax(dim=-1)  # (B, T_out)
    return {"x": torch.from_numpy(arrays["input"]), "y": y, "mask": torch.ones_like(y, dtype=bool)}


def trained(case, max_norm: float, steps: int) -> dict[str, Tensor]:
    """Our parameters after ``steps`` clipped Adam steps on their batch, from theirs."""
    arch, arrays, meta, mapping = case
    system = our_system(arch, meta, params(arrays), mapping)
    optimizer, schedule = system.build_optimizer(total_steps=steps, clips=True)
    batch = batch_of(arrays)
    for _ in range(steps):
        optimizer.zero_grad()
        system.loss(batch).backward()
        torch.nn.utils.clip_grad_norm_(system.parameters(), max_norm)
        optimizer.step()
        schedule.step()
    return {name: p.detach() for name, p in system.named_parameters()}


def test_our_logits_are_theirs(case):
    arch, arrays, meta, mapping = case
    system = our_system(arch, meta, params(arrays), mapping).eval()
    batch = batch_of(arrays)
    with torch.no_grad():
        logits = system(batch["x"], batch["y"].shape[1])  # (B, T_out, C)
    torch.testing.assert_close(logits, torch.from_numpy(arrays["logits"]), **TOL)


def test_our_loss_and_gradients_are_theirs(case):
    arch, arrays, meta, mapping = case
    system = our_system(arch, meta, params(arrays), mapping)
    loss = system.loss(batch_of(arrays))
    torch.testing.assert_close(loss, torch.from_numpy(arrays["loss"]).reshape(()), **TOL)
    loss.backward()
    grads = {name: p.grad for name, p in system.named_parameters()}
    for name, theirs in ours_from(mapping, params(arrays, "grad:")).items():
        torch.testing.assert_close(grads[name], theirs, **TOL, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize(("steps", "prefix", "norm_key"), STEPS)
def test_our_clipped_adam_steps_are_theirs(case, steps, prefix, norm_key):
    """To ``TOL``, but for an element whose gradient is a cancellation's residue (|g| < 1e-6
    where its neighbours' are ~1e-3, known to float32 to ~1e-9): clipped to 0.05 it sits at
    Adam's eps (1e-8), where a step, lr g / (|g| + eps), moves with the last bits of g. The
    LSTM's weight_ih[23, 2]: g = -3.30e-8 here, -3.35e-8 theirs, clipped -1.1e-8, its step
    0.53 lr off by 0.7% (3.7e-6); such elements are held to lr / 100 a step."""
    arch, arrays, meta, mapping = case
    ours = trained(case, meta["optimizer"][norm_key], steps)
    grads = ours_from(mapping, params(arrays, "grad:"))
    lr = meta["optimizer"]["learning_rate"]
    for name, theirs in ours_from(mapping, params(arrays, prefix)).items():
        g = grads[name].abs()  # an exact 0 (a dead ReLU's) steps by 0 on both sides
        residue = (g > 0) & (g < 1e-6)
        msg = lambda m, n=name: f"{n}: {m}"  # noqa: E731
        torch.testing.assert_close(ours[name][~residue], theirs[~residue], **TOL, msg=msg)
        off = (ours[name][residue] - theirs[residue]).abs()
        assert (off <= steps * lr / 100).all(), (name, off)


def test_the_lstms_forget_constant_stays_frozen_and_two_trained_biases_miss_their_steps():
    """Their +1 is no parameter: ours holds it in ``bias_hh_l0``, which three clipped steps
    leave as it was. The two-bias LSTM (``single_bias: false``, the +1 in ``bias_ih``) is
    their network at the start but not after a step: Adam moves both biases, twice theirs."""
    arrays, meta = load("lstm")
    lstm = ("lstm", arrays, meta, lambda haiku: lstm_values(meta, haiku))
    hidden, max_norm = meta["builder_kwargs"]["hidden_size"], meta["optimizer"]["max_grad_norm"]
    constant = torch.zeros(4 * hidden)
    constant[hidden : 2 * hidden] = 1.0  # torch's forget quarter
    assert torch.equal(trained(lstm, max_norm, 3)["net.backbone.rnn.bias_hh_l0"], constant)

    system = our_system("lstm", meta, params(arrays), lstm[3])
    two = Transduction(**{**dict(system.hparams), "single_bias": False})
    rnn = two.net.backbone.rnn
    with torch.no_grad():
        for name, p in system.named_parameters():
            two.get_parameter(name).copy_(p)
        rnn.bias_ih_l0.add_(constant)  # the same network: the +1 in the trained bias
        rnn.bias_hh_l0.zero_()
    batch = batch_of(arrays)
    with torch.no_grad():
        torch.testing.assert_close(two(batch["x"], 5), torch.from_numpy(arrays["logits"]), **TOL)
    optimizer, _ = two.build_optimizer(total_steps=1, clips=True)
    two.loss(batch).backward()
    torch.nn.utils.clip_grad_norm_(two.parameters(), max_norm)
    optimizer.step()
    theirs = torch.from_numpy(torch_gates(params(arrays, "param_after:")["lstm/linear/b"]))
    effective = rnn.bias_ih_l0 + rnn.bias_hh_l0 - constant  # (4 hidden,), theirs' counterpart
    assert not torch.allclose(effective.detach(), theirs, **TOL)


def test_our_positions_are_their_table():
    """The sin|cos rows their encoder adds (``pos_encoding``, L = T + T_out), counted down
    from L, are what our ``pos_from_end`` / ``sincos_layout: concatenated`` encoding adds."""
    arrays, meta = load("transformer_encoder")
    theirs = torch.from_numpy(arrays["pos_encoding"])  # (L, E)
    length, width = theirs.shape
    system = our_system("transformer", meta, params(arrays), lambda h: transformer_values(meta, h))
    added = system.net.backbone.pos(torch.zeros(1, length, width))[0]
    torch.testing.assert_close(added, theirs, rtol=0, atol=1e-7)
