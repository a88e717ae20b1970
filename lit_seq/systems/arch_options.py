"""Which backbone reads which option: an option set away from its default on a backbone that
never reads it would be a silent no-op, so ``SequenceSystem`` refuses it in one line.

What an arch reads is what its class's ``__init__`` names (``models.backbone_reads``), the
one place a backbone declares it, as for a plug-in; ``input_embedding`` (the head's) is
read by the archs that can take the one-hot input (an ``input_size`` argument).

Example: ``pos_mode='none'`` with ``arch='lstm'`` -> "pos_mode='none' only applies to
arch='transformer', not 'lstm'".
"""

from __future__ import annotations

from lit_seq.models import BACKBONES, OPTIONS, backbone_reads


def read_by() -> dict[str, tuple[str, ...]]:
    """option -> the archs whose network reads it, in ``BACKBONES`` order (the others
    ignore it); options every arch reads are left out."""
    reads = {arch: backbone_reads(arch) for arch in BACKBONES}
    table = {name: tuple(a for a in BACKBONES if name in reads[a]) for name in OPTIONS}
    table["input_embedding"] = tuple(a for a in BACKBONES if "input_size" in reads[a])
    return {name: archs for name, archs in table.items() if len(archs) < len(BACKBONES)}


READ_BY = read_by()

# options of the embedding, blocks and heads a seq2seq encoder-decoder builds its own way
NOT_SEQ2SEQ = (
    "norm",
    "embed_scale",
    "attention_bias",
    "inner_dropout",
    "ffn_activation",
    "pos_from_end",
    "sincos_layout",
    "forget_bias",
    "nonlinearity",
    "single_bias",
    "input_embedding",
    "readout_relu",
    "embedding_bias",
)


def check_arch_options(arch: str, task_kind: str, values: dict, defaults: dict) -> None:
    """ValueError for the first option of ``values`` set away from its default in
    ``defaults`` that ``arch`` (or a ``seq2seq`` system) never reads."""
    for field, value in values.items():
        if value == defaults[field]:
            continue
        if task_kind == "seq2seq" and field in NOT_SEQ2SEQ:
            raise ValueError(
                f"{field}={value!r} does not apply to seq2seq (its encoder-decoder builds its "
                f"own); leave it at {defaults[field]!r}"
            )
        archs = READ_BY.get(field)
        if archs is not None and arch not in archs:
            allowed = " or ".join(f"arch={a!r}" for a in archs)
            raise ValueError(f"{field}={value!r} only applies to {allowed}, not {arch!r}")
