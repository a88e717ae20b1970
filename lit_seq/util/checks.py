"""The value checks every constructor shares, each raising one line: field, bad value, allowed.

A leaf module (no torch, no Lightning), so models, data and systems all use the same words,
and so does every grid, whose cells are checked by building them (``lit_seq.fit``).
"""

import math
from collections.abc import Iterable


class BadInput(ValueError):
    """A configuration problem found before training; shown as one line, no traceback."""


def check_choice(field: str, value: object, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise a ValueError naming both."""
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(f"{field}={value!r} is not one of {allowed}")
    return value


def check_int(
    name: str, value: object, minimum: int, maximum: int | None = None, allowed: str | None = None
) -> int:
    """Return `value` if it is an integer in [minimum, maximum], else raise a ValueError naming it.

    `allowed` replaces the default description of the range in the message.
    """
    if allowed is None:
        allowed = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    # bool is an int subclass, but `batch_size=True` is always a mistake.
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok or value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an integer {allowed}, got {value!r}")
    return value


def check_float(
    name: str,
    value: object,
    minimum: float,
    maximum: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` if it is a finite number in the range, else raise a ValueError naming it.

    ``low_open`` / ``high_open`` exclude the bounds themselves (``lr`` > 0, ``dropout`` < 1).
    """
    low = f"> {minimum}" if low_open else f">= {minimum}"
    high = "" if maximum is None else (f" and < {maximum}" if high_open else f" and <= {maximum}")
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = value > minimum if low_open else value >= minimum
    if ok and maximum is not None:
        ok = value < maximum if high_open else value <= maximum
    if not ok:
        raise ValueError(f"{name}={value!r} must be a finite number {low}{high}")
    return float(value)
