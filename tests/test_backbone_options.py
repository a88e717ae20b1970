"""What a backbone reads is what its ``__init__`` names, and every option it names changes it.

``models.backbone_reads`` (and from it the refusals of ``systems.arch_options``) trusts the
signatures: a class that named an option and ignored it would make a set-away option a silent
no-op again. So, for every built-in arch, each option it names changes its output when set
away from its default (same seed, same input), and the refusal table is what they name.
"""

import pytest
import torch

from lit_seq.models import BACKBONES, BackboneOptions, backbone_reads, build_backbone
from lit_seq.systems.arch_options import READ_BY

BASE = dict(
    d_model=8,
    n_layers=2,
    n_heads=2,
    d_ff=None,
    dropout=0.0,
    pos_mode="sinusoidal",
    pos_range=None,
    residual=True,
    bidirectional=False,
    norm="pre",
    embed_scale=False,
    attention_bias=True,
    inner_dropout=True,
    ffn_activation="gelu",
    pos_from_end=False,
    sincos_layout="interleaved",
    forget_bias=0.0,
    nonlinearity="tanh",
    single_bias=False,
    d_state=4,
    eigenvalues="positive",
    stack_cell_size=8,
    stack_size=30,
    n_stacks=1,
    stack_states=2,
    stack_symbols=2,
    read_states=False,
    memory_cell_size=8,
    memory_size=40,
    mlp_layers_size=None,
)
# option -> (a value away from BASE's, what else it needs to be read)
AWAY = {
    "d_model": (16, {}),
    "n_layers": (1, {}),
    "n_heads": (4, {}),
    "d_ff": (4, {}),
    "dropout": (0.5, {}),
    "pos_mode": ("none", {}),
    "pos_range": (64, {"pos_mode": "randomized"}),  # the randomized encoding's own option
    "residual": (False, {}),
    "bidirectional": (True, {}),
    "norm": ("post", {}),
    "embed_scale": (True, {}),
    "attention_bias": (False, {}),
    "inner_dropout": (False, {"dropout": 0.5}),  # the sites it turns off drop nothing at 0
    "ffn_activation": ("relu", {}),
    "pos_from_end": (True, {}),
    "sincos_layout": ("concatenated", {}),
    "forget_bias": (1.0, {}),
    "nonlinearity": ("relu", {}),
    "single_bias": (True, {}),
    "d_state": (2, {}),
    "eigenvalues": ("signed", {}),
    "stack_cell_size": (3, {}),
    "stack_size": (2, {}),  # a stack of 2 cells, or a nondeterministic one frozen at step 2
    "n_stacks": (2, {}),
    "stack_states": (3, {}),
    "stack_symbols": (3, {}),
    "read_states": (True, {}),
    "memory_cell_size": (3, {}),
    "memory_size": (5, {}),
    "mlp_layers_size": ([], {}),
}
CASES = [
    (arch, name) for arch in BACKBONES for name in sorted(backbone_reads(arch) - {"input_size"})
]


def _output(arch: str, **changes) -> torch.Tensor:
    options = BackboneOptions(**{**BASE, **changes})
    torch.manual_seed(0)
    net = build_backbone(arch, options, causal=not options.bidirectional, max_len=16)
    x = torch.randn(3, 6, 8, generator=torch.Generator().manual_seed(1))
    if options.d_model != 8:
        x = torch.cat([x, x], dim=-1)
    torch.manual_seed(2)  # the same dropout and randomized-position draws on both sides
    return net.train()(x)


@pytest.mark.parametrize(("arch", "name"), CASES)
def test_every_option_an_arch_names_changes_its_output(arch, name):
    value, needs = AWAY[name]
    before, after = _output(arch, **needs), _output(arch, **needs, **{name: value})
    assert before.shape != after.shape or not torch.allclose(before, after)


def test_the_refusal_table_is_what_the_signatures_name():
    assert READ_BY["forget_bias"] == ("lstm",)
    assert READ_BY["nonlinearity"] == ("rnn", "stack_rnn", "ndstack_rnn", "tape_rnn")
    assert READ_BY["stack_size"] == ("stack_rnn", "ndstack_rnn")
    assert READ_BY["n_heads"] == ("transformer", "linear_attention")
    assert READ_BY["input_embedding"] == ("rnn", "lstm", "stack_rnn", "ndstack_rnn", "tape_rnn")
    for name, archs in READ_BY.items():
        key = "input_size" if name == "input_embedding" else name
        assert archs == tuple(a for a in BACKBONES if key in backbone_reads(a))
    assert "d_model" not in READ_BY  # every arch reads it: nothing to refuse


def test_a_backbone_is_given_only_what_it_names():
    lstm = build_backbone(
        "lstm", BackboneOptions(**{**BASE, "n_heads": 64}), causal=True, max_len=8
    )
    assert type(lstm).__name__ == "LSTMBackbone"  # n_heads was never offered to it
    with pytest.raises(ValueError, match="arch='mamba' reads no one-hot input"):
        build_backbone("mamba", BackboneOptions(**BASE), causal=True, max_len=8, input_size=3)


def test_each_encoding_reads_its_own_options_and_only_randomized_gets_pos_range():
    from lit_seq.models.positional import POS_MODES, build_positional, encoding_reads

    assert [m for m in POS_MODES if "pos_range" in encoding_reads(m)] == ["randomized"]
    assert encoding_reads("alibi") == {"n_heads", "causal"}
    assert encoding_reads("none") == frozenset()
    randomized = build_positional("randomized", d_model=8, max_len=16, pos_range=64)
    assert randomized.pos_range == 64
    torch.manual_seed(0)
    given = build_positional("learnable", d_model=8, max_len=16, pos_range=64)
    torch.manual_seed(0)
    plain = build_positional("learnable", d_model=8, max_len=16)
    assert torch.equal(given.pe, plain.pe)  # pos_range never reached it
