"""One line for an error of LightningCLI's parser: the root cause, prefixed by its field.

jsonargparse wraps a constructor's error in several layers and names the nested keys it was
parsing; a user should read what ``lit_seq.checks`` would have said (``arch='gru' is not one
of [...]``), once, with the field it is about.
"""

import re

from lit_seq.data import TASKS
from lit_seq.systems import SYSTEMS
from lit_seq.trainer_checks import PRECISIONS


def _inner(error: BaseException) -> BaseException | None:
    if error.__cause__ is not None or error.__suppress_context__:
        return error.__cause__
    return error.__context__


def one_line(error: BaseException) -> str:
    """The root cause of a (jsonargparse-wrapped) error as one line, prefixed by its field."""
    chain = [error]
    while (inner := _inner(chain[-1])) is not None:
        chain.append(inner)
    root = " ".join(str(chain[-1]).split())
    if missing := re.fullmatch(
        r"module '(lit_seq\.(data|systems))' has no attribute '(\w+)'", root
    ):
        known = TASKS if missing.group(2) == "data" else {c.__name__: c for c in SYSTEMS.values()}
        names = [f"{missing.group(1)}.{cls.__name__}" for cls in known.values()]
        return f"{missing.group(1)}.{missing.group(3)} does not exist; one of {names}"
    # jsonargparse names the nested keys it was parsing: 'Parser key "data": ... "length"';
    # a choice (Literal) field is said as lit_seq.checks.check_choice says it
    keys = re.findall(r'Parser key "([^"]+)"', str(error))
    if choice := re.search(r"Expected a typing\.Literal\[(.*)\]\. Got value: (.*)$", root):
        name = (keys[-1] if keys else "value").split(".")[-1]
        return f"{name}={choice.group(2)!r} is not one of [{choice.group(1)}]"
    # jsonargparse's "Expected a <class 'float'>. Got value: nan": say it as the other errors do
    root = re.sub(
        r"Expected a <class '(\w+)'>\. Got value: (.*)$",
        lambda m: f"got {m.group(2)!r}, which is not a valid {m.group(1)}",
        root,
    )
    field = ".".join(dict.fromkeys(keys))
    if field == "trainer.precision" and (value := re.search(r"got '([^']*)'", root)):
        return f"trainer.precision={value.group(1)!r} is not one of {list(PRECISIONS)}"
    if field and field not in root:
        return f"{field}: {root}"
    return root
