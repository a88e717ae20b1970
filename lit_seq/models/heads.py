"""Task-level networks: an input embedding, any backbone, and an output head.

The backbone is injected (built by ``build_backbone``), so one head serves every
architecture. Two options make Delétang et al. 2023's recurrent models (models/rnn.py
``make_rnn``: ``hk.Linear(output_size)(jnn.relu(output))`` on the one-hot input):
``input_embedding=False`` feeds the one-hot input itself (``OneHotInput``; the backbone must
read ``one_hot_width(in_features)`` features) and ``readout_relu=True`` puts a ReLU between
the backbone's output and the output layer.

A backbone whose ``forward`` takes ``input_length`` (tape_rnn: its jumps) is given the
length of the task's input, before any token a head appends: ``AppendedOutputHead`` the
input's T (their ``make_model_with_empty_targets`` passes ``input_length=T``), and
``SequenceClassifier`` each sequence's real length (T without padding).
"""

from __future__ import annotations

import inspect

import torch
from torch import Tensor, nn

from .one_hot import OneHotInput
from .readout import Readout
from .recurrent import RecurrentBackbone
from .stacking import MembersLinear


def make_embedding(
    in_features: int, d_model: int, input_embedding: bool, embedding_bias: bool = True
) -> nn.Module:
    """The input map of a head: ``nn.Linear(in_features, d_model)`` (a population's members
    in one product: ``MembersLinear``), with a bias or not (Delétang et al. 2023's embedding
    has none), or ``OneHotInput``."""
    if not input_embedding:
        if not embedding_bias:
            raise ValueError("embedding_bias=False needs input_embedding=True (an embedding)")
        return OneHotInput(in_features)
    return MembersLinear(in_features, d_model, bias=embedding_bias)


def make_activation(readout_relu: bool) -> nn.Module:
    """What sits between the backbone's output and the output layer: ReLU, or nothing."""
    return nn.ReLU() if readout_relu else nn.Identity()


def reads_input_length(backbone: nn.Module) -> bool:
    """Whether ``backbone``'s forward takes the task's input length (``input_length``)."""
    return "input_length" in inspect.signature(backbone.forward).parameters


def _first_position_is_blind(backbone: nn.Module) -> bool:
    """True when the backbone's output at position 0 cannot depend on later inputs."""
    if getattr(backbone, "causal", False):
        return True
    # A forward-only recurrence is causal even when built with causal=False.
    return isinstance(backbone, RecurrentBackbone) and not backbone.bidirectional


class SequenceClassifier(nn.Module):
    """Classify a whole sequence: (B, T, in_features) -> logits (B, num_classes).

    embed (Linear) -> readout.prepare -> backbone -> [ReLU] -> readout.pool -> head (Linear).

    Readout "cls" needs a backbone whose first position sees the whole sequence: a
    bidirectional transformer, or a bidirectional RNN (its backward pass carries the
    sequence into the token). A causal transformer or a forward-only RNN reads the
    [CLS] token before any data, so its output there ignores the input; that raises.

    Args:
        backbone: a (B, T, d) -> (B, T, d) module, e.g. from ``build_backbone``.
        in_features: features per input step.
        num_classes: number of classes.
        d_model: backbone width d.
        readout: "mean", "cls", "last" or "empty".
        input_embedding: False: the backbone reads the one-hot input (``OneHotInput``) and
            the "empty" token is the one-hot empty symbol.
        readout_relu: a ReLU on the backbone's output, before pooling and the output layer.
        embedding_bias: the input embedding has a bias (False: none, Delétang's).
    """

    def __init__(
        self,
        backbone: nn.Module,
        in_features: int,
        num_classes: int,
        d_model: int,
        readout: str = "mean",
        input_embedding: bool = True,
        readout_relu: bool = False,
        embedding_bias: bool = True,
    ) -> None:
        super().__init__()
        if readout == "cls" and _first_position_is_blind(backbone):
            raise ValueError(
                f"readout='cls' needs a backbone whose first position sees the whole sequence, "
                f"but {type(backbone).__name__} (causal or forward-only) reads the [CLS] token "
                f"before the data; use readout='last' or 'mean'"
            )
        self.embed = make_embedding(in_features, d_model, input_embedding, embedding_bias)
        if input_embedding:
            self.readout = Readout(readout, d_model)
        else:
            self.readout = Readout(readout, self.embed.width, self.embed.empty_symbol)
        self.backbone = backbone
        self.reads_length = reads_input_length(backbone)
        self.act = make_activation(readout_relu)
        self.head = MembersLinear(d_model, num_classes)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, in_features), mask (B, T) bool True at padding -> logits (B, num_classes)."""
        h, mask = self.readout.prepare(self.embed(x), padding_mask)  # (B, T', d or V + 1)
        if self.reads_length:  # each sequence's own length, before a readout token
            length = x.shape[1] if padding_mask is None else (~padding_mask).sum(dim=1)
            h = self.act(self.backbone(h, mask, input_length=length))
        else:
            h = self.act(self.backbone(h, mask))  # (B, T', d)
        return self.head(self.readout.pool(h, mask))  # (B, num_classes)

    def attention_maps(self, x: Tensor, padding_mask: Tensor | None = None) -> list[Tensor]:
        """Per-layer attention maps (B, H, T', T') of the backbone, for visualisation.

        T' = T + 1 with the "cls" readout (the token is position 0) and with "empty" (the
        token follows the sequence).
        """
        if not hasattr(self.backbone, "attention_maps"):
            raise TypeError(f"{type(self.backbone).__name__} has no attention maps")
        h, mask = self.readout.prepare(self.embed(x), padding_mask)
        return self.backbone.attention_maps(h, mask)


class PerStepHead(nn.Module):
    """One prediction per step: (B, T, in_features) -> (B, T, out_features).

    Serves per-step regression (out_features = targets per step) and per-step
    logits (binary: out_features = 1). Use a causal backbone when step t may only
    depend on inputs up to t.

    Args:
        backbone: a (B, T, d) -> (B, T, d) module.
        in_features: features per input step.
        out_features: outputs per step.
        d_model: backbone width d.
        input_embedding: False: the backbone reads the one-hot input (``OneHotInput``).
        readout_relu: a ReLU on the backbone's output, before the output layer.
        embedding_bias: the input embedding has a bias (False: none, Delétang's).
    """

    def __init__(
        self,
        backbone: nn.Module,
        in_features: int,
        out_features: int,
        d_model: int,
        input_embedding: bool = True,
        readout_relu: bool = False,
        embedding_bias: bool = True,
    ) -> None:
        super().__init__()
        self.embed = make_embedding(in_features, d_model, input_embedding, embedding_bias)
        self.backbone = backbone
        self.act = make_activation(readout_relu)
        self.head = MembersLinear(d_model, out_features)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, in_features), optional mask (B, T) True at padding -> (B, T, out_features)."""
        return self.head(self.act(self.backbone(self.embed(x), padding_mask)))

    def attention_maps(self, x: Tensor, padding_mask: Tensor | None = None) -> list[Tensor]:
        """Per-layer attention maps (B, H, T, T) of the backbone, for visualisation."""
        if not hasattr(self.backbone, "attention_maps"):
            raise TypeError(f"{type(self.backbone).__name__} has no attention maps")
        return self.backbone.attention_maps(self.embed(x), padding_mask)


class AppendedOutputHead(nn.Module):
    """Write a whole output sequence at once on empty positions appended to the input.

    (B, T, in_features) and ``n_out`` -> logits (B, n_out, out_features). The input is
    embedded, ``n_out`` copies of a learned empty token follow it, the backbone reads all
    T + n_out positions, and the head reads the last ``n_out`` only: the non-autoregressive
    models of Delétang et al. 2023 (experiments/utils.py ``make_model_with_empty_targets``,
    whose empty symbol is an extra one-hot input; its embedding is this free vector).
    Example: input 0 1 1 and n_out 3 -> the backbone reads 0 1 1 E E E and position 3's
    output is the first output symbol. Nothing read at positions 0 .. T-1 reaches the logits
    except through the backbone's own state.

    Args:
        backbone: a (B, T, d) -> (B, T, d) module.
        in_features: features per input step (the one-hot vocabulary).
        out_features: classes per output position.
        d_model: backbone width d.
        input_embedding: False: the backbone reads the one-hot input (``OneHotInput``) and
            the empty token is the one-hot empty symbol, exactly their model's input.
        readout_relu: a ReLU on the backbone's output, before the output layer.
        embedding_bias: the input embedding has a bias (False: none, Delétang's).
    """

    def __init__(
        self,
        backbone: nn.Module,
        in_features: int,
        out_features: int,
        d_model: int,
        input_embedding: bool = True,
        readout_relu: bool = False,
        embedding_bias: bool = True,
    ) -> None:
        super().__init__()
        self.embed = make_embedding(in_features, d_model, input_embedding, embedding_bias)
        if input_embedding:
            self.empty_token = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)  # (1, 1, d)
        else:
            self.register_buffer("empty_token", self.embed.empty_symbol.clone(), persistent=False)
        self.backbone = backbone
        self.reads_length = reads_input_length(backbone)
        self.act = make_activation(readout_relu)
        self.head = MembersLinear(d_model, out_features)

    def forward(self, x: Tensor, n_out: int) -> Tensor:
        """(B, T, in_features) -> (B, n_out, out_features) logits at the appended positions."""
        h = self.embed(x)  # (B, T, d or V + 1)
        empty = self.empty_token.expand(h.shape[0], n_out, -1).to(h.dtype)  # (B, n_out, d)
        h = torch.cat([h, empty], dim=1)  # (B, T + n_out, d)
        # the input's length, not T + n_out (their input_length)
        h = self.backbone(h, input_length=x.shape[1]) if self.reads_length else self.backbone(h)
        return self.head(self.act(h[:, h.shape[1] - n_out :]))  # (B, n_out, out_features)

    def attention_maps(self, x: Tensor, n_out: int | None = None) -> list[Tensor]:
        """Per-layer attention maps (B, H, T + n_out, T + n_out) of the backbone over the
        input and ``n_out`` empty positions after it (None: as many as the input has, the
        run of reverse_string and odds_first), for visualisation."""
        if not hasattr(self.backbone, "attention_maps"):
            raise TypeError(f"{type(self.backbone).__name__} has no attention maps")
        h = self.embed(x)  # (B, T, d)
        n_out = h.shape[1] if n_out is None else n_out
        empty = self.empty_token.expand(h.shape[0], n_out, -1).to(h.dtype)
        return self.backbone.attention_maps(torch.cat([h, empty], dim=1))
