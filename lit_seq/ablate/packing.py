"""Which runs of a grid train together as one population (a pack), and the ``--pack`` policy.

Runs pack when they can be one population (``lit_seq.population``): same system, same model
options except the optimizer's (learning rate, optimizer, weight decay, schedule, warm-up),
same task options and batch size, same trainer settings, no dropout between a fused
recurrence's layers (other dropout packs: ``lit_seq.models.dropout``), no randomized positions,
no curriculum over a fixed training set, no bidirectional or fused recurrence outside a
``RecurrentBackbone`` (the recurrent encoder-decoder's) and no plug-in backbone. The seeds of a cell pack, and so do
cells that differ only in learning rate. :func:`pack_key` says so per cell (built once, by
the grid check).

``--pack auto`` packs only the families (task and arch) measured to be faster as a
population on the device the grid runs on (:data:`AUTO_FAMILIES`, from ``python -m
lit_seq.bench --sections pack``);
``on`` packs every packable run; ``off`` trains every run alone.
"""

from __future__ import annotations

import hashlib
import json

from lit_seq.ablate.spec import Run
from lit_seq.population.train import population_key, why_not_population

PACK_MODES = ("auto", "on", "off")
MAX_PACK = 27  # members of one pack at most
# --pack auto: the families (task/arch) measured to train faster as a population, by device
# type (`python -m lit_seq.bench --sections pack`, docs/packing.md). On this project's 2-core
# CPU: echo rnn and lstm (K = 27: 2.3-2.8x at 100 steps, 3.9x at echo/rnn's shipped 500);
# transformers do not gain (signal 0.54-0.87x, parity_sum 0.83-1.09x, seq2seq 0.89-1.10x);
# Delétang's 256-unit RNN loses (0.53x); the other recurrent families are not measured side
# by side (a grid-level timing under a varying load could not tell them apart). Not measured on a
# GPU yet (`python -m lit_seq.bench --sections pack` on one measures it): none there until it is.
AUTO_FAMILIES: dict[str, tuple[str, ...]] = {"cpu": ("echo/rnn", "echo/lstm"), "cuda": ()}


def pack_key(cli) -> str:
    """What runs must share to train in one population (a digest), or "" when the run
    cannot (``lit_seq.population.train.why_not_population``).

    ``cli``: a built fit configuration (``lit_seq.fit.check_config``).
    """
    if why_not_population(cli):
        return ""
    text = json.dumps(population_key(cli), sort_keys=True, default=str)
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
        family = f"{run.task}/{run.arch}"
        packable = mode != "off" and run.pack_key and (families is None or family in families)
        if not packable:
            out.append([run])
            continue
        chunks = groups.setdefault(run.pack_key, [])
        if not chunks or len(chunks[-1]) >= max_size:
            chunks.append([])
            out.append(chunks[-1])
        chunks[-1].append(run)
    return out
