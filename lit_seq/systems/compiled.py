"""The captured training step (``--compile``): a training loss through ``torch.compile``.

What is compiled is the function from a batch to the training loss: a system's ``loss`` (its
network's forward and the loss) in a solo fit, ``population.stacked.member_losses`` (every
member's) in a population. AOTAutograd compiles its backward with it. The optimizer step,
gradient clipping and Lightning's bookkeeping stay eager, outside. On a GPU the mode is
``reduce-overhead`` (the step replayed as CUDA graphs: one launch instead of one per kernel);
on a CPU the default mode (Inductor's fused C++ kernels).

Nothing inside the loss reads a tensor's value on the host (no ``.item()``, no ``float(t)``,
no Python branch on a tensor): tests/test_compile.py traces every family with no graph break
but one: a fused ``nn.RNN`` / ``nn.LSTM`` (solo rnn and lstm), which Dynamo does not trace
and runs eagerly between two compiled graphs (one cuDNN kernel a layer on a GPU).

Shapes: the first batch compiles a graph for its shape; the first batch of another length
(a curriculum, fresh sampling's lengths, a smaller last batch) compiles once more, that
dimension now symbolic (``dynamic=None``: PyTorch's automatic dynamic shapes), and serves every
later length. Two compiles, not one per length, except where the step loops over time in
Python (a population's unrolled rnn / lstm recurrence, the mamba and linear_rnn scan): one
graph per length, and past Dynamo's ``recompile_limit`` (8 graphs) that step runs eagerly.
Compiling takes 10 s to 5 min a graph on 2 busy CPU cores, counted in the fit's training time.
"""

from collections.abc import Callable
from typing import Literal

import torch

COMPILE_CHOICES = ("auto", "on", "off")
CompileChoice = Literal["auto", "on", "off"]


def compiles(choice: str, device: torch.device | str) -> bool:
    """Whether ``choice`` (``--compile``) compiles the step of a fit on ``device``: ``auto``
    on a GPU only (on a 2-core CPU compiled steps ran 0.6-1.18x eager for the Delétang and
    matrix transformer and recurrent rows, docs/performance.md)."""
    if choice not in COMPILE_CHOICES:
        raise ValueError(f"compile={choice!r}; allowed: {list(COMPILE_CHOICES)}")
    return choice == "on" or (choice == "auto" and torch.device(device).type == "cuda")


def compile_mode(device: torch.device | str) -> str:
    """torch.compile's mode on ``device``: CUDA graphs on a GPU, the default elsewhere."""
    return "reduce-overhead" if torch.device(device).type == "cuda" else "default"


def describe_compile(choice: str, device: torch.device | str) -> str:
    """What the header says: ``on (reduce-overhead)``, ``off (auto on cpu)``, ..."""
    on = compiles(choice, device)
    how = compile_mode(device) if on else ""
    why = f"auto on {torch.device(device).type}" if choice == "auto" else ""
    detail = ", ".join(part for part in (how, why) if part)
    return f"{'on' if on else 'off'}" + (f" ({detail})" if detail else "")


def compile_loss(
    fn: Callable, device: torch.device | str, backend: str = "inductor", unrolled: bool = False
) -> Callable:
    """``fn`` (batch -> loss) compiled for ``device``.

    Args:
        backend: Inductor, or a cheaper one (``aot_eager``: traced and autograd-compiled, no
            code generated) where a test only needs the graph.
        unrolled: ``fn`` runs its recurrences unrolled (a population's): Dynamo may then
            hold a fused ``nn.RNN`` / ``nn.LSTM`` (``allow_rnn``), whose weights the unrolled
            recurrence reads; left False, it does not trace one and runs it eagerly.
    """
    mode = compile_mode(device) if backend == "inductor" else None
    compiled = torch.compile(fn, backend=backend, mode=mode, dynamic=None)
    if not unrolled:
        return compiled

    def with_rnn_modules(*args, **kwargs):
        with torch._dynamo.config.patch(allow_rnn=True):
            return compiled(*args, **kwargs)

    return with_rnn_modules


def new_step(device: torch.device | str) -> None:
    """Tell CUDA graph trees that a training step begins (the previous step's outputs may be
    overwritten now); nothing off a GPU."""
    if torch.device(device).type == "cuda":
        torch.compiler.cudagraph_mark_step_begin()
