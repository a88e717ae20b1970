"""`signal`: classify a noisy sine wave by its frequency."""

import math

import torch
from torch import Tensor

from lit_seq.data.base import SyntheticDataModule
from lit_seq.util.checks import check_int


def sine_waves(freq: Tensor, phase: Tensor, length: int, window: int) -> Tensor:
    """Noise-free sines: `freq` (B,) cycles per `window` steps, `phase` (B,) -> (B, length).

    Example: freq [2], phase [0], length 8, window 8 -> [[0, 1, 0, -1, 0, 1, 0, -1]].
    """
    # Time is measured in windows, so length > window simply continues the same sine.
    t = torch.arange(length, dtype=torch.float32) / window  # (T,)
    return torch.sin(2 * math.pi * freq.unsqueeze(1) * t + phase.unsqueeze(1))  # (B, T)


class SignalData(SyntheticDataModule):
    """Noisy sine waves; the class is the frequency, in cycles per training window.

    x[b, t, :] = sin(2 pi freqs[c] t / length + phase) + noise * N(0, 1), phase ~ U[0, 2 pi),
    the same sine on every channel with independent noise. Worked example (length 8,
    freqs [1, 2], noise 0, phase 0): the input [0, 1, 0, -1, 0, 1, 0, -1] runs through two
    cycles in the window, so its frequency is freqs[1] -> class 1 (see `sine_waves`).

    Length-generalisation sets at k x length let the same sine run on for k windows, so class c
    still completes freqs[c] cycles per `length` steps and the label keeps its meaning.
    Batch keys: `x` (B, T, in_features) float, `y` (B,) long class id.

    Args:
        length: time steps per training sequence.
        freqs: frequency of each class in cycles per training window; distinct, in
            (0, length / 2) so that no two classes alias. Defaults to [1.0, 2.0, 3.0].
        noise: standard deviation of the additive Gaussian noise.
        n_per_class: training examples per class.
        n_eval_per_class: validation examples, and examples of each test set, per class.
        in_features: channels of x: the same sine, independent noise per channel.
        **kwargs: the options every task shares (:class:`SyntheticDataModule`) but the split
            sizes, which the two per-class counts set, and the curriculum.
    """

    name = "signal"  # its key in TASKS, configs/<name>/ and every record
    task_kind = "classification"

    def __init__(
        self,
        length: int = 64,
        freqs: list[float] | None = None,
        noise: float = 0.2,
        n_per_class: int = 300,
        n_eval_per_class: int = 100,
        in_features: int = 1,
        **kwargs,
    ) -> None:
        self.length = check_int("length", length, 1)
        freqs = [1.0, 2.0, 3.0] if freqs is None else [float(f) for f in freqs]
        if len(freqs) < 2 or len(set(freqs)) != len(freqs):
            raise ValueError(f"freqs must hold at least 2 distinct frequencies, got {freqs}")
        if not all(0 < f < length / 2 for f in freqs):
            # Above the Nyquist limit a frequency aliases onto a lower one: two classes, one signal.
            raise ValueError(f"freqs must lie in (0, length / 2 = {length / 2}), got {freqs}")
        if not noise >= 0:
            raise ValueError(f"noise must be >= 0, got {noise!r}")
        self.freqs = freqs
        self.noise = float(noise)
        self.n_per_class = check_int("n_per_class", n_per_class, 1)
        self.n_eval_per_class = check_int("n_eval_per_class", n_eval_per_class, 1)
        self._in_features = check_int("in_features", in_features, 1)
        # Every split is balanced: n examples per class, shuffled. No curriculum: a class is
        # a frequency per training window, which a much shorter sequence barely shows.
        # Naming these here also keeps them out of this task's options.
        n_eval = n_eval_per_class * len(freqs)
        super().__init__(
            n_train=n_per_class * len(freqs),
            n_val=n_eval,
            n_test=n_eval,
            curriculum=False,
            **kwargs,
        )

    @property
    def in_features(self) -> int:
        return self._in_features

    @property
    def out_features(self) -> int:
        return len(self.freqs)

    def _generate(self, n: int, length: int, generator: torch.Generator) -> dict[str, Tensor]:
        n_classes = len(self.freqs)
        # Balanced labels (n is a multiple of the class count), then a random class order.
        y = (torch.arange(n) % n_classes)[torch.randperm(n, generator=generator)]  # (B,)
        freq = torch.tensor(self.freqs)[y]  # (B,)
        phase = torch.rand(n, generator=generator) * (2 * math.pi)  # (B,)
        # Frequencies count cycles per *training* window, also on the longer test sets.
        clean = sine_waves(freq, phase, length, window=self.length)  # (B, T)
        noise = torch.randn(n, length, self.in_features, generator=generator)  # (B, T, C)
        x = clean.unsqueeze(-1) + self.noise * noise  # (B, T, C)
        return {"x": x, "y": y}
