"""A grid from the command line: one base config, its axes, seeds and fit overrides.

    python -m lit_seq.ablate --config configs/echo/rnn.yaml --axis lr=0.001,0.003,0.01 \\
                             --seeds 0,1,2 --steps 50

is the grid file

    name: echo-rnn-sweep             # --name, else <config's folder>-<config's stem>-sweep
    seeds: [0, 1, 2]                 # --seeds (default 0)
    overrides: {steps: 50}           # every --KEY VALUE the driver does not take itself
    blocks:
      - name: rnn                    # the config's stem
        config: configs/echo/rnn.yaml
        axes: {lr: [0.001, 0.003, 0.01]}   # one per --axis, first outermost

built in memory: :func:`sweep_spec` returns it as a grid file would load, and the driver
checks and runs it exactly as one (``spec.parse_spec``, every cell built by
``grid.check_cells``). The driver writes it into the out folder as ``grid.yaml``, so the same
command resumes it and ``lit_seq.report`` reads the folder like any grid's. Keys are a grid's
(``lit_seq.ablate.axes``: short names or dotted config paths); values are read as YAML
(``0.01``, ``true``, ``lstm``; an override may be a list, ``--data.gen_factors [2,4]``). An
axis value holding a comma, a list or a mapping needs a grid file. Every bad piece is one BadGrid line, before anything is built.
"""

import re
from pathlib import Path

from lit_seq.ablate.common import BadGrid
from lit_seq.util.safe_yaml import YamlError, load_yaml

WHERE = "command line"  # how errors and the driver name a grid with no file
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+")  # 1e-3, 3.0E4


def _value(text: str, where: str) -> object:
    """``text`` as YAML reads it on a fit's command line: ``0.01`` a float, ``true`` a bool,
    ``[2, 4]`` a list; ``1e-3`` a float too (YAML 1.1 would keep it a string)."""
    try:
        return float(text) if _FLOAT.fullmatch(text) else load_yaml(text, where)
    except YamlError as err:
        raise BadGrid(str(err)) from None


def parse_axis(text: str) -> tuple[str, list]:
    """``lr=0.001,0.003`` -> ``("lr", [0.001, 0.003])``; BadGrid saying the form otherwise."""
    key, sep, values = text.partition("=")
    parts = values.split(",")
    if not sep or not key.strip() or not all(p.strip() for p in parts):
        raise BadGrid(
            f"--axis {text!r}: write KEY=V1,V2,... (e.g. --axis model.lr=0.001,0.003), "
            "no spaces, no empty value"
        )
    if any(c in values for c in "[]{}"):  # split at its commas, a list would fall apart
        raise BadGrid(f"--axis {text!r}: a list or mapping value needs a grid file")
    return key.strip(), [_value(p.strip(), f"--axis {key.strip()}") for p in parts]


def parse_seeds(text: str) -> list[int]:
    """``0,1,2`` -> ``[0, 1, 2]`` (distinct and >= 0 is ``parse_spec``'s check)."""
    try:
        return [int(s) for s in text.split(",")]
    except ValueError:
        raise BadGrid(
            f"--seeds {text!r}: write integers joined by commas, e.g. --seeds 0,1,2"
        ) from None


def split_overrides(argv: list[str], known: set[str]) -> tuple[list[str], list[str]]:
    """``argv`` without a sweep's fit overrides, and those: each ``--KEY[=VALUE]`` whose
    ``--KEY`` is none of the driver's own options (``known``), with its value. Split before
    argparse sees them, which would take the value of ``--steps 50`` for the grid file."""
    kept, extra, rest = [], [], list(argv)
    while rest:
        arg = rest.pop(0)
        if arg.startswith("--") and arg != "--" and arg.partition("=")[0] not in known:
            extra.append(arg)
            if "=" not in arg and rest and not rest[0].startswith("--"):
                extra.append(rest.pop(0))
        else:
            kept.append(arg)
    return kept, extra


def parse_overrides(extra: list[str]) -> dict:
    """The fit overrides of a sweep: ``--KEY VALUE`` or ``--KEY=VALUE`` pairs, in order."""
    overrides, rest = {}, list(extra)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("--") or arg == "--":
            raise BadGrid(f"unexpected argument {arg!r}; fit overrides are --KEY VALUE")
        key, sep, value = arg[2:].partition("=")
        if not sep:
            if not rest or rest[0].startswith("--"):
                raise BadGrid(f"{arg}: give it a value (--KEY VALUE or --KEY=VALUE)")
            value = rest.pop(0)
        if key in overrides:
            raise BadGrid(f"--{key} is given twice")
        overrides[key] = _value(value, f"--{key}")
    return overrides


def sweep_name(config: str) -> str:
    """``configs/echo/rnn.yaml`` -> ``echo-rnn-sweep``: the default grid name of a sweep."""
    path = Path(config)
    parts = [p for p in (path.parent.name, path.stem) if p]
    return _UNSAFE.sub("_", "-".join([*parts, "sweep"])).lstrip("_.-")


def sweep_spec(
    config: str, axes: list[str], seeds: str | None, extra: list[str], name: str | None
) -> dict:
    """The grid of ``--config CONFIG --axis ... --seeds ... [--KEY VALUE ...] [--name N]``,
    as a grid file would load (unchecked: ``spec.parse_spec`` checks it as any grid's)."""
    parsed: dict = {}
    for text in axes:
        key, values = parse_axis(text)
        if key in parsed:
            raise BadGrid(f"--axis {key} is given twice; list all its values in one --axis")
        parsed[key] = values
    block = _UNSAFE.sub("_", Path(config).stem).lstrip("_.-") or "sweep"
    return {
        "name": name or sweep_name(config),
        "seeds": parse_seeds(seeds) if seeds is not None else [0],
        "overrides": parse_overrides(extra),
        "blocks": [{"name": block, "config": config, "axes": parsed}],
    }
