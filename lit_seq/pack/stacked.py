"""K networks of one architecture run as one: their weights stacked, the call vmapped.

Given K modules with the same structure (same class, same parameter and buffer names and
shapes, same non-tensor arguments) and one call's arguments per module, :func:`stacked_call`
returns each module's output as if it had been called on its own, from one computation over
the K of them: every parameter is ``torch.stack``-ed over the K modules (differentiably, so
a backward pass fills each module's own ``.grad``) and ``torch.func.vmap`` maps the first
module's ``forward`` (through ``functional_call``) over the stacked weights and inputs. A
matrix product of one model becomes one batched product of K; recurrent backbones run their
unrolled recurrence (``lit_seq.models.unrolled``), which vmap can batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap
from torch.utils._pytree import tree_flatten, tree_unflatten

from lit_seq.models.recurrent import RecurrentBackbone
from lit_seq.models.unrolled import unrolled_recurrences

Call = tuple[tuple, dict]  # (args, kwargs) of one module's forward


def _tensors(module: nn.Module) -> dict[str, Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def unstackable(module: nn.Module) -> str:
    """Why ``module`` cannot run in a stacked call, or "" when it can.

    A fused recurrence (``nn.RNN`` / ``nn.LSTM``) can only run as the unrolled one, which
    ``RecurrentBackbone`` switches to; any other (the seq2seq recurrent encoder-decoder packs
    variable-length sequences through its own) would be called under vmap, which fails and
    leaves the module's cached weight list pointing at vmapped tensors.
    """
    wrapped = {id(m.rnn) for m in module.modules() if isinstance(m, RecurrentBackbone)}
    for name, sub in module.named_modules():
        if isinstance(sub, nn.RNNBase) and id(sub) not in wrapped:
            where = name or type(module).__name__
            return f"{where} is a fused {type(sub).__name__} outside a RecurrentBackbone"
        if isinstance(sub, RecurrentBackbone) and sub.bidirectional:
            return f"{name} is a bidirectional recurrence"
    return ""


def structure_key(module: nn.Module) -> tuple:
    """What must agree for modules to stack: class, training flag and every tensor's name,
    shape and dtype."""
    tensors = tuple((k, tuple(v.shape), v.dtype) for k, v in _tensors(module).items())
    return (type(module).__qualname__, module.training, tensors)


def call_key(call: Call) -> tuple | None:
    """What must agree for calls to stack: the argument tree, every tensor's shape and dtype,
    every other value itself. None when a value cannot be compared (it will not stack)."""
    leaves, spec = tree_flatten(call)
    key = []
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            key.append(("tensor", tuple(leaf.shape), leaf.dtype, leaf.device))
        else:
            try:
                hash(leaf)
            except TypeError:
                return None
            key.append(("value", leaf))
    return (str(spec), tuple(key))


def stacked_call(modules: Sequence[nn.Module], calls: Sequence[Call]) -> list:
    """``[modules[k](*args_k, **kwargs_k) for k]``, computed as one vmapped call.

    The modules must share :func:`structure_key` and the calls :func:`call_key` (the caller
    groups them so), and be stackable (:func:`unstackable`; else ValueError, before anything
    is touched). Nothing random may run inside (dropout > 0 raises): a packed run must
    compute what its solo run computes.
    """
    template = modules[0]
    why = unstackable(template)
    if why:
        raise ValueError(f"cannot stack {type(template).__name__}: {why}")
    names = list(_tensors(template))
    per_module = [_tensors(m) for m in modules]
    stacked = {name: torch.stack([t[name] for t in per_module]) for name in names}
    flat_calls = [tree_flatten(call)[0] for call in calls]
    _, spec = tree_flatten(calls[0])
    is_tensor = [isinstance(leaf, Tensor) for leaf in flat_calls[0]]
    inputs = [
        torch.stack([flat[i] for flat in flat_calls])
        for i, tensor in enumerate(is_tensor)
        if tensor
    ]
    fixed = flat_calls[0]

    def one(weights: dict[str, Tensor], tensors: list[Tensor]):
        it = iter(tensors)
        leaves = [next(it) if tensor else fixed[i] for i, tensor in enumerate(is_tensor)]
        args, kwargs = tree_unflatten(leaves, spec)
        return functional_call(template, weights, args, kwargs, strict=True)

    with unrolled_recurrences():
        out = vmap(one, randomness="error")(stacked, inputs)
    flat_out, out_spec = tree_flatten(out)
    return [tree_unflatten([leaf[k] for leaf in flat_out], out_spec) for k in range(len(modules))]
