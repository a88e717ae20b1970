"""The population system: one LightningModule that trains K members of one shape at once.

Every member is a solo system (``lit_seq.systems``), built exactly as its solo fit builds it
(its own seed, so its own initial weights and data). The population takes their weights as
stacked parameters, (K, *shape) each, and trains them in one Trainer loop: one forward of
all members (``stacked.member_losses``), one backward of the summed losses, one optimizer
step (``optimizer.PopulationAdam``: each member its own rate, schedule and weight decay,
clipped by its own gradient norm). Validation runs each member's own ``evaluate`` with its
current weights, so a member's scores are computed by the code that scores its solo run;
what happens with them (logs, checkpoints, target, divergence) is the member's business
(each member's ``RunBook``, through ``members.MembersKeeper``). A test scores each member on
its own test sets, one pass over each for all.
"""

from __future__ import annotations

import lightning as L
import torch
from torch import Tensor, nn

from lit_seq.population.loader import member_batch
from lit_seq.population.optimizer import MemberHyper, PopulationAdam
from lit_seq.population.stacked import member_losses, stack_weights
from lit_seq.systems import SequenceSystem
from lit_seq.systems.compiled import compile_loss, compiles, new_step
from lit_seq.systems.optimizers import OPTIMIZERS
from lit_seq.systems.schedules import schedule_factor


def stacked_name(name: str) -> str:
    """The key of a member parameter's stacked tensor (a module's key may not hold a dot)."""
    return name.replace(".", "__")


def member_hyper(system: SequenceSystem, total_steps: int) -> MemberHyper:
    """A member's optimizer and schedule, from its system's options (as ``build_optimizer``
    makes them for its solo run)."""
    hp = system.hparams
    if hp.optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer={hp.optimizer!r}; a population trains {list(OPTIMIZERS)}")
    return MemberHyper(
        lr=hp.lr,
        weight_decay=hp.weight_decay,
        decoupled=hp.optimizer == "adamw",
        factor=schedule_factor(hp.schedule, hp.warmup_steps, total_steps),
    )


class PopulationSystem(L.LightningModule):
    """K member systems trained as one.

    Args:
        members: the member systems (same class, same parameter shapes).
        clip_norm: each member's gradient-norm clip (its solo run's ``gradient_clip_val``).
        on_validation: called after each validation with ``(k, {"val/loss": ..., ...})`` for
            every member still training; it returns True when member k stops there.
        compile_choice: the members' ``--compile`` (``lit_seq.systems.compiled``): whether
            the members' losses (one vmapped call) run compiled.

    ``last_losses`` holds the (K,) losses of the latest training step. A test
    (``Trainer.test``) scores the members listed in ``tested`` on their own test sets, each
    with its own ``evaluate``, into ``test_results``.
    """

    def __init__(
        self,
        members: list[SequenceSystem],
        clip_norm: float | None,
        on_validation=None,
        compile_choice: str = "off",
    ) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        trained = {n: p.requires_grad for n, p in members[0].named_parameters()}
        self.stacked = nn.ParameterDict(  # a frozen parameter (a constant) stays frozen
            {
                stacked_name(n): nn.Parameter(t, requires_grad=trained[n])
                for n, t in stack_weights(members).items()
            }
        )
        self.names = {stacked_name(n): n for n, _ in members[0].named_parameters()}
        self.clip_norm = clip_norm
        self.on_validation = on_validation
        self.compile_choice = compile_choice
        self._losses = self.stacked_losses  # compiled as the fit starts, if it is to be
        self._seeds: Tensor | None = None  # the members' dropout seeds, as the fit starts
        self._val_sums: list[list] = []
        self.last_losses: Tensor | None = None
        self.tested: list[int] = []  # the members a test scores (those that did not fail)
        self._test_sums: dict[int, dict] = {}
        self.test_results: dict[int, dict[str, float]] = {}  # per member: what it scored

    # -- what the members' weights are ---------------------------------------------------

    def weights(self) -> dict[str, Tensor]:
        """name (as in a member system) -> stacked (K, ...) parameter."""
        return {self.names[key]: p for key, p in self.stacked.items()}

    @torch.no_grad()
    def sync_member(self, k: int) -> SequenceSystem:
        """Member ``k``'s system with its current weights (row k) copied in."""
        member = self.members[k]
        for name, param in member.named_parameters():
            param.copy_(self.stacked[stacked_name(name)][k])
        return member

    def dropout_seeds(self) -> Tensor:
        """(K,) int64 on the weights' device: each member's dropout seed (its run's seed, as
        a 64-bit word)."""
        seeds = [m.dropout_seed if m.dropout_seed is not None else 0 for m in self.members]
        words = [s - 2**64 if s >= 2**63 else s for s in seeds]  # int64 holds 64-bit words
        return torch.tensor(words, dtype=torch.int64, device=self.device)

    @property
    def optimizer(self) -> PopulationAdam:
        return self.optimizers().optimizer if self._trainer else self._optimizer

    # -- Lightning hooks ---------------------------------------------------------------------

    def stacked_losses(
        self, weights: dict[str, Tensor], batch: dict[str, Tensor], seeds: Tensor, steps: Tensor
    ) -> Tensor:
        """(K,) training losses, member k's with its weights (row k) on its batch (row k),
        its dropout masks those of its seed and step (row k of ``seeds`` and ``steps``)."""
        return member_losses(self.members[0], weights, batch, seeds, steps)

    def on_fit_start(self) -> None:
        self._seeds = self.dropout_seeds()  # fixed for the fit: made on the device once
        if compiles(self.compile_choice, self.device):
            self._losses = compile_loss(self.stacked_losses, self.device, unrolled=True)

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> Tensor:
        new_step(self.device)  # CUDA graphs: the last step's outputs are free to reuse
        seeds = self._seeds  # with each member's step: its own dropout masks
        steps = self.optimizer.steps.to(seeds.device)
        losses = self._losses(self.weights(), batch, seeds, steps)  # (K,); no host sync inside
        active = self.optimizer.active.to(losses.device)
        self.last_losses = losses.detach().clone()  # a copy: CUDA graphs reuse their outputs
        # a stopped member's loss may be anything (a diverged one's is NaN): out of the sum
        return torch.where(active, losses, torch.zeros_like(losses)).sum()

    def on_after_backward(self) -> None:
        inactive = ~self.optimizer.active
        if inactive.any():  # 0 * NaN is NaN: a stopped member's rows get no gradient at all
            for p in self.stacked.values():
                if p.grad is not None:
                    p.grad[inactive.to(p.device)] = 0

    def configure_gradient_clipping(
        self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
    ) -> None:
        self.optimizer.clip_gradients()  # each member by its own norm

    def on_validation_epoch_start(self) -> None:
        self._val_sums = [[0.0, 0] for _ in self.members]
        for k in self._active_members():
            self.sync_member(k)

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        for k in self._active_members():
            member = self.members[k]
            one = member_batch(batch, k)
            loss = member.evaluate(one, member.val_metrics)
            size = next(iter(one.values())).shape[0]
            # Lightning's epoch mean of a logged value: sum of value * batch size / examples
            sums = self._val_sums[k]
            sums[0] = sums[0] + loss.mean() * size
            sums[1] += size

    def on_validation_epoch_end(self) -> None:
        for k in self._active_members():
            member = self.members[k]
            total, count = self._val_sums[k]
            scores = {"val/loss": float(total / count)}
            scores |= {name: float(v) for name, v in member.val_metrics.compute().items()}
            member.val_metrics.reset()
            if self.on_validation is not None and self.on_validation(k, scores):
                self.optimizer.stop(k)
        if not self.optimizer.active.any():
            self.trainer.should_stop = True

    # -- the test: every member's own test sets, one pass over each for all -----------------

    def on_test_epoch_start(self) -> None:
        self._test_sums = {k: {} for k in self.tested}
        self.test_results = {k: {} for k in self.tested}

    def test_step(self, batch: dict[str, Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        for k in self.tested:
            member = self.members[k]
            prefix = list(member.test_metrics.keys())[dataloader_idx]
            one = member_batch(batch, k)
            loss = member.evaluate(one, member.test_metrics[prefix])
            size = next(iter(one.values())).shape[0]
            total, count = self._test_sums[k].get(prefix, (0.0, 0))
            self._test_sums[k][prefix] = (total + loss.mean() * size, count + size)

    def on_test_epoch_end(self) -> None:
        # what a solo test logs: each set's mean loss (weighted by batch size), its metrics
        for k in self.tested:
            member, results = self.members[k], self.test_results[k]
            for prefix, (total, count) in self._test_sums[k].items():
                results[f"{prefix}/loss"] = float(total / count)
                metrics = member.test_metrics[prefix]
                results |= {name: float(v) for name, v in metrics.compute().items()}
                metrics.reset()

    def configure_optimizers(self):
        total = int(self.trainer.estimated_stepping_batches) if self._trainer else 1
        hypers = [member_hyper(m, total) for m in self.members]
        trained = [p for p in self.stacked.values() if p.requires_grad]
        self._optimizer = PopulationAdam(trained, hypers, self.clip_norm)
        return self._optimizer

    def _active_members(self) -> list[int]:
        return [k for k, on in enumerate(self.optimizer.active.tolist()) if on]
