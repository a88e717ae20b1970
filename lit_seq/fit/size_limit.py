"""The size a fit may build: its parameters counted before any memory is taken.

``--model.d_model 100000`` asks for a model of hundreds of billions of parameters; building it
would end in the allocator's own error (or the machine swapping) naming no option. So the
data module and the system are first built on PyTorch's ``meta`` device, by the same parser
and constructors (shapes only, nothing allocated, nothing initialised, no random numbers
drawn: a few hundredths of a second), and a model over :data:`DEFAULT_MAX_PARAMS`
parameters is refused in one line with its count and the way to allow it.
"""

import os

import torch

from lit_seq.util.checks import BadInput

MAX_PARAMS_ENV = "LIT_SEQ_MAX_PARAMS"  # a larger (or smaller) limit, for this machine
# 1e9 float32 parameters: 4 GB of weights, about 16 GB with their gradients and Adam's two
# moments; the largest shipped config or grid builds well under a million
DEFAULT_MAX_PARAMS = 1_000_000_000
SIZE_OPTIONS = ("d_model", "n_layers", "d_ff")  # what a refusal names: what sets the count


def max_params() -> int:
    """The limit: ``LIT_SEQ_MAX_PARAMS`` if set, else :data:`DEFAULT_MAX_PARAMS`."""
    text = os.environ.get(MAX_PARAMS_ENV, "").replace("_", "").replace(",", "")
    if not text:
        return DEFAULT_MAX_PARAMS
    if not text.isdigit() or int(text) < 1:
        raise BadInput(f"{MAX_PARAMS_ENV}={text!r} must be a whole number of parameters >= 1")
    return int(text)


# (parser, model section, data section) -> the model's parameters (None: not counted). The
# count is a function of those two sections (the data's sizes reach the model through the
# parser's links): a process that builds many fits of one shape (a population's members, a
# grid's seeds, a benchmark) counts it once.
_COUNTS: dict[tuple, int | None] = {}
_MAX_COUNTS = 256


def _count_on_meta(parser, config) -> int | None:
    """The parameters of the model ``config`` builds, built on the meta device; None where
    that build fails or builds no module."""
    try:
        with torch.device("meta"):
            built = parser.instantiate(config)
    except Exception:  # noqa: BLE001 - the real build that follows says what is wrong
        # (a bad value), or builds unchecked a class that needs real numbers to be built
        return None
    model = built.get("model")
    if not isinstance(model, torch.nn.Module):
        return None
    return sum(p.numel() for p in model.parameters())


def parameter_count(parser, config) -> int | None:
    """:func:`_count_on_meta`, once per model and data section (:data:`_COUNTS`)."""
    key = (parser, repr(config.get("model")), repr(config.get("data")))
    if key not in _COUNTS:
        if len(_COUNTS) >= _MAX_COUNTS:
            _COUNTS.clear()
        _COUNTS[key] = _count_on_meta(parser, config)
    return _COUNTS[key]


def check_size(parser, config) -> None:
    """BadInput if the model ``config`` builds has more parameters than :func:`max_params`.

    ``parser``: the fit's (LightningCLI's) parser; the classes are built on the meta device.
    """
    count = parameter_count(parser, config)
    if count is None:
        return
    limit = max_params()
    if count <= limit:
        return
    options = config.model.get("init_args") or {}
    given = ", ".join(f"model.{k}={options[k]}" for k in SIZE_OPTIONS if options.get(k))
    raise BadInput(
        f"{given}: a model of {count:,} parameters ({count * 4 / 1e9:,.1f} GB of float32 "
        f"weights, about 4x that to train), over the limit of {limit:,}; give smaller sizes, "
        f"or set {MAX_PARAMS_ENV}={count} to build it"
    )
