"""The error every part of the grid driver raises for a bad grid, flag or output folder, and
the key check every mapping of a grid file passes."""


class BadGrid(ValueError):
    """A problem with a grid spec or its output folder, shown as one line (exit code 2)."""


def check_keys(data: object, allowed: tuple[str, ...], where: str) -> dict:
    """``data`` if it is a mapping of ``allowed`` keys only; else BadGrid naming ``where``."""
    if not isinstance(data, dict):
        raise BadGrid(f"{where}: expected a mapping with keys {list(allowed)}, got {data!r}")
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise BadGrid(f"{where}: unknown key {unknown[0]!r}; allowed keys are {list(allowed)}")
    return data
