"""The machine and software a run's numbers came from: what every record carries.

The same seed gives the same digits on one machine with the same thread count, but not
always otherwise: a different CPU vendor or model (its vector instructions pick other
kernels, which sum in another order), torch build, thread count (a reduction split over 2
threads sums in another order than over 1) or precision can move a per-seed accuracy by a
little, or, where training is on a knife's edge, by a lot. So every record says where it
was made; verdicts over seeds are what should replicate elsewhere, per-seed values are not.
Worked example: a tiny fit on a 2-core cloud machine records ``{"lit_seq_commit":
"3d6bdb7", "lit_seq_dirty": true, "python_version": "3.11.7", "torch_version": "2.13.0+cpu",
"lightning_version": "2.6.6", "device": "cpu", "device_name": "AMD EPYC (AuthenticAMD family
25 model 1)", "cpu_capability": "AVX512", "cuda_version": "", "cudnn_version": "",
"torch_threads": 1, "precision": "32-true", "deterministic": false}``.
"""

from __future__ import annotations

import functools
import platform
import subprocess
from pathlib import Path

import torch

from lit_seq.util.assets import PACKAGE_DIR


@functools.cache  # once per process: the code a process runs is the code it imported
def git_revision(folder: Path = PACKAGE_DIR) -> tuple[str, bool | None]:
    """(short commit of the checkout holding ``folder``, whether its tracked files differ
    from it); ``("", None)`` for an installed package outside a checkout.

    Untracked files do not count: run folders and grid results written inside the checkout
    would otherwise mark every run dirty.
    """

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=folder, capture_output=True, text=True, check=True, timeout=30
        )
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        return commit, bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "", None


def describe_cpu(cpuinfo: str) -> str:
    """The CPU named precisely from the text of ``/proc/cpuinfo`` (its first processor):
    the model name, then vendor, family and model, since a cloud VM's model name may be as
    vague as ``Intel(R) Xeon(R) Processor`` while family and model tell the generation apart
    (its kernels, so its digits). Worked example: ``model name : AMD EPYC``, ``vendor_id :
    AuthenticAMD``, ``cpu family : 25``, ``model : 1`` -> ``AMD EPYC (AuthenticAMD family 25
    model 1)``; "" when the text names no model."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block is enough
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name", "")
    ids = [fields.get("vendor_id", "")]
    ids += [
        f"{label} {fields[key]}"
        for key, label in (("cpu family", "family"), ("model", "model"))
        if fields.get(key)
    ]
    ids = [i for i in ids if i]
    if not name:
        return ""
    return f"{name} ({' '.join(ids)})" if ids else name


def cpu_model() -> str:
    """The CPU's model (:func:`describe_cpu` of ``/proc/cpuinfo`` on Linux), else what
    ``platform`` knows."""
    try:
        described = describe_cpu(Path("/proc/cpuinfo").read_text())
    except OSError:
        described = ""
    return described or platform.processor() or platform.machine()


def device_fields(device: torch.device) -> dict:
    """What computes on ``device``: the GPU's name with CUDA and cuDNN versions, or the CPU's
    model; torch's CPU kernel level (``AVX2``, ``AVX512``) either way (the host side)."""
    on_gpu = device.type == "cuda"
    cudnn = torch.backends.cudnn.version() if on_gpu else None
    return {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if on_gpu else cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cuda_version": (torch.version.cuda or "") if on_gpu else "",
        "cudnn_version": str(cudnn) if cudnn else "",
    }


def fit_environment(device: torch.device, precision: str) -> dict:
    """The environment fields of a record (:class:`lit_seq.record.FitResult`) for a fit that
    ran on ``device`` at ``precision`` (the Trainer's, e.g. ``32-true``), in this process."""
    import lightning

    commit, dirty = git_revision()
    return {
        "lit_seq_commit": commit,
        "lit_seq_dirty": dirty,
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "lightning_version": lightning.__version__,
        **device_fields(torch.device(device)),
        "torch_threads": torch.get_num_threads(),
        "precision": str(precision),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
    }
