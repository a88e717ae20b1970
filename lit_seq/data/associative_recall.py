"""`associative_recall`: Zoology's multi-query associative recall (MQAR, Arora et al. 2023)."""

import torch
import torch.nn.functional as F
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.data.start_marker import add_start_marker
from lit_seq.util.checks import check_float, check_int


def recall_sequences(
    keys: Tensor, values: Tensor, gaps: Tensor, fillers: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Lay out key-value pairs, then queries: (tokens, targets, mask), each (B, L).

    keys, values (B, D): the pairs, written first as k1 v1 k2 v2 ...; gaps (B, Q), Q <= D:
    key i (i < Q) is queried at position 2 D + 2 gaps[:, i], where its target is values[:, i]
    and the mask is True; fillers (B, L): every other position. Example (Zoology's docstring,
    fillers 0): keys [2, 4], values [8, 7], gaps [4, 1], L 16 -> tokens
    [2, 8, 4, 7, 0, 0, 4, 0, 0, 0, 0, 0, 2, 0, 0, 0], targets 7 at position 6 and 8 at 12.
    """
    n_pairs, n_queries = keys.shape[1], gaps.shape[1]
    tokens = fillers.clone()  # (B, L)
    tokens[:, 0 : 2 * n_pairs : 2], tokens[:, 1 : 2 * n_pairs : 2] = keys, values
    where = 2 * n_pairs + 2 * gaps  # (B, Q) query positions
    tokens.scatter_(1, where, keys[:, :n_queries])
    targets = torch.zeros_like(tokens).scatter_(1, where, values[:, :n_queries])  # (B, L)
    mask = torch.zeros_like(tokens, dtype=torch.bool).scatter_(1, where, True)  # (B, L)
    return tokens, targets, mask


class AssociativeRecallData(SyntheticDataModule):
    """Per-step classification, scored at the queries: recall the value a key was paired with.

    Zoology's MQAR exactly as HazyResearch/zoology zoology/data/multiquery_ar.py
    (`multiquery_ar`, num_passes 1, random_non_queries True; the file was
    zoology/data/associative_recall.py before January 2026): keys are drawn without
    replacement from 1 .. vocab/2 - 1 and values from vocab/2 .. vocab - 1; the sequence opens
    with the pairs k1 v1 .. kD vD, then each key is queried once at an even offset 2 g of the
    rest, the gaps g drawn without replacement with p(g) ~ (g + 1)^(power_a - 1) (power_a
    0.01: mostly soon after the pairs); the target at a query is its key's value (Zoology's
    next-token label), every other position is a uniform random token in 0 .. vocab - 1 and
    unscored. `n_queries` < `n_pairs` queries only the first n_queries keys (a random
    subset; Zoology queries them all). Zoology's sequences have even length; an odd one here
    ends in one more filler. Worked example (vocab 12, 2 pairs, length 16, fillers 0, as
    Zoology's docstring): [2, 8, 4, 7, 0, 0, 4, 0, 0, 0, 0, 0, 2, 0, 0, 0] -> 7 at position 6,
    8 at position 12, nothing scored elsewhere (see `recall_sequences`).
    Batch keys: `x` (B, L, vocab) float one-hot tokens (B, L, vocab + 1 with `start_marker`:
    the last channel 1 at position 0 only, the targets the same), `y` (B, L) long, `mask`
    (B, L) bool.
    Length k x N holds k x n_pairs pairs and k x n_queries queries (the same density, the same
    vocabulary): generally pairs = max(1, n_pairs * L // length), so the shortest sequence (the
    curriculum's first length) is 4: one pair and one query slot.

    The floor is not chance (1 / vocab): answering a value seen in context, without recalling
    which, scores 1 / (pairs in context) (`context_floor`), e.g. 1/4 at the default N = 32.

    Args:
        length: tokens per training sequence (N); at least 4 x n_pairs.
        n_pairs: key-value pairs per training sequence.
        n_queries: queries per training sequence (<= n_pairs); null: n_pairs, as Zoology.
        vocab: vocabulary size (one-hot input size and classes); the longest test set's pairs
            need distinct keys: vocab >= 2 x (its pairs) + 2.
        power_a: exponent of Zoology's power law over the query gaps (1.0: uniform).
        start_marker: add an input channel that is 1 at position 0 only
            (``lit_seq.data.start_marker``): tells a model without positional encodings
            where the sequence begins, as a causal LM's BOS token does.
        n_train: training sequences.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`).
    """

    name = "associative_recall"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "step_classification"

    def __init__(
        self,
        length: int = 32,
        n_pairs: int = 4,
        n_queries: int | None = None,
        vocab: int = 64,
        power_a: float = 0.01,
        start_marker: bool = False,
        n_train: int = 10000,
        **kwargs,
    ) -> None:
        self.start_marker = start_marker
        self.n_pairs = check_int("n_pairs", n_pairs, 1)
        # the pairs take 2 D tokens and the D queries need D even slots after them
        allowed = f">= 4 x n_pairs = {4 * n_pairs}"
        self.length = check_int("length", length, 4 * n_pairs, allowed=allowed)
        n_queries = n_pairs if n_queries is None else n_queries
        allowed = f"in [1, n_pairs = {n_pairs}] (or null for n_pairs)"
        self.n_queries = check_int("n_queries", n_queries, 1, maximum=n_pairs, allowed=allowed)
        super().__init__(n_train=n_train, **kwargs)
        # the vocabulary must hold the pairs of the longest test set (gen_factors: the base's)
        longest = max(self.test_lengths)
        most = self.pairs_at(longest)
        allowed = f">= {2 * most + 2} (distinct keys for the {most} pairs at length {longest})"
        self.vocab = check_int("vocab", vocab, 2 * most + 2, allowed=allowed)
        self.power_a = check_float("power_a", power_a, 0.0, low_open=True)

    def pairs_at(self, length: int) -> int:
        """Key-value pairs in a sequence of `length`: n_pairs per training length, at least 1."""
        return max(1, self.n_pairs * length // self.length)

    def queries_at(self, length: int) -> int:
        """Queries in a sequence of `length`: n_queries per training length, at least 1."""
        return max(1, self.n_queries * length // self.length)

    def context_floor(self, length: int) -> float:
        """1 / pairs_at(length): the accuracy at ``length`` of answering every query with a value
        drawn uniformly from the pairs' values, none of them recalled.

        Every query's answer is one of the D = pairs_at(length) distinct values written at the
        start, so such a guess is right with probability exactly 1/D at every query, and
        ``acc`` (and ``acc_ood``: the same queries past N) has expectation 1/D; D grows with
        the length, so the floor falls: max(1, n_pairs x length // N). Defaults (N 32, 4
        pairs): 1/4 at 32, 1/8 at 64, 1/16 at 128, where chance is 1/64. Not every shortcut
        stays below it: with n_queries < n_pairs only the first queries_at(length) pairs are
        asked (1 / queries_at for a guess among those), and the query order leaks which
        pair is asked (the gaps, drawn key after key without replacement from a law that
        favours small ones, give the first keys the earliest queries more often), so
        answering pair r at the r-th query scores more (0.30 at the default N, measured).
        """
        return 1.0 / self.pairs_at(length)

    @property
    def shortest_length(self) -> int:
        return 4  # one pair and one query slot

    @property
    def in_features(self) -> int:
        return self.vocab + int(self.start_marker)  # one-hot tokens, then the marker

    @property
    def out_features(self) -> int:
        return self.vocab

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        n_pairs, n_queries, half = self.pairs_at(length), self.queries_at(length), self.vocab // 2
        # distinct keys and values per row: the first columns of a random permutation
        keys = torch.rand(n, half - 1, generator=generator).argsort(dim=1)[:, :n_pairs] + 1
        values = torch.rand(n, self.vocab - half, generator=generator).argsort(dim=1)
        values = values[:, :n_pairs] + half  # (B, D)
        slots = (length - 2 * n_pairs) // 2  # even offsets after the pairs
        weights = self.power_a * torch.arange(1, slots + 1) ** (self.power_a - 1)  # (S,)
        gaps = torch.multinomial(weights.expand(n, slots), n_queries, generator=generator)
        fillers = torch.randint(0, self.vocab, (n, length), generator=generator)  # (B, L)
        tokens, y, mask = recall_sequences(keys, values, gaps=gaps, fillers=fillers)
        x = F.one_hot(tokens, num_classes=self.vocab).float()  # (B, L, vocab)
        x = add_start_marker(x) if self.start_marker else x  # (B, L, vocab + 1) with it
        return {"x": x, "y": y, "mask": mask}
