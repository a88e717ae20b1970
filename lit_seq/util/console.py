"""The console the entry points print their tables on, readable when piped.

rich sizes a console to its terminal, and to 80 columns when the output is a pipe or a file
(CI, ``tee``, ``> log``): a results table wider than that wraps its headers mid-word and
its cells into unreadable columns. Piped, there is no screen to fit, so the console takes
:data:`PIPE_WIDTH` columns instead, unless ``COLUMNS`` says otherwise (rich reads it): each
table is then printed at its natural width, one line per row (a table is as wide as its
content, not as the console).
"""

import os

from rich.console import Console

PIPE_WIDTH = 1000  # wider than any table of a report: none wraps


def output_console(**kwargs) -> Console:
    """A rich ``Console(**kwargs)``; :data:`PIPE_WIDTH` wide when it does not write to a
    terminal and no ``COLUMNS`` is set."""
    console = Console(**kwargs)
    if console.is_terminal or "COLUMNS" in os.environ or "width" in kwargs:
        return console
    return Console(width=PIPE_WIDTH, **kwargs)
