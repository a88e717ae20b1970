"""A user's own backbone (docs/plugins.md): how a config names it, and how it is built.

LightningCLI's convention for a module built inside another: the config names the class and
its own options (``class_path`` + ``init_args``), and the owner calls it with what only the
owner knows. Here the owner is the system. It gives ``causal`` (the task decides), ``max_len``
(the data decides) and the shared backbone options of :class:`BackboneOptions` (the system's
own, since its embedding and head use ``d_model`` too), each one only if the class's
``__init__`` names it (every one if it takes ``**kwargs``)::

    model:
      init_args:
        d_model: 32                    # shared: the system's, handed to the backbone
        backbone:
          class_path: examples.plugins.ConvBackbone
          init_args: {kernel: 5}       # the backbone's own options

A plain import path (``backbone: examples.plugins.GRUBackbone``) is the same with no options.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from dataclasses import dataclass
from typing import Protocol

from torch import nn

from .options import OPTIONS, BackboneOptions, build_with_options, options_read

SHARED = (*OPTIONS, "causal", "max_len")  # what the system hands a plug-in, by these names


class BackboneFactory(Protocol):
    """What ``SequenceSystem(backbone=...)`` is: a class that the system calls with the shared
    options (those its ``__init__`` names), its own options already bound.

    Typed as this Protocol, LightningCLI's parser takes ``class_path`` + ``init_args`` (or an
    import path alone) and leaves the keywords below to the system: each is set once, on the
    system (``--model.d_model 32``), and refused under ``init_args``.
    """

    def __call__(
        self,
        *,
        causal: bool,
        max_len: int,
        d_model: int,
        n_layers: int,
        n_heads: int,
        d_ff: int | None,
        dropout: float,
        pos_mode: str,
        pos_range: int | None,
        residual: bool,
        bidirectional: bool,
        d_state: int,
        eigenvalues: str,
    ) -> nn.Module: ...


def _import(path: str) -> type:
    module_name, _, class_name = path.rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as err:
        raise ValueError(f"backbone={path!r} cannot be imported: {err}") from None
    if not (isinstance(found, type) and issubclass(found, nn.Module)):
        raise ValueError(f"backbone={path!r} is not an nn.Module class")
    return found


@dataclass(frozen=True)
class PluginBackbone:
    """A plug-in backbone: its class and its own options (``init_args``)."""

    cls: type[nn.Module]
    init_args: dict

    @classmethod
    def parse(cls, value: object) -> PluginBackbone:
        """The plug-in ``value`` names; ValueError in one line if it names none.

        ``value``: an import path; ``{"class_path": ..., "init_args": {...}}`` (what configs,
        checkpoints and the parser's dump hold); a class; or the parser's instantiated form,
        a ``functools.partial`` of the class with its ``init_args`` bound.
        """
        if isinstance(value, functools.partial):  # jsonargparse: partial(..., cls, **init_args)
            found = next((a for a in reversed(value.args) if isinstance(a, type)), None)
            if found is None:
                raise ValueError(f"backbone={value!r} is not a class with its options")
            plugin = cls(found, dict(value.keywords))
        elif isinstance(value, type):
            plugin = cls(_import(f"{value.__module__}.{value.__qualname__}"), {})
        elif isinstance(value, str):
            plugin = cls(_import(value), {})
        elif isinstance(value, dict) and isinstance(value.get("class_path"), str):
            unknown = set(value) - {"class_path", "init_args"}
            if unknown:
                raise ValueError(
                    f"backbone: unknown key {sorted(unknown)[0]!r}; allowed: class_path, init_args"
                )
            plugin = cls(_import(value["class_path"]), dict(value.get("init_args") or {}))
        else:
            raise ValueError(f"backbone={value!r} must be an import path or class_path + init_args")
        plugin._check()
        return plugin

    @property
    def path(self) -> str:
        return f"{self.cls.__module__}.{self.cls.__qualname__}"

    @property
    def name(self) -> str:
        """What records, tables, the header and W&B call it: the class's ``arch`` attribute,
        else its class name."""
        return str(getattr(self.cls, "arch", None) or self.cls.__name__)

    def describe(self) -> str:
        """``path(kernel=5)``: the class and its own options, as the header shows them."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.init_args.items())
        return f"{self.path}({args})"

    def spec(self) -> dict:
        """As configs and checkpoints hold it: plain values only."""
        return {"class_path": self.path, "init_args": dict(self.init_args)}

    def takes(self) -> set[str] | None:
        """The shared options its ``__init__`` names; None when it takes ``**kwargs`` (all)."""
        takes = options_read(self.cls, SHARED)
        return None if takes is None else set(takes)

    def _check(self) -> None:
        params = inspect.signature(self.cls).parameters
        if "causal" not in params:
            raise ValueError(
                f"backbone={self.path!r} must take a causal argument (True: no peeking)"
            )
        for key in self.init_args:
            if key in SHARED:
                raise ValueError(
                    f"backbone.init_args.{key}: {key} is shared with the system; set it as "
                    f"model.{key}"
                )
            if key not in params and self.takes() is not None:
                own = [n for n in params if n not in SHARED and n != "self"]
                raise ValueError(
                    f"backbone.init_args.{key}: {self.cls.__name__} takes no {key!r}; its own "
                    f"options are {own}"
                )

    def check_options(self, options: BackboneOptions, defaults: dict) -> None:
        """ValueError for an option set away from its default that this backbone never reads
        (``pos_mode='rotary'`` for a GRU): it would be a silent no-op."""
        takes = self.takes()
        if takes is None:
            return
        for name in OPTIONS:
            value = getattr(options, name)
            if name == "d_model" or name in takes or value == defaults[name]:
                continue  # d_model also sizes the system's embedding and head
            shared = sorted(takes - {"causal", "max_len"})
            raise ValueError(
                f"{name}={value!r} does not apply to backbone {self.path}: of the backbone "
                f"options it takes {shared}; leave {name} at its default {defaults[name]!r}"
            )

    def build(self, options: BackboneOptions, *, causal: bool, max_len: int) -> nn.Module:
        """The (B, T, d) -> (B, T, d) backbone: its own options plus the shared ones it takes."""
        own = functools.partial(self.cls, **self.init_args)
        return build_with_options(own, options, causal=causal, max_len=max_len)
