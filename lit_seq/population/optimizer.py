"""One Adam / AdamW step for K members: stacked tensors, each member its own hyperparameters.

Member k's update is torch's own single-tensor Adam (``torch.optim.Adam``, or ``AdamW`` with
decoupled weight decay) applied to row k of every stacked parameter, with member k's learning
rate (its peak rate times its schedule's factor at its step), weight decay and kind; the
same arithmetic in the same order, so a member's weights follow its solo run's. Its gradient
is first clipped by its own norm (``torch.nn.utils.clip_grad_norm_`` over its rows), as
Lightning's ``gradient_clip_val`` clips a solo run's. A member that stopped (target reached,
diverged) is no longer updated: its rows keep their values bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class MemberHyper:
    """What one member's optimizer and schedule are (its system's options)."""

    lr: float
    weight_decay: float
    decoupled: bool  # AdamW (decoupled weight decay) vs Adam (L2 added to the gradient)
    factor: Callable[[int], float]  # the schedule: lr at step n is lr * factor(n)
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8


def _rows(values: list[float], like: Tensor) -> Tensor:
    """(K,) of ``values`` (computed as Python floats) in ``like``'s dtype and device."""
    return torch.tensor(values, dtype=torch.float64).to(like)


class PopulationAdam(torch.optim.Optimizer):
    """Adam / AdamW over stacked (K, ...) parameters, one set of hyperparameters per row.

    Args:
        params: the stacked parameters (one group).
        members: each member's hyperparameters, row order.
        clip_norm: clip each member's gradient to this norm first (None: no clipping).
    """

    def __init__(self, params, members: list[MemberHyper], clip_norm: float | None = None):
        super().__init__(params, {"lr": members[0].lr})
        self.members = members
        self.clip_norm = clip_norm
        k = len(members)
        self.active = torch.ones(k, dtype=torch.bool)  # rows still training
        self.steps = torch.zeros(k, dtype=torch.long)  # optimizer steps taken, per member

    def stop(self, k: int) -> None:
        """Member ``k`` takes no more steps; its rows stay as they are."""
        self.active[k] = False

    def current_lrs(self) -> list[float]:
        """Each member's learning rate for its next step (its schedule at its step)."""
        return [m.lr * m.factor(int(n)) for m, n in zip(self.members, self.steps, strict=True)]

    def clip_gradients(self) -> Tensor:
        """Clip each member's gradient by its own total norm, as ``clip_grad_norm_`` clips a
        solo run's; returns the (K,) norms before clipping."""
        grads = [p.grad for p in self.param_groups[0]["params"] if p.grad is not None]
        k = len(self.members)
        norms = torch.stack([torch.linalg.vector_norm(g.reshape(k, -1), 2, dim=1) for g in grads])
        total = torch.linalg.vector_norm(norms, 2, dim=0)  # (K,)
        if self.clip_norm is not None:
            coef = torch.clamp(self.clip_norm / (total + 1e-6), max=1.0)
            for g in grads:
                g.mul_(coef.to(g.dtype).reshape((k,) + (1,) * (g.dim() - 1)))
        return total

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        params = [p for p in self.param_groups[0]["params"] if p.grad is not None]
        if params:
            lrs = self.current_lrs()
            self.steps += self.active.long()
            numbers = self._numbers(lrs, params[0])
            for param in params:
                self._update(param, numbers)
        return loss

    def _numbers(self, lrs: list[float], like: Tensor) -> dict[str, Tensor]:
        """This step's per-member numbers as (K,) tensors, each computed as torch's Adam
        computes it for one member (Python floats), then cast like the parameters."""
        members, steps = self.members, [max(int(n), 1) for n in self.steps]
        rows = {
            "keep": [
                1 - lr * m.weight_decay if m.decoupled else 1.0
                for m, lr in zip(members, lrs, strict=True)
            ],
            "l2": [0.0 if m.decoupled else m.weight_decay for m in members],
            "one_minus_beta1": [1 - m.betas[0] for m in members],
            "beta2": [m.betas[1] for m in members],
            "one_minus_beta2": [1 - m.betas[1] for m in members],
            "correction2": [
                math.sqrt(1 - m.betas[1] ** n) for m, n in zip(members, steps, strict=True)
            ],
            "eps": [m.eps for m in members],
            "neg_step_size": [
                -(lr / (1 - m.betas[0] ** n)) for m, lr, n in zip(members, lrs, steps, strict=True)
            ],
        }
        out = {name: _rows(values, like) for name, values in rows.items()}
        out["active"] = self.active.to(like.device)
        out["decay"] = any(m.decoupled and m.weight_decay for m in members)
        out["add_l2"] = any(rows["l2"])
        return out

    def _update(self, param: Tensor, numbers: dict) -> None:
        """One member-wise Adam step of ``param`` (K, ...): torch's single-tensor Adam, row k
        with member k's numbers."""
        state = self.state[param]
        if not state:
            state["exp_avg"] = torch.zeros_like(param)
            state["exp_avg_sq"] = torch.zeros_like(param)
        grad, exp_avg, exp_avg_sq = param.grad, state["exp_avg"], state["exp_avg_sq"]
        shape = (-1,) + (1,) * (param.dim() - 1)  # a (K,) row of numbers over each member

        def row(name: str) -> Tensor:
            return numbers[name].view(shape)

        new_param = param.clone()
        if numbers["decay"]:  # AdamW: param.mul_(1 - lr * weight_decay)
            new_param.mul_(row("keep"))
        if numbers["add_l2"]:  # Adam: grad = grad.add(param, alpha=weight_decay)
            grad = grad + new_param * row("l2")
        new_avg = exp_avg.lerp(grad, row("one_minus_beta1"))
        new_sq = exp_avg_sq * row("beta2") + row("one_minus_beta2") * grad * grad
        denom = (new_sq.sqrt() / row("correction2")).add_(row("eps"))
        new_param.add_(new_avg / denom * row("neg_step_size"))
        active = row("active")
        param.copy_(torch.where(active, new_param, param))
        exp_avg.copy_(torch.where(active, new_avg, exp_avg))
        exp_avg_sq.copy_(torch.where(active, new_sq, exp_avg_sq))
