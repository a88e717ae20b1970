"""The one Markdown table writer: GitHub tables without an extra dependency."""

import math


def markdown_cell(value: object) -> str:
    """A table cell: blank for missing values, numbers to 4 significant digits, pipes escaped."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    """``header`` and ``rows`` as a Markdown table, one line each, ending in a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(markdown_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
