"""Grid keys: the short axis names, their config paths and the values each one allows.

A grid may vary (or fix, under ``overrides:``) any short key of :data:`AXES` or any dotted
config path such as ``model.init_args.dropout`` or ``data.init_args.gen_factors``. Values
are checked here, before anything trains, against the same registries the code uses.
"""

import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from lit_seq.ablate.common import BadGrid
from lit_seq.data import TASKS
from lit_seq.models import BACKBONES, POS_MODES, READOUTS


def _choice(allowed) -> Callable[[object], str | None]:
    allowed = list(allowed)
    return lambda v: None if v in allowed else f"is not one of {allowed}"


def _int(minimum: int) -> Callable[[object], str | None]:
    def check(v: object) -> str | None:
        ok = isinstance(v, int) and not isinstance(v, bool) and v >= minimum
        return None if ok else f"must be an integer >= {minimum}"

    return check


def _float(low: float, high: float | None = None) -> Callable[[object], str | None]:
    def check(v: object) -> str | None:
        try:
            # YAML reads 1e-3 (no dot) as a string; jsonargparse will read it as a float
            x = float(v) if not isinstance(v, bool) else None
        except (TypeError, ValueError):
            x = None
        if x is None or x < low or (high is not None and x >= high):
            upper = "" if high is None else f" and < {high}"
            return f"must be a number >= {low}{upper}"
        return None

    return check


def _positive(v: object) -> str | None:
    ok = _float(0.0)(v) is None and float(v) > 0
    return None if ok else "must be a number > 0"


def _bool(v: object) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


@dataclass(frozen=True)
class Axis:
    path: str  # the LightningCLI config path the short key stands for
    check: Callable[[object], str | None]  # None when the value is fine, else why not


AXES: dict[str, Axis] = {
    # ``task`` picks the base config configs/<task>/<arch>.yaml instead of setting a path
    "task": Axis("", _choice(TASKS)),
    "arch": Axis("model.init_args.arch", _choice(BACKBONES)),
    "pos_mode": Axis("model.init_args.pos_mode", _choice(POS_MODES)),
    "readout": Axis("model.init_args.readout", _choice(READOUTS)),
    "residual": Axis("model.init_args.residual", _bool),
    "d_model": Axis("model.init_args.d_model", _int(1)),
    "n_layers": Axis("model.init_args.n_layers", _int(1)),
    "n_heads": Axis("model.init_args.n_heads", _int(1)),
    "dropout": Axis("model.init_args.dropout", _float(0.0, 1.0)),
    "lr": Axis("model.init_args.lr", _positive),
    "weight_decay": Axis("model.init_args.weight_decay", _float(0.0)),
    "warmup_steps": Axis("model.init_args.warmup_steps", _int(0)),
    "steps": Axis("trainer.max_steps", _int(1)),
    "val_every": Axis("trainer.val_check_interval", _int(1)),
    "batch_size": Axis("data.init_args.batch_size", _int(1)),
}

ROOTS = ("model", "data", "trainer")
# set by the driver itself: a grid that sets them would silently fight it
RESERVED = {
    "seed_everything": "seeds come from the grid's `seeds:` list",
    "data.init_args.seed": "seeds come from the grid's `seeds:` list",
}
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def config_path(key: str, where: str) -> str:
    """The full config path of ``key`` (a short key or a dotted path); BadGrid if unknown."""
    if key in AXES:
        return AXES[key].path
    if key in RESERVED:
        raise BadGrid(f"{where}: {key!r} cannot be set by a grid: {RESERVED[key]}")
    if not _DOTTED.match(key) or key.split(".")[0] not in ROOTS:
        raise BadGrid(
            f"{where}: unknown key {key!r}; use one of {sorted(AXES)} or a dotted config path "
            f"under {list(ROOTS)} (e.g. model.init_args.dropout)"
        )
    root, first, *rest = key.split(".")
    # LightningCLI accepts model.X for model.init_args.X; store one spelling only
    if root in ("model", "data") and first not in ("init_args", "class_path"):
        key = ".".join([root, "init_args", first, *rest])
    if key in RESERVED:
        raise BadGrid(f"{where}: {key!r} cannot be set by a grid: {RESERVED[key]}")
    return key


def check_value(key: str, value: object, where: str) -> None:
    """BadGrid naming ``key`` and what it allows when ``value`` is not a valid value of it."""
    if key in AXES and (why := AXES[key].check(value)) is not None:
        raise BadGrid(f"{where}: {key}={value!r} {why}")


def _init_params(cls: type) -> set[str] | None:
    """Argument names ``cls`` accepts, following ``**kwargs`` up the MRO; None if unknowable."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters.values()
        names |= {p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD}
        names |= {p.name for p in params if p.kind is p.KEYWORD_ONLY}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names - {"self"}
    return None


def _import(class_path: str) -> type | None:
    module, _, name = class_path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        return None  # fit reports a bad class_path at run time, with its own message


def check_paths_apply(config_file: Path, paths: list[str], where: str) -> None:
    """BadGrid when a ``model.``/``data.``/``trainer.`` path names no argument of its class.

    This is what makes conditional axes safe: ``readout`` under a block whose base config is
    not the classifier fails here, not half-way through the grid. Only the first level below
    ``init_args`` is checked; deeper values are checked by ``lit_seq.fit`` at run time.
    """
    try:
        base = yaml.safe_load(config_file.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise BadGrid(f"{where}: cannot read base config {str(config_file)!r}: {err}") from None
    if not isinstance(base, dict):
        base = {}
    for path in paths:
        root, first, *rest = path.split(".")
        if root == "trainer":
            from lightning.pytorch import Trainer

            cls, name = Trainer, first
        elif first == "init_args" and rest:
            section = base.get(root)
            class_path = section.get("class_path") if isinstance(section, dict) else None
            cls, name = (_import(class_path) if class_path else None), rest[0]
        else:
            continue
        accepted = _init_params(cls) if cls is not None else None
        if accepted is not None and name not in accepted:
            raise BadGrid(
                f"{where}: {path!r} does not apply to {cls.__name__} (the {root} of "
                f"{config_file.name}); its options are {sorted(accepted)}"
            )
