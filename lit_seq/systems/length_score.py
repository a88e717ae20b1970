"""Delétang et al. 2023's score: the accuracy at every test length N+1..M, averaged.

Their range evaluation (experiments/range_evaluation.py, with the ``accuracy_fn`` of
experiments/example.py) draws 512 new sequences at each length 1..M in sub-batches of 64,
scores each sub-batch by its accuracy over the scored output positions (for a one-label
task, the fraction of sequences right; for a string output, the right symbols over the
symbols under the task's mask, pooled over the sub-batch) and averages the sub-batches;
the score of a network is the mean of those per-length accuracies over N+1..M, every length
weighing the same (example.py: ``np.mean(accuracies[N + 1:])``). :func:`deletang_score`
computes exactly that with a system's own metric (``main_metric``: ``acc``) and ``evaluate``.

Its sequences come from a generator of their own per (seed, length), apart from every
split's and the range evaluation's. A transformer reads each length only if its positional
table covers it (with the appended output positions): ``max_len`` is linked from the data's
longest test set, so the longest test length there bounds M.
"""

import hashlib

import torch

from lit_seq.systems.base import SequenceSystem


def _length_generator(seed: int, length: int) -> torch.Generator:
    digest = hashlib.sha256(f"lit_seq deletang_score {seed} {length}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


@torch.no_grad()
def length_accuracies(
    system: SequenceSystem, datamodule, lengths: list[int], *, n: int = 512, sub_batch: int = 64
) -> dict[int, float]:
    """length -> ``system``'s main metric on ``n`` new sequences of that length, computed per
    sub-batch of ``sub_batch`` sequences and averaged over the sub-batches (theirs).

    ``datamodule`` is the task (its ``draw`` and ``seed``): the sequences are drawn as its
    test sets are. The system runs in eval mode and is left in the mode it was in.
    """
    was_training = system.training
    system.eval()
    metrics = system.build_metrics().to(system.device)
    curve = {}
    try:
        for length in lengths:
            tensors = datamodule.draw(n, length, _length_generator(datamodule.seed, length))
            values = []
            for start in range(0, n, sub_batch):
                batch = {
                    k: v[start : start + sub_batch].to(system.device) for k, v in tensors.items()
                }
                metrics.reset()
                system.evaluate(batch, metrics)
                values.append(float(metrics.compute()[system.main_metric]))
            curve[length] = sum(values) / len(values)
    finally:
        system.train(was_training)
    return curve


def deletang_score(
    system: SequenceSystem, datamodule, longest: int, *, n: int = 512, sub_batch: int = 64
) -> tuple[float, dict[int, float]]:
    """(score, curve): the mean of :func:`length_accuracies` over every length from the
    training length N + 1 to ``longest`` (M), and the per-length values it averages.

    Worked example: N = 2, M = 4 and accuracies {3: 1.0, 4: 0.5} -> score 0.75. The paper
    takes N = 40, M = 500 (its 512 sequences, sub-batches of 64, are the defaults here).
    """
    first = datamodule.train_length + 1
    if longest < first:
        raise ValueError(
            f"longest={longest} must be > the training length {first - 1}: the score averages "
            f"the lengths past training"
        )
    curve = length_accuracies(
        system, datamodule, list(range(first, longest + 1)), n=n, sub_batch=sub_batch
    )
    return sum(curve.values()) / len(curve), curve
