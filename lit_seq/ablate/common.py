"""The error every part of the grid driver raises for a bad grid, flag or output folder."""


class BadGrid(ValueError):
    """A problem with a grid spec or its output folder, shown as one line (exit code 2)."""
