"""The fields of a ``select:`` block that shape its sweep, checked before anything trains:
``sweep_reason`` (why a learning-rate sweep is narrower than the default of
``lit_seq.results.selection``) and ``extend`` (``lit_seq.ablate.extension``)."""

from lit_seq.ablate.axes import AXES, config_path
from lit_seq.ablate.common import BadGrid
from lit_seq.results.selection import MIN_SWEEP_SPAN, MIN_SWEEP_VALUES, narrow_sweep, wide_sweep


def check_sweep(select: dict, axis: str, values: list, where: str) -> tuple[str, int]:
    """(``select.sweep_reason``, ``select.extend``), checked: a learning-rate sweep meets the
    default of ``lit_seq.results.selection`` (at least 4 rates spanning 30x) unless the
    block says why not; ``extend`` needs a sweep of positive numbers to step geometrically."""
    reason = select.get("sweep_reason", "")
    if not isinstance(reason, str) or ("sweep_reason" in select and not reason.strip()):
        raise BadGrid(
            f"{where}: select.sweep_reason={reason!r} must be a sentence saying why the sweep "
            "is what it is (the tables print it beside the value chosen)"
        )
    if config_path(axis, where) == AXES["lr"] and not reason and (why := narrow_sweep(values)):
        raise BadGrid(
            f"{where}: axes.{axis}={values!r} {why}; a select: block sweeps at least "
            f"{MIN_SWEEP_VALUES} learning rates spanning at least {MIN_SWEEP_SPAN:g}x (max/min), "
            f"e.g. {wide_sweep(values)}, or states why not in select.sweep_reason"
        )
    extend = select.get("extend", 0)
    if isinstance(extend, bool) or not isinstance(extend, int) or extend < 0:
        raise BadGrid(
            f"{where}: select.extend={extend!r} must be an integer >= 0: how many values the "
            f"grid may add past the end of the {axis} sweep its winner sits at"
        )
    if extend and narrow_sweep(values) == "must be positive numbers":
        raise BadGrid(
            f"{where}: select.extend={extend} steps the {axis} sweep geometrically, so axes."
            f"{axis} must be positive numbers, got {values!r}"
        )
    return reason.strip(), extend
