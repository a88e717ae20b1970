"""What the training device decides, as functions of the device (or of what the machine has).

Every branch that only a GPU takes is a branch on a value passed in here, never on
``torch.cuda.is_available()`` read deep inside, so the CPU tests run the same code with
``"cuda"`` (or a made-up GPU count) as the argument: ``tests/test_gpu_paths_on_cpu.py``, and
CONTRIBUTING's table of which test stands in for which GPU branch.

- :func:`accelerator_type`: where ``accelerator: auto`` trains;
- :func:`default_precision` and :func:`matmul_precision`: a fit's precision unless given,
  and the float32 matmul precision it sets;
- :func:`visible_gpu_ids` and :func:`worker_gpu`: which GPU each grid worker gets.

The optimizer's kernels are chosen by ``lit_seq.systems.optimizers.optimizer_options`` and a
checkpoint's device RNG by ``lit_seq.fit.checkpoints.rng_states``, each beside its use.
"""

import torch


def accelerator_type(cuda_available: bool | None = None) -> str:
    """``"cuda"`` when a CUDA device is available (default: asks torch), else ``"cpu"``:
    the device lit_seq's ``accelerator: auto`` trains on."""
    if cuda_available is None:
        cuda_available = torch.cuda.is_available()
    return "cuda" if cuda_available else "cpu"


def default_precision(device_type: str) -> str:
    """A fit's ``trainer.precision`` when none is given: ``bf16-mixed`` on a GPU (its tensor
    cores, half the memory traffic), ``32-true`` elsewhere (every CPU result is float32;
    ``bf16-mixed`` runs on a CPU when asked for)."""
    return "bf16-mixed" if device_type == "cuda" else "32-true"


def matmul_precision(device_type: str) -> str | None:
    """The float32 matmul precision a fit sets: ``"high"`` on a GPU (TF32 tensor cores for
    what autocast leaves in float32), None elsewhere (torch's own left as it is)."""
    return "high" if device_type == "cuda" else None


def visible_gpu_ids(available: int, visible: str | None) -> list[str]:
    """The ids to put in a worker's ``CUDA_VISIBLE_DEVICES``, one per GPU this process sees.

    ``available``: how many GPUs torch sees (0 without CUDA); ``visible``: this process's own
    ``CUDA_VISIBLE_DEVICES`` (None: unset), whose ids are the ones a child must be given.
    Example: (2, None) -> ["0", "1"]; (2, "3,5") -> ["3", "5"]; (0, "3") -> [].
    """
    if available <= 0:
        return []
    if visible:
        return [d.strip() for d in visible.split(",") if d.strip()]
    return [str(i) for i in range(available)]


def worker_gpu(index: int, gpus: list[str]) -> str | None:
    """The GPU id grid worker ``index`` trains on: round robin over ``gpus`` (workers
    beyond the GPU count share them), None on a machine without any (the worker's CPU).
    Example: workers 0..2 over ["0", "1"] -> "0", "1", "0"."""
    return gpus[index % len(gpus)] if gpus else None
