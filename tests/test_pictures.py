"""The pictures a fit draws say what they show: axes, labels, inputs, one per test length."""

import pytest
import torch

from lit_seq.data import SignalData
from lit_seq.fit.callbacks import attention_figure, class_names, confusion_figure
from tests.helpers import REPO, tiny_fit

SIGNAL = REPO / "configs" / "signal" / "transformer.yaml"


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_a_confusion_matrix_per_test_length_names_its_classes_and_stays_readable():
    counts = {
        64: torch.tensor([[9, 1], [0, 10]]),
        128: torch.tensor([[2, 8], [5, 5]]),
    }
    fig = confusion_figure(counts, ["1 cycle", "2 cycles"], train_length=64)
    first, second, bar = fig.axes
    assert first.get_title() == "length 64 (training length)\naccuracy 95.0%"
    assert second.get_title() == "length 128 (2x)\naccuracy 35.0%"
    assert [t.get_text() for t in first.get_xticklabels()] == ["1 cycle", "2 cycles"]
    assert [t.get_text() for t in first.get_yticklabels()] == ["1 cycle", "2 cycles"]
    assert (first.get_xlabel(), first.get_ylabel()) == ("predicted class", "true class")
    assert _texts(first) == ["9\n90%", "1\n10%", "0\n0%", "10\n100%"]
    # the text on a dark cell is white, on a light one dark
    colours = [t.get_color() for t in first.texts]
    assert colours == ["white", "#1a1a1a", "#1a1a1a", "white"]
    assert bar.get_ylabel() == "share of the true class"


def test_the_signal_classes_are_named_by_their_frequency():
    assert class_names(SignalData(), 3) == ["1 cycle", "2 cycles", "3 cycles"]
    assert class_names(object(), 2) == ["class 0", "class 1"]


def test_attention_maps_show_layers_heads_axes_and_the_input():
    maps = [torch.softmax(torch.randn(2, 5, 5), dim=-1) for _ in range(3)]  # 3 layers, 2 heads
    labels = ["CLS", "0.1", "-0.3", "0.9", "0.0"]
    fig = attention_figure(maps, labels, "example")
    axes, bar = fig.axes[:-1], fig.axes[-1]
    assert [ax.get_title() for ax in axes][:3] == [
        "layer 1, head 1",
        "layer 1, head 2",
        "layer 2, head 1",
    ]
    bottom_left = axes[4]
    assert bottom_left.get_xlabel() == "key position: input"
    assert bottom_left.get_ylabel() == "query position: input"
    assert [t.get_text() for t in bottom_left.get_xticklabels()] == [
        "0: CLS",
        "1: 0.1",
        "2: -0.3",
        "3: 0.9",
        "4: 0.0",
    ]
    assert bar.get_ylabel() == "attention weight (each row sums to 1)"


@pytest.mark.integration
def test_a_fit_writes_both_pictures(tmp_path):
    run_dir = tmp_path / "run"
    tiny_fit(SIGNAL, run_dir, "--data.init_args.n_eval_per_class=20")
    assert (run_dir / "test_confusion_matrix.png").stat().st_size > 10_000
    assert (run_dir / "val_attention_maps.png").stat().st_size > 10_000
