"""Haiku's initialisation drawn into a built network (Delétang et al. 2023's models are haiku's).

torch and haiku start the same layers differently. ``nn.Linear`` draws its weight and bias
from U(-1/sqrt(fan_in), 1/sqrt(fan_in)); ``nn.RNN`` / ``nn.LSTM`` every weight and bias from
U(-1/sqrt(hidden), 1/sqrt(hidden)). haiku's ``hk.Linear`` draws its weight from a normal of
stddev 1/sqrt(fan_in) cut at two stddevs, not rescaled (so its std is 0.880 / sqrt(fan_in)),
and starts its bias at 0; its LSTM is ONE ``hk.Linear`` over concat(x, h) (fan_in = input +
hidden, one bias), its VanillaRNN two (input_to_hidden, hidden_to_hidden, a bias each);
``hk.LayerNorm`` starts at scale 1, offset 0; their transformer's embedding, a bias-free
``hk.Linear`` over the one-hot input, is a cut normal of stddev ``emb_init_scale`` = 0.02.

:func:`haiku_init` walks a network's modules and draws again, from torch's global stream,
what haiku would have drawn (``TN(s)``: normal of stddev s cut at +-2 s):

- ``nn.Linear`` (``MembersLinear`` too, and every layer a backbone is built from): weight
  TN(1/sqrt(in_features)), bias 0;
- ``nn.RNN`` / ``nn.RNNCell`` (VanillaRNN): ``weight_ih`` TN(1/sqrt(input)), ``weight_hh``
  TN(1/sqrt(hidden)), biases 0;
- ``nn.LSTM`` / ``nn.LSTMCell``: ``weight_ih`` and ``weight_hh`` TN(1/sqrt(input + hidden)),
  biases 0, the forget quarter of ``bias_ih`` at the module's ``forget_bias`` (0 unless
  ``recurrent.make_rnn`` set it) when both biases are trained;
- ``nn.LayerNorm``: weight 1, bias 0;
- embeddings: the module a head holds as ``embed`` (its input map), an ``nn.Embedding``,
  and the free one-symbol vectors ``empty_token`` / ``cls_token`` (the embedding of an extra
  one-hot symbol, as theirs): TN(``embedding_std``).

A frozen parameter (``requires_grad`` False: a constant such as the LSTM's frozen forget
bias) is left as it is; so is every parameter outside those layers (mamba's ``A_log``, a
learnable position table): haiku has no counterpart of them. Another recurrence (GRU) is
refused. Worked example: ``nn.Linear(256, 4)``'s weight is drawn with stddev 1/16, every
value within +-0.125, its std 0.0550; its bias is 0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

INITS = ("torch", "haiku")  # SequenceSystem's ``init``
EMBEDDING_STD = 0.02  # their TransformerConfig.emb_init_scale
EMBEDDING_MODULES = ("embed",)  # a head's input map (heads.make_embedding)
TOKEN_PARAMETERS = ("empty_token", "cls_token")  # a head's and a readout's free tokens


def truncated_normal_(tensor: Tensor, std: float) -> Tensor:
    """``tensor`` filled in place with haiku's ``TruncatedNormal(std)``: N(0, std^2) cut at
    +-2 std, not rescaled (its std is 0.880 std)."""
    return nn.init.trunc_normal_(tensor, mean=0.0, std=std, a=-2.0 * std, b=2.0 * std)


def _draw(param: Tensor | None, std: float | None, drawn: list[Tensor]) -> None:
    """``param`` drawn from TN(std), or set to 0 with ``std`` None; a frozen or absent one,
    or one on the meta device (a network built for its size alone), is left as it is."""
    if param is None or not param.requires_grad or param.is_meta:
        return
    with torch.no_grad():
        if std is None:
            param.zero_()
        else:
            truncated_normal_(param, std)
    drawn.append(param)


def _recurrence(module: nn.Module, drawn: list[Tensor]) -> None:
    """haiku's VanillaRNN or LSTM, for every layer (and direction) of ``module``."""
    lstm = isinstance(module, nn.LSTM | nn.LSTMCell)
    for name, param in module.named_parameters(recurse=False):
        if name.startswith("bias"):
            _draw(param, None, drawn)
            continue
        # weight_ih (gates * hidden, input), weight_hh (gates * hidden, hidden): the RNN's
        # two Linears; the LSTM's one Linear over concat(x, h), whose fan-in both halves share
        fan_in = _lstm_fan_in(module, name) if lstm else param.shape[1]
        _draw(param, 1.0 / math.sqrt(fan_in), drawn)
    if lstm:
        _forget_offset(module)


def _lstm_fan_in(module: nn.Module, name: str) -> int:
    """input + hidden of the layer that ``weight_{ih,hh}{suffix}`` belongs to."""
    suffix = name.removeprefix("weight_ih").removeprefix("weight_hh")  # "_l0", "_l1_reverse", ""
    return getattr(module, f"weight_ih{suffix}").shape[1] + module.hidden_size


def _forget_offset(module: nn.Module) -> None:
    """The module's ``forget_bias`` back on the forget quarter (torch's i, f, g, o) of every
    trained ``bias_ih``, when its ``bias_hh`` is trained too (a frozen one holds it)."""
    offset = getattr(module, "forget_bias", 0.0)
    if not offset:
        return
    hidden = module.hidden_size
    with torch.no_grad():
        for name, bias in module.named_parameters(recurse=False):
            partner = getattr(module, name.replace("bias_ih", "bias_hh"))
            if name.startswith("bias_ih") and bias.requires_grad and partner.requires_grad:
                bias[hidden : 2 * hidden] += offset


def haiku_init(network: nn.Module, embedding_std: float = EMBEDDING_STD) -> list[Tensor]:
    """Draw ``network``'s weights again as haiku initialises the same layers (see the module
    docstring); returns the parameters drawn, in module order.

    Args:
        network: a built network (a head with its backbone, or any part of one).
        embedding_std: stddev of the embeddings' cut normal (theirs: 0.02).
    """
    drawn: list[Tensor] = []
    embeddings = {
        id(module)
        for name, module in network.named_modules()
        if name.rpartition(".")[2] in EMBEDDING_MODULES or isinstance(module, nn.Embedding)
    }
    for module in network.modules():
        if isinstance(module, nn.GRU | nn.GRUCell):
            raise ValueError(f"haiku_init has no rule for {type(module).__name__}")
        if id(module) in embeddings:  # OneHotInput, the input read as it is, has none
            _draw(getattr(module, "weight", None), embedding_std, drawn)
            _draw(getattr(module, "bias", None), None, drawn)
        elif isinstance(module, nn.Linear):
            _draw(module.weight, 1.0 / math.sqrt(module.in_features), drawn)
            _draw(module.bias, None, drawn)
        elif isinstance(module, nn.RNNBase | nn.RNNCellBase):
            _recurrence(module, drawn)
        elif isinstance(module, nn.LayerNorm):
            if module.weight is not None and module.weight.requires_grad:
                with torch.no_grad():
                    module.weight.fill_(1.0)
                drawn.append(module.weight)
            _draw(module.bias, None, drawn)
        for name in TOKEN_PARAMETERS:  # a parameter, not a buffer (a one-hot empty symbol)
            token = getattr(module, name, None)
            if isinstance(token, nn.Parameter):
                _draw(token, embedding_std, drawn)
    return drawn
