"""The tutorials' baselines, re-written in plain PyTorch: per-element data loops and recipes.

Nothing here is used for training by lit_seq; it is what the benchmark measures lit_seq
against. Each piece follows a seed's recipe (sizes, optimiser, schedule, loop structure)
and deliberately keeps its slow parts, because they are what is being compared:

- generators that fill tensors one element (or one example) at a time in Python;
- seed 000's signal classifier: pre-LN encoder with explicit softmax(QK^T)V attention,
  300 steps of batch 64 drawn with replacement, Noam warm-up 100, eval every 50 steps;
- seed 002's summing transformer: post-LN ``nn.TransformerEncoder`` (d 128, 8 heads,
  6 layers), sequence-first, per-sample-collate DataLoader, Adam 5e-4, MSE, 40 epochs;
- seed 002's echo models: a hand-stepped RNN / LSTMCell trained by BPTT on one sequence.
"""

import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from lit_seq.data.seq2seq import BOS, EOS, N_SPECIAL, PAD

# ---- per-element data generators --------------------------------------------------------


def signal_data_loop(
    n_per_class: int, length: int, freqs=(1.0, 2.0, 3.0), noise: float = 0.2, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """Seed 000's signal data: one sine per Python iteration, then one shuffle.

    Returns x (B, T) and y (B,), B = n_per_class * len(freqs).
    """
    gen = torch.Generator().manual_seed(seed)
    t = torch.arange(length).float() / length * 2 * math.pi  # (T,) one window = 2 pi
    xs, ys = [], []
    for label, freq in enumerate(freqs):
        for _ in range(n_per_class):
            phase = torch.rand(1, generator=gen) * 2 * math.pi
            xs.append(torch.sin(freq * t + phase) + noise * torch.randn(length, generator=gen))
            ys.append(label)
    order = torch.randperm(len(ys), generator=gen)
    return torch.stack(xs)[order], torch.tensor(ys)[order]


def parity_sum_loop(values: Tensor) -> tuple[Tensor, Tensor]:
    """Seed 002's triple loop: features [value, t % 2] and same-parity running sums.

    values (B, T) int -> x (B, T, 2) float, y (B, T) float, filled one element at a time
    (and each sum re-added from scratch), as the tutorial does.
    """
    n, length = values.shape
    x = torch.zeros(n, length, 2)
    y = torch.zeros(n, length)
    for i in range(n):
        for j in range(length):
            x[i, j, 0] = values[i, j]
            x[i, j, 1] = j % 2
            total = 0
            for k in range(j + 1):
                if k % 2 == j % 2:
                    total += values[i, k]
            y[i, j] = total
    return x, y


def parity_sum_data_loop(n: int, length: int, max_val: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Seed 002's ``generate_data``: draw the values, then :func:`parity_sum_loop`."""
    gen = torch.Generator().manual_seed(seed)
    return parity_sum_loop(torch.randint(1, max_val + 1, (n, length), generator=gen))


def echo_targets_loop(bits, lag: int) -> np.ndarray:
    """Seed 002's echo target of one sequence: y_t = x_{t-lag}, 0 before lag, per element."""
    y = np.zeros(len(bits))
    for t in range(lag, len(bits)):
        y[t] = bits[t - lag]
    return y


def echo_data_loop(n: int, length: int, lag: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Seed 002's echo data, one NumPy sequence at a time: bits (B, T), targets (B, T)."""
    rng = np.random.RandomState(seed)
    bits = [rng.randint(0, 2, size=(length,)) for _ in range(n)]
    y = [echo_targets_loop(b, lag) for b in bits]
    return torch.tensor(np.stack(bits)).float(), torch.tensor(np.stack(y)).float()


def seq2seq_targets_loop(src: Tensor, lengths: Tensor, op: str) -> Tensor:
    """[BOS] + op(row) + [EOS] + PAD per row, built as Python lists (no seed: our baseline)."""
    n, width = src.shape
    rows = []
    for i in range(n):
        tokens = src[i, : int(lengths[i])].tolist()
        if op == "reverse":
            tokens = tokens[::-1]
        elif op == "sort":
            tokens = sorted(tokens)
        row = [BOS, *tokens, EOS]
        rows.append(row + [PAD] * (width + 2 - len(row)))
    return torch.tensor(rows, dtype=src.dtype)


def seq2seq_data_loop(
    n: int, min_length: int, max_length: int, vocab: int, op: str, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """Source rows drawn one token at a time in Python, then :func:`seq2seq_targets_loop`."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.full((n, max_length), PAD, dtype=torch.long)
    lengths = torch.zeros(n, dtype=torch.long)
    for i in range(n):
        lengths[i] = int(torch.randint(min_length, max_length + 1, (1,), generator=gen))
        for t in range(int(lengths[i])):
            src[i, t] = int(torch.randint(N_SPECIAL, N_SPECIAL + vocab, (1,), generator=gen))
    return src, seq2seq_targets_loop(src, lengths, op)


# ---- seed 000: signal classifier ---------------------------------------------------------


def _sinusoid_table(max_len: int, d: int) -> Tensor:
    """(max_len, d) sin on even, cos on odd channels, wavelengths up to 10000 * 2 pi."""
    pos = torch.arange(max_len).float().unsqueeze(1)  # (L, 1)
    inv_freq = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))  # (d/2,)
    table = torch.zeros(max_len, d)
    table[:, 0::2] = torch.sin(pos * inv_freq)
    table[:, 1::2] = torch.cos(pos * inv_freq)
    return table


class _ExplicitAttention(nn.Module):
    """Multi-head self-attention written out as softmax(QK^T / sqrt(d_h)) V (no SDPA)."""

    def __init__(self, d: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.attn_drop = nn.Dropout(dropout)
        self.out_drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        B, T, d = x.shape
        H = self.n_heads
        q, k, v = self.qkv(x).view(B, T, 3, H, d // H).permute(2, 0, 3, 1, 4)  # (B, H, T, d_h)
        weights = (q @ k.transpose(-2, -1) * (d // H) ** -0.5).softmax(dim=-1)  # (B, H, T, T)
        out = (self.attn_drop(weights) @ v).transpose(1, 2).reshape(B, T, d)
        return self.out_drop(self.proj(out))


class _PreLNBlock(nn.Module):
    def __init__(self, d: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = _ExplicitAttention(d, n_heads, dropout)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(
            nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(dropout), nn.Linear(4 * d, d)
        )

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.ffn(self.norm2(x))


class SeedSignalClassifier(nn.Module):
    """Seed 000's classifier: linear embed, sinusoids, pre-LN blocks, final LN, mean, head."""

    def __init__(
        self,
        d: int = 32,
        n_heads: int = 4,
        n_layers: int = 2,
        n_classes: int = 3,
        max_len: int = 64,
    ) -> None:
        super().__init__()
        self.embed = nn.Linear(1, d)
        self.register_buffer("pos", _sinusoid_table(max_len, d))
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList(_PreLNBlock(d, n_heads, 0.1) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        h = self.drop(self.embed(x.unsqueeze(-1)) + self.pos[: x.size(1)])  # (B, T, d)
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h).mean(dim=1))  # (B, n_classes)


def signal_recipe(steps: int = 300, batch_size: int = 64, seed: int = 0, device="cpu") -> dict:
    """Seed 000's ``train_demo``, timed from data generation to its last evaluation.

    Noam: lr = d^-0.5 * min(s^-0.5, s * warmup^-1.5), applied after each step (the first
    step runs at Adam's initial 1e-3). Test accuracy on the 20% hold-out every 50 steps.
    """
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        x, y = signal_data_loop(300, 64, seed=seed)
        x, y = x.to(device), y.to(device)
        n_train = int(0.8 * len(y))
        model = SeedSignalClassifier().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        d, warmup = 32, 100
        acc = 0.0
        for step in range(steps):
            idx = torch.randint(0, n_train, (batch_size,), device=device)
            loss = F.cross_entropy(model(x[idx]), y[idx], label_smoothing=0.1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            s = step + 1
            for group in optimizer.param_groups:
                group["lr"] = d**-0.5 * min(s**-0.5, s * warmup**-1.5)
            if step % 50 == 0 or step == steps - 1:
                model.eval()
                with torch.no_grad():
                    acc = (model(x[n_train:]).argmax(1) == y[n_train:]).float().mean().item()
                model.train()
    return {"seconds": time.perf_counter() - start, "acc": acc, "steps": steps}


# ---- seed 002: summing transformer on parity_sum -----------------------------------------


class SeedSummingTransformer(nn.Module):
    """Seed 002's model: (T, B, 2) -> (T, B, 1), post-LN ``nn.TransformerEncoder``."""

    def __init__(
        self, d: int = 128, n_heads: int = 8, n_layers: int = 6, d_ff: int = 512, max_len: int = 512
    ) -> None:
        super().__init__()
        self.d = d
        self.proj = nn.Linear(2, d)
        self.register_buffer("pos", _sinusoid_table(max_len, d).unsqueeze(1))  # (L, 1, d)
        self.drop = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(d, n_heads, d_ff, dropout=0.1)  # post-LN, seq-first
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.out = nn.Linear(d, 1)

    def forward(self, src: Tensor, mask: Tensor) -> Tensor:
        h = self.drop(self.proj(src) * math.sqrt(self.d) + self.pos[: src.size(0)])
        return self.out(self.encoder(h, mask=mask))


def parity_sum_recipe(
    epochs: int = 40,
    timed_epochs: int | None = None,
    n_train: int = 5000,
    seed: int = 0,
    device="cpu",
) -> dict:
    """Seed 002's run: data by the triple loop, then ``epochs`` of ``n_train`` x 20, batch 64.

    With ``timed_epochs`` < ``epochs`` only that many epochs are trained and the training
    time is scaled to ``epochs`` (``seconds`` = data time + scaled training time).
    ``acc`` is the rounded per-position accuracy on 1000 fresh sequences after the epochs
    actually trained.
    """
    timed_epochs = epochs if timed_epochs is None else min(timed_epochs, epochs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        start = time.perf_counter()
        x, y = parity_sum_data_loop(n_train, 20, 10, seed=seed)
        data_seconds = time.perf_counter() - start
        loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
        model = SeedSummingTransformer().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
        mask = nn.Transformer.generate_square_subsequent_mask(20, device=device)
        model.train()
        start = time.perf_counter()
        for _ in range(timed_epochs):
            for src, tgt in loader:
                src = src.permute(1, 0, 2).to(device)  # (T, B, 2)
                tgt = tgt.permute(1, 0).unsqueeze(-1).to(device)  # (T, B, 1)
                loss = F.mse_loss(model(src, mask), tgt)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                loss.item()  # the seed sums the epoch loss for its printout
        if device != "cpu":
            torch.cuda.synchronize()
        train_seconds = time.perf_counter() - start
        x_test, y_test = parity_sum_data_loop(1000, 20, 10, seed=seed + 1)
        model.eval()
        with torch.no_grad():
            pred = model(x_test.permute(1, 0, 2).to(device), mask).squeeze(-1).T.cpu()  # (B, T)
    return {
        "seconds": data_seconds + train_seconds * epochs / timed_epochs,
        "measured_seconds": data_seconds + train_seconds,
        "epochs": epochs,
        "timed_epochs": timed_epochs,
        "acc": (pred.round() == y_test).float().mean().item(),
        "params": sum(p.numel() for p in model.parameters()),
    }


# ---- seed 002: echo with hand-stepped recurrent cells ------------------------------------


class SeedEchoNet(nn.Module):
    """Seed 002's echo models, one step at a time: ``rnn`` (tanh cell) or ``lstm`` (LSTMCell)."""

    def __init__(self, cell: str, hidden: int = 10) -> None:
        super().__init__()
        self.cell, self.hidden = cell, hidden
        if cell == "rnn":
            self.i2h = nn.Linear(1, hidden)
            self.h2h = nn.Linear(hidden, hidden)
        else:
            self.lstm = nn.LSTMCell(1, hidden)
        self.h2o = nn.Linear(hidden, 1)

    def forward(self, x: Tensor) -> Tensor:
        """x (T, B, 1) -> logits (T, B, 1), the Python loop over T kept."""
        h = torch.zeros(x.size(1), self.hidden, device=x.device)
        state = (h, torch.zeros_like(h))
        outputs = []
        for x_t in x:
            if self.cell == "rnn":
                h = torch.tanh(self.i2h(x_t) + self.h2h(h))
            else:
                state = self.lstm(x_t, state)
                h = state[0]
            outputs.append(self.h2o(h))
        return torch.stack(outputs)


def echo_recipe(
    cell: str, epochs: int = 200, length: int = 10, lag: int = 2, n_fresh: int = 100, seed: int = 0
) -> dict:
    """Seed 002's echo run: 200 BPTT updates on one random sequence (Adam 0.01, BCE).

    ``acc`` is lit_seq's metric on ``n_fresh`` fresh sequences: per-step accuracy at
    t >= lag with logit > 0; ``train_acc`` the same on the training sequence.
    """
    start = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        bits, y = echo_data_loop(1, length, lag, seed=seed)
        x, y = bits.T.unsqueeze(-1), y.T.unsqueeze(-1)  # (T, 1, 1)
        model = SeedEchoNet(cell)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for _ in range(epochs):
            logits = model(x)
            # the seed sums one BCE per step
            loss = sum(F.binary_cross_entropy_with_logits(logits[t], y[t]) for t in range(length))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        fresh_bits, fresh_y = echo_data_loop(n_fresh, length, lag, seed=seed + 1)
        with torch.no_grad():
            train_pred = (model(x) > 0).float()[lag:]
            fresh_pred = (model(fresh_bits.T.unsqueeze(-1)) > 0).float().squeeze(-1).T  # (B, T)
    return {
        "seconds": seconds,
        "acc": (fresh_pred[:, lag:] == fresh_y[:, lag:]).float().mean().item(),
        "train_acc": (train_pred == y[lag:]).float().mean().item(),
        "epochs": epochs,
    }
