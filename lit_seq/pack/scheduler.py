"""K fits in lockstep in one thread, their training forwards and backwards served as one.

Each member of a :class:`Pack` is an ordinary fit (``lit_seq.fit``: its own Trainer,
callbacks, checkpoints, loggers, run folder) running in its own greenlet, a coroutine with
its own stack. :func:`attach` makes the member's system hand two things to the pack instead
of doing them itself: its network's training forward and its loss's backward. The pack
resumes every member in turn until each has posted one of those requests (or finished),
then serves the round: forwards of stacked-compatible networks on same-shape inputs as one
``stacked_call``, the backwards of all members as one ``torch.autograd.backward`` (each
member's parameters are disjoint, so each gets exactly its own gradient). Everything else,
its data, optimizer step, validation, checkpointing and logging, each member does itself,
with its own RNG streams and its own log file: the pack swaps the global RNG states (torch,
CUDA, ``random``, NumPy, Lightning's seed variables) and stdout / stderr on every switch,
so a member computes what the same fit computes alone.

A member that finishes (its budget, its target, an error) leaves; the others go on. A group
of one, a call that does not stack, or a stacked call that fails is done by the member
itself, unpacked.
"""

from __future__ import annotations

import os
import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from greenlet import greenlet
from torch import Tensor, nn

from lit_seq.pack.stacked import call_key, stacked_call, structure_key

SEED_VARIABLES = ("PL_GLOBAL_SEED", "PL_SEED_WORKERS")  # what Lightning's seeding sets
AUTOCAST = ("cpu", "cuda")
_SOLO = object()  # a reply: do it yourself


@dataclass
class _Saved:
    """A member's share of the process-wide state, kept while it is not running."""

    torch_rng: Tensor
    cuda_rng: list[Tensor] | None
    python_rng: object
    numpy_rng: object
    env: dict[str, str | None]
    # thread-local or process-wide modes that a fit sets around its steps (greenlets share
    # the thread): Lightning's 64-true sets the default dtype, its precision autocast
    default_dtype: torch.dtype
    grad_enabled: bool
    autocast: dict[str, tuple[bool, torch.dtype]]


@dataclass(eq=False)
class Member:
    """One fit of a pack: its greenlet, its log file and its saved state."""

    name: str
    main: Callable[[], object]
    log: Path | None = None
    result: object = None
    error: BaseException | None = None
    glet: greenlet | None = None
    saved: _Saved | None = None
    log_fd: int | None = None
    stats: dict = field(default_factory=lambda: {"stacked": 0, "solo": 0})

    @property
    def done(self) -> bool:
        return self.glet is not None and self.glet.dead


@dataclass
class _Request:
    member: Member
    kind: str  # forward | backward
    module: nn.Module | None = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    loss: Tensor | None = None


class Pack:
    """Members added with :meth:`add`, run together by :meth:`run`."""

    def __init__(self) -> None:
        self.members: list[Member] = []
        self.hub: greenlet | None = None
        self.current: Member | None = None
        self.stacking = False  # inside a stacked call: forwards run as themselves
        self.failed_keys: set = set()
        self.hub_state: _Saved | None = None

    def add(self, name: str, main: Callable[[], object], log: Path | None = None) -> Member:
        member = Member(name, main, Path(log) if log else None)
        self.members.append(member)
        return member

    # -- inside a member ------------------------------------------------------------------

    def in_member(self) -> bool:
        return self.current is not None and not self.stacking

    def request(self, request: _Request):
        """Post ``request`` to the pack and wait for its reply (member side)."""
        assert self.hub is not None
        return self.hub.switch(request)

    # -- the hub ----------------------------------------------------------------------------

    def run(self, on_done: Callable[[Member], None] | None = None) -> list[Member]:
        """Run every member to its end; ``on_done(member)`` as each one finishes."""
        self.hub = greenlet.getcurrent()
        self.hub_state = _capture()
        hub_fds = self._open_logs()
        replies: dict[int, object] = {}
        live = list(self.members)
        for member in live:
            member.glet = greenlet(self._member_main(member))
        try:
            while live:
                requests = []
                for member in list(live):
                    request = self._resume(member, replies.pop(id(member), None), hub_fds)
                    if member.done:
                        live.remove(member)
                        stacked, alone = member.stats["stacked"], member.stats["solo"]
                        self._note(
                            [member],
                            f"lit_seq: packed in a pack of {len(self.members)}: {stacked} of "
                            f"{stacked + alone} training forwards stacked with other members'",
                        )
                        self._close_log(member)
                        if on_done is not None:
                            on_done(member)
                    else:
                        requests.append(request)
                replies = self._serve(requests)
        finally:
            for fd in hub_fds:
                os.close(fd)
            for member in self.members:
                self._close_log(member)
        return self.members

    def _member_main(self, member: Member) -> Callable[[], None]:
        def main(_first_reply=None) -> None:
            try:
                member.result = member.main()
            except BaseException as err:  # noqa: BLE001 - a member's failure is its own
                member.error = err
                traceback.print_exc()

        return main

    def _open_logs(self) -> tuple[int, int]:
        for member in self.members:
            if member.log is not None:
                member.log.parent.mkdir(parents=True, exist_ok=True)
                member.log_fd = os.open(member.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        return os.dup(1), os.dup(2)

    def _note(self, members: list[Member], line: str, warning: bool = False) -> None:
        """A line of the pack's own in the log of each of ``members``; a warning goes to
        stderr for a member without a log file."""
        for member in members:
            if member.log_fd is not None:
                os.write(member.log_fd, f"{line}\n".encode())
            elif warning:
                print(line, file=sys.stderr)

    def _close_log(self, member: Member) -> None:
        if member.log_fd is not None:
            os.close(member.log_fd)
            member.log_fd = None

    def _resume(self, member: Member, reply, hub_fds: tuple[int, int]):
        """Switch into ``member`` with its state until it posts a request or ends."""
        self._enter(member)
        try:
            return member.glet.switch(reply)
        finally:
            self._leave(member, hub_fds)

    def _enter(self, member: Member) -> None:
        self.current = member
        if member.log_fd is not None:
            _flush()
            os.dup2(member.log_fd, 1)
            os.dup2(member.log_fd, 2)
        # its first turn starts from the hub's state, as a fit alone starts from the process's
        _restore(member.saved or self.hub_state)

    def _leave(self, member: Member, hub_fds: tuple[int, int]) -> None:
        member.saved = _capture()
        _restore(self.hub_state)
        if member.log_fd is not None:
            _flush()
            os.dup2(hub_fds[0], 1)
            os.dup2(hub_fds[1], 2)
        self.current = None

    def _serve(self, requests: list[_Request]) -> dict[int, object]:
        """The reply to every request of one round, by member."""
        replies: dict[int, object] = {}
        groups: dict[tuple, list[_Request]] = {}
        backwards = []
        for request in requests:
            if request.kind == "backward":
                backwards.append(request)
                continue
            key = call_key((request.args, request.kwargs))
            if key is None:
                replies[id(request.member)] = _SOLO
                continue
            groups.setdefault((structure_key(request.module), key), []).append(request)
        for key, group in groups.items():
            outputs = None
            if len(group) > 1 and key not in self.failed_keys:
                outputs = self._stacked(key, group)
            for i, request in enumerate(group):
                replies[id(request.member)] = _SOLO if outputs is None else outputs[i]
                request.member.stats["solo" if outputs is None else "stacked"] += 1
        if backwards:
            try:
                torch.autograd.backward([r.loss for r in backwards])
                reply = None
            except RuntimeError:
                reply = _SOLO  # each member's own backward says what was wrong with it
            for request in backwards:
                replies[id(request.member)] = reply
        return replies

    def _stacked(self, key: tuple, group: list[_Request]) -> list | None:
        self.stacking = True
        _restore(group[0].member.saved)  # the members' modes (autocast, grad) for the call
        try:
            return stacked_call([r.module for r in group], [(r.args, r.kwargs) for r in group])
        except Exception as err:  # noqa: BLE001 - unpacked is slower, never wrong
            self.failed_keys.add(key)
            self._note(
                [r.member for r in group],
                f"lit_seq: warning: packed forward of {type(group[0].module).__name__} failed "
                f"({type(err).__name__}: {err}); these members run it unpacked",
                warning=True,
            )
            return None
        finally:
            _restore(self.hub_state)
            self.stacking = False


def _capture() -> _Saved:
    """The process-wide state a member owns while it runs (see :class:`_Saved`)."""
    cuda = torch.cuda.is_initialized()
    return _Saved(
        torch.get_rng_state(),
        torch.cuda.get_rng_state_all() if cuda else None,
        random.getstate(),
        np.random.get_state(),
        {key: os.environ.get(key) for key in SEED_VARIABLES},
        torch.get_default_dtype(),
        torch.is_grad_enabled(),
        {d: (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in AUTOCAST},
    )


def _restore(saved: _Saved) -> None:
    torch.set_rng_state(saved.torch_rng)
    if saved.cuda_rng is not None:
        torch.cuda.set_rng_state_all(saved.cuda_rng)
    random.setstate(saved.python_rng)
    np.random.set_state(saved.numpy_rng)
    for key, value in saved.env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    torch.set_default_dtype(saved.default_dtype)
    torch.set_grad_enabled(saved.grad_enabled)
    for device, (enabled, dtype) in saved.autocast.items():
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def attach(pack: Pack, system) -> None:
    """Make ``system`` (a ``SequenceSystem`` of a member being built) train through ``pack``:
    its network's training forwards and its backwards become requests to the pack."""
    net: nn.Module = system.net
    forward, backward = net.forward, system.backward

    def packed_forward(*args, **kwargs):
        if net.training and torch.is_grad_enabled() and pack.in_member():
            reply = pack.request(_Request(pack.current, "forward", net, args, kwargs))
            if reply is not _SOLO:
                return reply
        return forward(*args, **kwargs)

    def packed_backward(loss: Tensor, *args, **kwargs) -> None:
        if pack.in_member() and not args and not kwargs:
            reply = pack.request(_Request(pack.current, "backward", loss=loss))
            if reply is not _SOLO:
                return
        backward(loss, *args, **kwargs)

    net.forward = packed_forward
    system.backward = packed_backward
