"""Task-level networks: an input embedding, any backbone, and an output head.

The backbone is injected (built by ``build_backbone``), so one head serves every
architecture.
"""

from __future__ import annotations

from torch import Tensor, nn

from .readout import Readout
from .recurrent import RecurrentBackbone


def _first_position_is_blind(backbone: nn.Module) -> bool:
    """True when the backbone's output at position 0 cannot depend on later inputs."""
    if getattr(backbone, "causal", False):
        return True
    # A forward-only recurrence is causal even when built with causal=False.
    return isinstance(backbone, RecurrentBackbone) and not backbone.bidirectional


class SequenceClassifier(nn.Module):
    """Classify a whole sequence: (B, T, in_features) -> logits (B, num_classes).

    embed (Linear) -> readout.prepare -> backbone -> readout.pool -> head (Linear).

    Readout "cls" needs a backbone whose first position sees the whole sequence: a
    bidirectional transformer, or a bidirectional RNN (its backward pass carries the
    sequence into the token). A causal transformer or a forward-only RNN reads the
    [CLS] token before any data, so its output there ignores the input; that raises.

    Args:
        backbone: a (B, T, d) -> (B, T, d) module, e.g. from ``build_backbone``.
        in_features: features per input step.
        num_classes: number of classes.
        d_model: backbone width d.
        readout: "mean", "cls" or "last".
    """

    def __init__(
        self,
        backbone: nn.Module,
        in_features: int,
        num_classes: int,
        d_model: int,
        readout: str = "mean",
    ) -> None:
        super().__init__()
        if readout == "cls" and _first_position_is_blind(backbone):
            raise ValueError(
                f"readout='cls' needs a backbone whose first position sees the whole sequence, "
                f"but {type(backbone).__name__} (causal or forward-only) reads the [CLS] token "
                f"before the data; use readout='last' or 'mean'"
            )
        self.embed = nn.Linear(in_features, d_model)
        self.readout = Readout(readout, d_model)
        self.backbone = backbone
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, in_features), mask (B, T) bool True at padding -> logits (B, num_classes)."""
        h, mask = self.readout.prepare(self.embed(x), padding_mask)  # (B, T', d)
        h = self.backbone(h, mask)  # (B, T', d)
        return self.head(self.readout.pool(h, mask))  # (B, num_classes)

    def attention_maps(self, x: Tensor, padding_mask: Tensor | None = None) -> list[Tensor]:
        """Per-layer attention maps (B, H, T', T') of the backbone, for visualisation.

        T' = T + 1 with the "cls" readout (the token is position 0).
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
    """

    def __init__(
        self, backbone: nn.Module, in_features: int, out_features: int, d_model: int
    ) -> None:
        super().__init__()
        self.embed = nn.Linear(in_features, d_model)
        self.backbone = backbone
        self.head = nn.Linear(d_model, out_features)

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        """(B, T, in_features), optional mask (B, T) True at padding -> (B, T, out_features)."""
        return self.head(self.backbone(self.embed(x), padding_mask))

    def attention_maps(self, x: Tensor, padding_mask: Tensor | None = None) -> list[Tensor]:
        """Per-layer attention maps (B, H, T, T) of the backbone, for visualisation."""
        if not hasattr(self.backbone, "attention_maps"):
            raise TypeError(f"{type(self.backbone).__name__} has no attention maps")
        return self.backbone.attention_maps(self.embed(x), padding_mask)
