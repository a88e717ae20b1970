"""Scoring a system at one sequence length on new sequences, and Delétang et al. 2023's score.

Their range evaluation (experiments/range_evaluation.py, with the ``accuracy_fn`` of
experiments/example.py) draws 512 new sequences at each length 1..M in sub-batches of 64,
scores each sub-batch by its accuracy over the scored output positions (for a one-label
task, the fraction of sequences right; for a string output, the right symbols over the
symbols under the task's mask, pooled over the sub-batch) and averages the sub-batches;
the score of a network is the mean of those per-length accuracies over N+1..M, every length
weighing the same (example.py: ``np.mean(accuracies[N + 1:])``). :func:`deletang_score`
computes exactly that with a system's own metric (``main_metric``: ``acc``) and ``evaluate``.

:func:`score_length` is the one way a length is scored here: the fit's range evaluation
(``lit_seq.fit.scoring.length_curve``, whose ``range_ood/<metric>`` is this score when its
``range_eval`` asks for every length, 512 sequences and sub-batches of 64) and
:func:`deletang_score` draw the same sequences from the same stream and score them alike, so
the two agree to the last digit the record keeps. A network with a length limit
(``SequenceSystem.length_limit``: a learnable table, randomized positions) reads a length
only if it covers the input and its appended output positions: the range evaluation leaves
longer lengths out, and ``deletang_score`` must be given a ``longest`` within it.

Their network is scored with its dropout on: haiku's ``hk.dropout`` has no evaluation mode,
and their range evaluation hands the model a random key (``apply_fn(params, next(rng_seq),
...)``), so their transformer drops 10% at every scored length. ``dropout=True`` does the
same here, each batch's masks those of its own stream (:func:`dropout_key`,
``models/dropout.py``): the same in every rerun, and apart from training's.

Without dropout a length's sequences go through the network in as few forward passes as
:func:`forward_rows` allows (all 512 where they fit), under ``torch.inference_mode``; the
sub-batch means are then taken from the pooled pass's outputs (:class:`SubBatchMeans`), the
same numbers as scoring each sub-batch on its own (``rows=sub_batch``) to float tolerance.
With dropout each sub-batch keeps its own forward pass, its masks drawn from its own key.
"""

import hashlib
from contextlib import nullcontext

import torch
from torch import Tensor
from torchmetrics import Metric, MetricCollection

from lit_seq.models.dropout import dropout_stream
from lit_seq.systems.base import SequenceSystem


def range_generator(seed: int, length: int) -> torch.Generator:
    """The stream of the sequences scored at ``length``, apart from every split's (those are
    seeded seed * 1000 + split index) and from the fresh training batches'."""
    digest = hashlib.sha256(f"lit_seq range_eval {seed} {length}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


def dropout_key(seed: int, length: int, start: int) -> int:
    """The key of the dropout masks of the range evaluation's sequences ``start ..`` at
    ``length``: a 64-bit word of its own (``dropout_stream``'s seed; its step is the batch)."""
    digest = hashlib.sha256(f"lit_seq range_eval dropout {seed} {length} {start}".encode())
    return int.from_bytes(digest.digest()[:8], "little")


def _scored(metrics: MetricCollection) -> bool:
    """False when no position was scored (e.g. echo shorter than its lag)."""
    totals = [m.total for m in metrics.values() if hasattr(m, "total")]
    return not totals or all(float(t) > 0 for t in totals)


# positions (rows x the input and output length) one scoring pass holds. On the CPU its
# buffers stay under glibc's 32 MB mmap threshold at d = 256: above it every pass faults its
# memory in afresh (measured, rnn.yaml's 512 sequences at 41, 80, 120, 160: 2^16 positions
# 30% more CPU time than 2^14, 2^18 50% more). A GPU takes 4x that: a transformer's scores
# grow with rows x T^2, so at 1,000 positions this is still a Delétang sub-batch's 64 rows.
# Never fewer rows than a sub-batch or a training batch (what scoring took before).
SCORING_POSITIONS = {"cpu": 2**14, "cuda": 2**16}


def forward_rows(tensors: dict[str, Tensor], device: torch.device, at_least: int) -> int:
    """Sequences per forward pass when scoring ``tensors``: as many as
    ``SCORING_POSITIONS`` holds at their input plus output length, a multiple of
    ``at_least`` (the sub-batch, or the batch size when pooled) and never fewer."""
    n = len(next(iter(tensors.values())))
    length = sum(tensors[k].shape[1] for k in ("x", "y") if k in tensors and tensors[k].dim() > 1)
    budget = SCORING_POSITIONS.get(torch.device(device).type, SCORING_POSITIONS["cpu"])
    rows = max(at_least, budget // max(length, 1) // at_least * at_least)
    return min(rows, -(-n // at_least) * at_least)


def _rows(value, part: slice):
    """``value``'s rows ``part`` if it is a tensor (a batch-first argument), else ``value``."""
    return value[part] if isinstance(value, Tensor) else value


class SubBatchMeans(Metric):
    """``metric`` computed on every sub-batch of ``k`` consecutive examples of the batches it
    is fed, each batch starting a sub-batch (feed it batches of a multiple of ``k``).

    ``parts`` holds each sub-batch's value, None where it scored nothing: what scoring each
    sub-batch in a pass of its own gives, from one pass over many. A drop-in for a
    ``MetricCollection``'s member: a system's ``evaluate`` updates it as it would the metric.
    """

    full_state_update = False

    def __init__(self, metric: Metric, k: int) -> None:
        super().__init__()
        self.metric, self.k = metric, k
        self.parts: list[float | None] = []

    def update(self, *args, **kwargs) -> None:
        kwargs = self.metric._filter_kwargs(**kwargs)
        rows = next(a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)).shape[0]
        for start in range(0, rows, self.k):
            part = slice(start, start + self.k)
            self.metric.reset()
            self.metric.update(
                *(_rows(a, part) for a in args), **{k: _rows(v, part) for k, v in kwargs.items()}
            )
            total = getattr(self.metric, "total", None)
            scored = total is None or float(total) > 0
            self.parts.append(float(self.metric.compute()) if scored else None)

    def compute(self) -> Tensor:
        kept = [p for p in self.parts if p is not None]
        return torch.tensor(sum(kept) / len(kept) if kept else float("nan"))

    def reset(self) -> None:
        super().reset()
        self.parts = []


def _sub_batch_means(means: MetricCollection) -> dict[str, float] | None:
    """name -> the mean over the sub-batches where every metric scored (as
    :func:`score_length` averages separate passes); None when none did."""
    names = list(means.keys())
    kept = [p for p in zip(*(m.parts for m in means.values()), strict=True) if None not in p]
    if not kept:
        return None
    return {name: sum(p[i] for p in kept) / len(kept) for i, name in enumerate(names)}


@torch.inference_mode()
def score(
    system,
    tensors: dict[str, Tensor],
    metrics: MetricCollection,
    batch_size: int,
    dropout_seed: int | None = None,
):
    """``metrics`` (unprefixed) of ``system`` over the examples in ``tensors``, pooled over
    them: name -> value; None when nothing was scored. Runs in eval mode under inference
    mode and leaves the system in the mode it was in; with ``dropout_seed`` its network's dropout
    stays on, batch i's masks those of ``dropout_stream(dropout_seed, i)``."""
    was_training = system.training
    system.eval()
    if dropout_seed is not None:
        system.net.train()  # haiku's dropout, which has no evaluation mode
    metrics = metrics.to(system.device)
    trainer = getattr(system, "_trainer", None)
    context = trainer.precision_plugin.forward_context() if trainer else nullcontext()
    n = len(next(iter(tensors.values())))
    try:
        with context:
            for i, start in enumerate(range(0, n, batch_size)):
                batch = {
                    k: v[start : start + batch_size].to(system.device) for k, v in tensors.items()
                }
                if trainer:  # what Lightning does to a batch (e.g. float64 under 64-true)
                    batch = trainer.precision_plugin.convert_input(batch)
                if dropout_seed is None:
                    system.evaluate(batch, metrics)
                    continue
                with dropout_stream(dropout_seed, i, system.device):
                    system.evaluate(batch, metrics)
        if not _scored(metrics):
            return None
        return {name: float(value) for name, value in metrics.compute().items()}
    finally:
        system.train(was_training)


def score_length(
    system,
    datamodule,
    length: int,
    metrics: MetricCollection,
    *,
    n: int,
    batch_size: int,
    sub_batch: int = 0,
    dropout: bool = False,
    rows: int | None = None,
) -> dict[str, float] | None:
    """``metrics`` of ``system`` on ``n`` new test sequences of ``length`` (name -> value).

    ``sub_batch`` 0 pools every sequence; k > 0 scores each sub-batch of k sequences on its
    own and averages the sub-batches that scored anything (theirs: 64). The two agree when
    every sequence has as many scored positions (a one-label task, reverse_string); they
    weigh the sub-batches differently when the scored positions vary (stack_manipulation).
    ``dropout``: scored with the network's dropout on (theirs), the masks of
    :func:`dropout_key`, one forward pass per sub-batch (per ``batch_size`` when pooled).
    ``rows``: sequences per forward pass without dropout (None: :func:`forward_rows`; a
    multiple of ``sub_batch``); ``rows=sub_batch`` scores each sub-batch in a pass of its
    own. None when nothing was scored.
    """
    generator = range_generator(datamodule.seed, length)
    # as a test set of that length: a task keeps it apart from training where it can
    tensors = datamodule.draw(n, length, generator, split="test")
    if dropout:
        return _score_dropping(system, datamodule, length, tensors, metrics, batch_size, sub_batch)
    rows = rows or forward_rows(tensors, system.device, sub_batch or batch_size)
    if not sub_batch:
        return score(system, tensors, metrics, batch_size=rows)
    if rows % sub_batch:
        raise ValueError(f"rows={rows} must be a multiple of sub_batch={sub_batch}")
    means = MetricCollection(
        {name: SubBatchMeans(m, sub_batch) for name, m in metrics.items(keep_base=True)},
        prefix=metrics.prefix,
        postfix=metrics.postfix,
        compute_groups=False,
    )
    score(system, tensors, means, batch_size=rows)
    return _sub_batch_means(means)


def _score_dropping(system, datamodule, length, tensors, metrics, batch_size, sub_batch):
    """:func:`score_length` with the network's dropout on: each sub-batch (each batch of
    ``batch_size`` when pooled) in a pass of its own, its masks those of its own key."""

    def key(start: int) -> int:
        return dropout_key(datamodule.seed, length, start)

    if not sub_batch:
        return score(system, tensors, metrics, batch_size=batch_size, dropout_seed=key(0))
    n = len(next(iter(tensors.values())))
    parts = []
    for start in range(0, n, sub_batch):
        metrics.reset()
        part = {k: v[start : start + sub_batch] for k, v in tensors.items()}
        values = score(system, part, metrics, batch_size=sub_batch, dropout_seed=key(start))
        if values is not None:
            parts.append(values)
    if not parts:
        return None
    return {name: sum(p[name] for p in parts) / len(parts) for name in parts[0]}


def length_accuracies(
    system: SequenceSystem,
    datamodule,
    lengths: list[int],
    *,
    n: int = 512,
    sub_batch: int = 64,
    dropout: bool = False,
) -> dict[int, float]:
    """length -> ``system``'s main metric on ``n`` new sequences of that length, computed per
    sub-batch of ``sub_batch`` sequences and averaged over the sub-batches (theirs).

    ``datamodule`` is the task (its ``draw`` and ``seed``): the sequences are drawn as its
    test sets are, from the range evaluation's stream (:func:`score_length`); ``dropout``:
    with the network's dropout on, as theirs.
    """
    curve = {}
    for length in lengths:
        values = score_length(
            system, datamodule, length, system.build_metrics(), n=n, batch_size=sub_batch,
            sub_batch=sub_batch, dropout=dropout,
        )  # fmt: skip
        curve[length] = values[system.main_metric] if values else float("nan")
    return curve


def deletang_score(
    system: SequenceSystem,
    datamodule,
    longest: int,
    *,
    n: int = 512,
    sub_batch: int = 64,
    dropout: bool = False,
) -> tuple[float, dict[int, float]]:
    """(score, curve): the mean of :func:`length_accuracies` over every length from the
    training length N + 1 to ``longest`` (M), and the per-length values it averages.

    Worked example: N = 2, M = 4 and accuracies {3: 1.0, 4: 0.5} -> score 0.75. The paper
    takes N = 40, M = 500 (its 512 sequences, sub-batches of 64, are the defaults here). A
    fit records the same number as ``range_ood/acc`` when its config asks for it (the
    ``range_eval`` section of ``configs/deletang/*``; ``range_ood_longest`` is M).
    """
    first = datamodule.train_length + 1
    if longest < first:
        raise ValueError(
            f"longest={longest} must be > the training length {first - 1}: the score averages "
            f"the lengths past training"
        )
    lengths = list(range(first, longest + 1))
    curve = length_accuracies(
        system, datamodule, lengths, n=n, sub_batch=sub_batch, dropout=dropout
    )
    return sum(curve.values()) / len(curve), curve
