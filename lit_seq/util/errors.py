"""How an exception becomes the one line that records, warnings and progress lines show."""


def error_line(error: BaseException, limit: int = 1000) -> str:
    """``Type: message`` on one line (whitespace folded), at most ``limit`` characters."""
    text = " ".join(str(error).split()) or repr(error)
    return f"{type(error).__name__}: {text}"[:limit]
