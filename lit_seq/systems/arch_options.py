"""Which backbone reads which option: an option set away from its default on a backbone that
never reads it would be a silent no-op, so ``SequenceSystem`` refuses it in one line.

Example: ``pos_mode='none'`` with ``arch='lstm'`` -> "pos_mode='none' only applies to
arch='transformer', not 'lstm'".
"""

from __future__ import annotations

# option -> the archs whose network reads it (the others ignore it)
READ_BY: dict[str, tuple[str, ...]] = {
    "n_heads": ("transformer", "linear_attention"),
    "d_ff": ("transformer", "linear_rnn", "linear_attention"),
    "pos_mode": ("transformer",),
    "pos_range": ("transformer",),
    "residual": ("transformer",),
    "norm": ("transformer",),
    "embed_scale": ("transformer",),
    "forget_bias": ("lstm",),
    "nonlinearity": ("rnn",),
    "input_embedding": ("rnn", "lstm"),
    "bidirectional": ("rnn", "lstm"),
    "d_state": ("mamba",),
    "eigenvalues": ("linear_rnn",),
}

# options of the embedding, blocks and heads a seq2seq encoder-decoder builds its own way
NOT_SEQ2SEQ = (
    "norm",
    "embed_scale",
    "forget_bias",
    "nonlinearity",
    "input_embedding",
    "readout_relu",
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
