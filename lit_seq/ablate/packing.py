"""Which runs of a grid train together as one pack (``lit_seq.pack``), and the ``--pack`` policy.

Runs pack when their networks have the same structure and compute the same function of their
weights: same system, same model options except the optimizer's (learning rate, optimizer,
weight decay, schedule, warm-up), same task and batch size, no dropout (a stacked forward
draws no random numbers, so it could not reproduce a solo run's masks), no bidirectional
recurrence, no fused recurrence outside a ``RecurrentBackbone`` (the recurrent
encoder-decoder's) and no plug-in backbone. The seeds of a cell pack, and so do cells that differ
only in learning rate. :func:`pack_key` says so per cell (built once, by the grid check).

``--pack auto`` packs only the families measured to be faster packed on the device the grid
runs on (:data:`AUTO_FAMILIES`, from ``python -m lit_seq.bench --sections pack``); ``on`` packs
every packable run; ``off`` trains every run alone.
"""

from __future__ import annotations

import hashlib
import json

from lit_seq.ablate.spec import Run
from lit_seq.pack.stacked import unstackable

PACK_MODES = ("auto", "on", "off")
MAX_PACK = 27  # members of one pack at most
# model options that only the optimizer reads: runs that differ in them still stack
OPTIMIZER_OPTIONS = ("lr", "optimizer", "weight_decay", "schedule", "warmup_steps")
# --pack auto: the families (arch) that train faster packed, by device type, as measured by
# `python -m lit_seq.bench --sections pack` (docs/packing.md). On this project's 2-core CPU
# none does: each member keeps its own Lightning loop and optimizer step (~3 ms of a 4 ms
# step), and the stacked forward and backward of these tiny networks cost about what K solo
# ones do. Not measured on a GPU yet (scripts/gpu_check.sh does): none until it is.
AUTO_FAMILIES: dict[str, tuple[str, ...]] = {"cpu": (), "cuda": ()}


def pack_key(cli) -> str:
    """What runs must share to pack (a digest), or "" when the run cannot be packed.

    ``cli``: a built fit configuration (``lit_seq.fit.check_config``).
    """
    hp = {k: v for k, v in cli.model.hparams.items() if not k.startswith("_")}
    if hp.get("dropout") or hp.get("backbone"):
        return ""
    if unstackable(cli.model.net):  # bidirectional, or the encoder-decoder's own nn.RNN
        return ""
    shared = {k: v for k, v in hp.items() if k not in OPTIMIZER_OPTIONS}
    dm = cli.datamodule
    content = {
        "system": type(cli.model).__qualname__,
        "model": shared,
        "task": dm.name,
        "batch_size": getattr(dm, "batch_size", None),
        "precision": str(cli.config.trainer.precision),
    }
    text = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def packs(runs: list[Run], mode: str, device: str, max_size: int = MAX_PACK) -> list[list[Run]]:
    """``runs`` cut into packs (lists of runs that train together; a list of one trains
    alone), in the order of their first run; each pack holds at most ``max_size`` runs."""
    if mode not in PACK_MODES:
        raise ValueError(f"pack={mode!r}; allowed: {list(PACK_MODES)}")
    families = AUTO_FAMILIES.get(device, ()) if mode == "auto" else None
    groups: dict[str, list[list[Run]]] = {}
    out: list[list[Run]] = []
    for run in runs:
        packable = mode != "off" and run.pack_key and (families is None or run.arch in families)
        if not packable:
            out.append([run])
            continue
        chunks = groups.setdefault(run.pack_key, [])
        if not chunks or len(chunks[-1]) >= max_size:
            chunks.append([])
            out.append(chunks[-1])
        chunks[-1].append(run)
    return out
