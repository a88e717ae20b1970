"""Cells of one shape: those a grid checks with one build, and what each is checked with.

Building a cell the way a fit does (``lit_seq.fit.check_config``) costs a few hundredths of
a CPU second; a 10,000-cell grid (a long learning-rate list crossed with a few other axes)
built cell by cell took minutes. Most of those cells differ only in the optimizer's options
(``lr``, ``optimizer``, ``weight_decay``, ``schedule``, ``warmup_steps``), which nothing
the check computes reads but the constructor's own check of them
(:func:`lit_seq.systems.optimizers.check_optimizer_options`) and the digest: the network, the data,
the trainer, the cost and the pack key (``population_key`` leaves them out) are the same.

So a cell's *shape* is its base config and its fit arguments with the values of those
options taken out. The first cell of a shape is built in full; every other cell of it is
checked by that same function with its own values (the constructor's words), and its digest
is the first cell's resolved configuration with its own values put in. A value that is not
plainly what the parser would make of it (``nan``, ``1e-3x``, a choice not allowed) is not
guessed at: that cell is built in full, and refused in the parser's words.
"""

import functools
import inspect
import json
import math
import re
import typing

from lit_seq.systems import SequenceSystem
from lit_seq.systems.optimizers import check_optimizer_options

FREE = tuple(inspect.signature(check_optimizer_options).parameters)  # the optimizer's options
_PREFIXES = {f"--model.init_args.{name}=": name for name in FREE}
# the plain spellings only, which YAML and Python read alike ("010" is 8 to YAML 1.1)
_INT = re.compile(r"^[+-]?(0|[1-9]\d*)$")
_FLOAT = re.compile(r"^[+-]?((0|[1-9]\d*)(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_MARK = "\x00{}\x00"  # in a template: no option's value can hold it


def split(args: list[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """``args`` with the optimizer's values taken out (the shape), and those values as given
    (the last of an option given twice: the one the parser keeps)."""
    shape, values = [], {}
    for arg in args:
        prefix = next((p for p in _PREFIXES if arg.startswith(p)), None)
        if prefix is None:
            shape.append(arg)
        else:
            shape.append(prefix)
            values[_PREFIXES[prefix]] = arg[len(prefix) :]
    return tuple(shape), values


@functools.cache
def _hints() -> dict:
    return typing.get_type_hints(SequenceSystem.__init__)


def _plain_float(text: str) -> bool:
    """Finite (``1e999`` is not), and not a negative zero (``-0``, which YAML reads as 0)."""
    number = float(text)
    return math.isfinite(number) and not (number == 0 and text.startswith("-"))


def typed(values: dict[str, str]) -> dict | None:
    """``values`` as the parser gives them to the system (``"1"`` -> 1.0 for ``lr``), or None
    if one is not plainly of its option's type (then the cell is built, in the parser's
    words)."""
    hints = _hints()
    out = {}
    for name, text in values.items():
        hint = hints[name]
        if typing.get_origin(hint) is typing.Literal:
            if text not in typing.get_args(hint):
                return None
            out[name] = text
        elif hint is int and _INT.match(text):
            out[name] = int(text)
        elif hint is float and _FLOAT.match(text) and _plain_float(text):
            out[name] = float(text)
        else:
            return None
    return out


def template(content: dict) -> str:
    """A resolved configuration's JSON as ``grid.content_digest`` writes it, with a marker in
    place of each of the optimizer's options: :func:`filled` puts a cell's own in, the same
    text a full encoding of that cell gives (JSON encodes each value on its own), at a
    fraction of the cost (a 10,000-cell grid: 0.1 s, not 1.5)."""
    model = content["model"]
    marks = {name: _MARK.format(name) for name in FREE if name in model["init_args"]}
    marked = {**content, "model": {**model, "init_args": {**model["init_args"], **marks}}}
    return json.dumps(marked, sort_keys=True, default=str)


def filled(text: str, options: dict) -> str:
    """``text`` (a :func:`template`) with the optimizer's ``options`` put in."""
    for name, value in options.items():
        text = text.replace(json.dumps(_MARK.format(name)), json.dumps(value))
    return text
