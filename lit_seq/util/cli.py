"""Command-line value parsers the entry points share (argparse ``type=`` callables)."""

import argparse
from collections.abc import Callable, Sequence


def comma_choices(field: str, allowed: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    """A parser of ``"a,b"`` into ``("a", "b")``, each one of ``allowed`` and at least one;
    else one line naming ``field``, the bad value and the allowed values. Example:
    ``comma_choices("stages", ["tests", "speed"])("speed,tests") == ("speed", "tests")``."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(s.strip() for s in text.split(",") if s.strip())
        unknown = [s for s in names if s not in allowed]
        if unknown or not names:
            raise argparse.ArgumentTypeError(
                f"{field}={text!r}: unknown {unknown}; allowed: a comma list of {list(allowed)}"
            )
        return names

    return parse
