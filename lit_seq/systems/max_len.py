"""The longest sequence a system's network is built for: ``max_len`` given, or the data's.

``max_len`` sizes what is fixed once trained (a ``learnable`` position table, the range
``randomized`` positions are drawn from); a value given must cover the data's longest
sequence, which a system learns from its data module (``data_max_len``).
"""

from lit_seq.util.checks import check_int

# max_len of a system built without data (tests, notebooks): the one the builders default to
DEFAULT_MAX_LEN = 512


def resolve_max_len(max_len: int | None, data_max_len: int | None) -> int:
    """The ``max_len`` a system is built with: the one given (if the data fits in it), else
    the data's longest sequence, else ``DEFAULT_MAX_LEN`` (a system built by hand)."""
    if max_len is None:
        return DEFAULT_MAX_LEN if data_max_len is None else data_max_len
    check_int("max_len", max_len, 1)
    if data_max_len is not None and max_len < data_max_len:
        raise ValueError(
            f"max_len={max_len} is shorter than the data's longest sequence, {data_max_len} "
            f"(its longest test set with any appended output); give max_len >= {data_max_len}, "
            "or leave it out to follow the data"
        )
    return max_len
