"""K systems of one shape as one: their weights stacked, their loss one vmapped call.

A population holds, for every parameter of its members' network, one tensor of shape
(K, *shape): member k's weights are row k. :func:`member_losses` computes every member's
training loss, ``loss_k = system.loss(batch_k)`` with member k's weights, in one
``torch.func.vmap`` over ``functional_call`` of one template system: a matrix product of one
member becomes one batched product of K, and a backward pass of the summed losses fills each
row of each stacked gradient with that member's own gradient (the members share nothing).

Recurrent backbones run their unrolled recurrence there, which vmap batches, and attention
one kernel call over every member's batch (``lit_seq.models.stacking``); a fused recurrence
anywhere else cannot run stacked (:func:`unstackable`).
Nothing may draw from torch's random stream inside (``randomness="error"``): a member must
compute what its solo run computes, and one shared stream cannot give that. Dropout computes
its masks instead, each member's from its own seed and step (``lit_seq.models.dropout``).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap

from lit_seq.models.dropout import dropout_stream
from lit_seq.models.recurrent import RecurrentBackbone
from lit_seq.models.stacking import stacked_members


def unstackable(module: nn.Module) -> str:
    """Why ``module``'s members cannot train stacked, or "" when they can.

    A fused recurrence (``nn.RNN`` / ``nn.LSTM``) runs stacked only as the unrolled one, which
    ``RecurrentBackbone`` switches to (forward-only); the seq2seq recurrent encoder-decoder
    packs variable-length sequences through its own and cannot.
    """
    wrapped = {id(m.rnn) for m in module.modules() if isinstance(m, RecurrentBackbone)}
    for name, sub in module.named_modules():
        if isinstance(sub, nn.RNNBase) and id(sub) not in wrapped:
            where = name or type(module).__name__
            return f"{where} is a fused {type(sub).__name__} outside a RecurrentBackbone"
        if isinstance(sub, RecurrentBackbone) and sub.bidirectional:
            return f"{name} is a bidirectional recurrence"
    return ""


class _Loss(nn.Module):
    """``system.loss(batch)`` as a module's forward, so ``functional_call`` can swap the
    system's weights for one member's."""

    def __init__(self, system: nn.Module) -> None:
        super().__init__()
        self.system = system

    def forward(self, batch: dict[str, Tensor]) -> Tensor:
        return self.system.loss(batch)


def stack_weights(systems: list[nn.Module]) -> dict[str, Tensor]:
    """name -> (K, *shape): every parameter of ``systems`` (same structure), row k from
    ``systems[k]`` (copies, detached)."""
    names = [name for name, _ in systems[0].named_parameters()]
    per_member = [dict(s.named_parameters()) for s in systems]
    return {n: torch.stack([p[n].detach() for p in per_member]).clone() for n in names}


def _aliases(module: nn.Module) -> dict[str, str]:
    """Each attribute holding a parameter (tied weights sit in several) -> the parameter's
    first name. A module reached by two paths (seq2seq's shared embedding) counts once:
    swapping its weight twice would leave the stacked one behind when the swap is undone."""
    first: dict[int, str] = {}
    seen: set[tuple[int, str]] = set()
    out = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        owner, _, leaf = name.rpartition(".")
        slot = (id(module.get_submodule(owner)), leaf)
        if slot not in seen:
            seen.add(slot)
            out[name] = first.setdefault(id(param), name)
    return out


def member_losses(
    template: nn.Module,
    stacked: dict[str, Tensor],
    batch: dict,
    seeds: Tensor | None = None,
    steps: Tensor | None = None,
) -> Tensor:
    """(K,) training losses: member k's ``template.loss(batch[.][k])`` with weights row k.

    ``template``: one member's system (its buffers are shared: they are constants such as
    positional tables, equal in every member of a population). ``batch``: name -> (K, ...).
    ``seeds``, ``steps``: (K,) integer tensors, each member's dropout seed and optimizer step:
    member k's dropout masks are those of its own (seed, step) (``models/dropout.py``), the
    masks its solo run draws at that step. Without them a dropout > 0 fails (vmap refuses
    torch's random draws: ``randomness="error"``).
    """
    loss = _Loss(template)
    # a tied weight (seq2seq's embeddings and output layer) is handed under each of its
    # names: functional_call's own tying leaves one alias pointing at a vmapped tensor
    aliases = _aliases(template)

    def one(weights: dict[str, Tensor], member_batch: dict[str, Tensor]) -> Tensor:
        named = {f"system.{alias}": weights[name] for alias, name in aliases.items()}
        return functional_call(loss, named, (member_batch,), strict=False, tie_weights=False)

    def one_with_dropout(weights, member_batch, seed: Tensor, step: Tensor) -> Tensor:
        with dropout_stream(seed, step):
            return one(weights, member_batch)

    with stacked_members():
        if seeds is None or steps is None:
            return vmap(one, randomness="error")(stacked, batch)
        return vmap(one_with_dropout, randomness="error")(stacked, batch, seeds, steps)
