"""Everything a fit refuses before it builds a run folder, each as one line (BadInput).

The parser's own errors (:func:`one_line`: jsonargparse wraps a constructor's error in
several layers; a user should read what ``lit_seq.util.checks`` said, once, with its field),
the Trainer settings that cannot give a real run (:func:`check_trainer`: Lightning accepts
``max_steps=0`` and fails on others mid-set-up with a traceback; a grid checks every cell
without a Trainer, so this reads the parsed ``trainer`` section), the pairing of task and
system, the goals (target, range evaluation) and the config files themselves.
"""

import inspect
import re
import sys
from pathlib import Path

import torch

from lit_seq.data import TASKS, SyntheticDataModule
from lit_seq.fit.header import task_options
from lit_seq.fit.scoring import RangeEval
from lit_seq.fit.target import Target, check_target
from lit_seq.fit.wandb_options import new_layout, new_spelling
from lit_seq.models import BACKBONES
from lit_seq.models.plugin import SHARED, PluginBackbone
from lit_seq.systems import SYSTEMS, SequenceSystem
from lit_seq.util.assets import DEFAULT_CONFIG, find_file
from lit_seq.util.checks import BadInput, check_choice, check_float, check_int
from lit_seq.util.safe_yaml import YamlError, load_yaml

PRECISIONS = ("32-true", "64-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true")
PRECISIONS += ("32", "64", "16", "bf16", 32, 64, 16)  # Lightning's short spellings
_DURATION = re.compile(r"^(\d+):(\d+):(\d+):(\d+)$")  # max_time as DD:HH:MM:SS


def _seconds(max_time: object) -> float | None:
    """``max_time`` in seconds (a DD:HH:MM:SS string or a dict of timedelta parts), if known."""
    if isinstance(max_time, str) and (match := _DURATION.match(max_time)):
        days, hours, minutes, seconds = map(int, match.groups())
        return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if isinstance(max_time, dict):
        units = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}
        return sum(units.get(k, 0) * float(v) for k, v in max_time.items())
    return None


def check_trainer(trainer, cuda_available: bool | None = None) -> None:
    """ValueError naming the field for a ``trainer`` section that cannot give a real run
    on this machine (``cuda_available``: whether it has a CUDA device; default: asks torch)."""
    max_steps = trainer.get("max_steps")
    if max_steps is not None and max_steps != -1:
        check_int("trainer.max_steps", max_steps, 1, allowed=">= 1 (or -1: no step limit)")
    if (seconds := _seconds(trainer.get("max_time"))) is not None and seconds <= 0:
        raise ValueError(f"trainer.max_time={trainer.get('max_time')!r} must be longer than 0")
    interval = trainer.get("val_check_interval")
    if isinstance(interval, int) and not isinstance(interval, bool):
        check_int("trainer.val_check_interval", interval, 1, allowed=">= 1 (steps) or a fraction")
    if trainer.get("gradient_clip_val") is not None:
        check_float("trainer.gradient_clip_val", trainer.get("gradient_clip_val"), 0.0)
    if trainer.get("precision") is not None:
        check_choice("trainer.precision", trainer.get("precision"), PRECISIONS)
    if cuda_available is None:
        cuda_available = torch.cuda.is_available()
    if trainer.get("accelerator") in ("gpu", "cuda") and not cuda_available:
        raise ValueError(
            f"trainer.accelerator={trainer.get('accelerator')!r} but no CUDA device is visible "
            "here; use 'auto' (a GPU when there is one) or 'cpu'"
        )


CPU_PRECISIONS = ("32-true", "64-true", "bf16-mixed", "bf16-true")  # what a CPU fit runs as asked


def check_precision(trainer, cuda_available: bool | None = None) -> None:
    """ValueError for ``16-mixed`` on a CPU: Lightning would train ``bf16-mixed`` instead,
    with only a warning, and the record would hold a precision nobody asked for. A fit
    checks it for the device it runs on (a grid's check cannot: its runs may go to GPUs);
    ``cuda_available``: whether this machine has a CUDA device (default: asks torch)."""
    precision, accelerator = trainer.get("precision"), trainer.get("accelerator")
    if precision not in ("16-mixed", "16", 16):
        return
    if cuda_available is None:
        cuda_available = torch.cuda.is_available()
    if accelerator == "cpu" or not cuda_available:
        raise ValueError(
            f"trainer.precision={precision!r} needs a CUDA GPU, and this fit runs on the CPU; "
            f"give one of {list(CPU_PRECISIONS)} (bf16-mixed is Lightning's 16-bit on a CPU)"
        )


def fit_val_interval(trainer) -> str:
    """Shrink a ``val_check_interval`` of more steps than ``max_steps`` to ``max_steps`` and
    say so ("" when nothing changed): a quick run (``--trainer.max_steps 100``) of a config
    made for a long one would otherwise never validate, and keep no best checkpoint."""
    interval, max_steps = trainer.get("val_check_interval"), trainer.get("max_steps")
    if not isinstance(interval, int) or isinstance(interval, bool) or not max_steps:
        return ""
    validates = trainer.get("limit_val_batches") != 0  # 0: validation off on purpose
    if not validates or max_steps < 0 or interval <= max_steps:
        return ""
    trainer.val_check_interval = max_steps
    return (
        f"trainer.val_check_interval={interval} is longer than trainer.max_steps={max_steps}: "
        f"validating every {max_steps} steps instead"
    )


NOT_CONFIG_KEYS = {"help", "config", "print_config", "print_shtab"}  # flags, not settings


def unknown_key(message: str, keys: list[str]) -> str:
    """The parser's ``message`` about a top-level key that is none of ``keys`` (``modle:`` in a
    config, ``--modle.lr`` on the command line), said with the keys allowed; else ""."""
    found = re.search(r"Option '(\w+)[\w.]*' is not accepted", message)
    found = found or re.search(r"unrecognized arguments: --(\w+)", message)
    if found is None or found.group(1) in keys or "Parser key" in message:
        return ""
    return f"unknown key {found.group(1)!r}; the keys of a fit's config are {keys}"


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
    # a choice (Literal) field is said as lit_seq.util.checks.check_choice says it
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
    if field == "data" and (option := re.search(r"Option '(\w+)' is not accepted", root)):
        return _task_option_error(option.group(1), str(error))
    if field.endswith("backbone"):
        return _backbone_error(field, root, str(error))
    if field == "trainer.precision" and (value := re.search(r"got '([^']*)'", root)):
        return f"trainer.precision={value.group(1)!r} is not one of {list(PRECISIONS)}"
    if field and field not in root:
        return f"{field}: {root}"
    return root


def tasks_taking(option: str) -> list[str]:
    """The names of the tasks (``TASKS``) whose data module takes ``option``."""
    return [name for name, task in TASKS.items() if option in task_options(task)]


def _task_option_error(option: str, text: str) -> str:
    """The parser's refusal of ``--data.OPTION`` said with the task refusing it and the
    tasks that take it (``curriculum`` on ``signal``: the Delétang tasks take it)."""
    found = re.search(r"class_path '([\w.]+)'", text)
    cls = found.group(1).rpartition(".")[2] if found else ""
    task = next((name for name, t in TASKS.items() if t.__name__ == cls), cls or "this task")
    takers = tasks_taking(option)
    allowed = f"the tasks that take it are {takers}" if takers else "no task takes it"
    if not takers and task in TASKS:
        allowed += f"; {task!r} takes {list(task_options(TASKS[task]))}"
    return f"data.{option}: task {task!r} takes no option {option!r}; {allowed}"


def _backbone_error(field: str, root: str, text: str) -> str:
    """The parser's refusal of a plug-in backbone in lit_seq's words: what is wrong with the
    class, or with an option under its ``init_args`` (a shared option is the system's)."""
    value = re.search(r"Given value: ([\w.]+)", text)
    name = f"{field}={value.group(1)!r}" if value else field
    if "No module named" in root or "has no attribute" in root:
        return f"{name} cannot be imported: {root}"
    if "to be a function that returns" in root:
        return f"{name} is not an nn.Module class"
    option = re.search(r"Option '(\w+)' is not accepted", root)
    if option is None:
        return f"{field}: {root}"
    name = option.group(1)
    where = f"{field}.init_args.{name}"
    if name in SHARED:
        return (
            f"{where}: {name} is an option of the system, shared with the backbone; set it "
            f"as model.{name}"
        )
    found = re.search(r"class_path='([\w.]+)'", text)
    try:
        cls = PluginBackbone.parse(found.group(1)).cls if found else None
    except ValueError:
        cls = None
    if cls is None:
        return f"{where}: the backbone takes no option {name!r}"
    own = [n for n in inspect.signature(cls).parameters if n not in SHARED]
    options = f"its own options are {own}" if own else "it has no options of its own"
    return f"{where}: {cls.__name__} takes no option {name!r}; {options}"


def checked(fn):
    try:
        return fn()
    except ValueError as err:
        raise BadInput(str(err)) from None


def check_pairing(datamodule: SyntheticDataModule, model: SequenceSystem) -> None:
    """BadInput unless ``model`` is the kind of system that trains ``datamodule``'s task."""
    if datamodule.task_kind != model.task_kind:
        wanted = SYSTEMS.get(datamodule.task_kind)
        hint = f"; use {wanted.__module__}.{wanted.__name__}" if wanted else ""
        raise BadInput(
            f"model={type(model).__name__} trains {model.task_kind!r} tasks, but task "
            f"{datamodule.name!r} is {datamodule.task_kind!r}{hint}"
        )


def batch_notes(datamodule: SyntheticDataModule) -> list[str]:
    """A line when ``batch_size`` is larger than the training set: it trains full-batch."""
    if datamodule.train_batch_size >= datamodule.batch_size:
        return []
    n = datamodule.train_batch_size
    return [
        f"data.batch_size={datamodule.batch_size} is more than data.n_train={n}: every "
        f"training batch is the whole training set ({n} sequences), and samples/s counts {n}"
    ]


def check_goals(config, model: SequenceSystem) -> tuple[Target, RangeEval]:
    """The config's target and range evaluation, checked against ``model``; else BadInput."""
    target, range_eval = Target(**config.target), RangeEval(**config.range_eval)
    check_target(target, ["val/loss", *(f"val/{name}" for name in model.build_metrics())])
    range_eval.check()
    return target, range_eval


_CLASS_FLAGS = ("--data", "--data.help", "--model", "--model.help")


def class_path(flag: str, name: str) -> str:
    """The import path a short ``name`` given to ``flag`` stands for; ``name`` itself if none.

    ``--data`` and ``--data.help`` take a task's name (``parity_check``, as ``--data`` takes
    ``ParityCheckData``); ``--model`` and ``--model.help`` take a task's name or kind (the
    system that trains it: ``parity_check`` or ``classification`` -> SequenceClassification),
    and ``--model.help`` an arch (``lstm``: the options every system shares, arch's among
    them).
    """
    if flag.startswith("--data") and name in TASKS:
        return f"lit_seq.data.{TASKS[name].__name__}"
    if flag.startswith("--model"):
        kind = TASKS[name].task_kind if name in TASKS else name
        if kind in SYSTEMS:
            return f"lit_seq.systems.{SYSTEMS[kind].__name__}"
        if flag == "--model.help" and name in BACKBONES:
            return f"lit_seq.systems.{SequenceSystem.__name__}"
    return name


def short_names(args: list[str]) -> list[str]:
    """``args`` with the short names of :func:`class_path` replaced by import paths."""
    out = list(args)
    for i, arg in enumerate(out):
        flag, eq, value = arg.partition("=")
        if flag in _CLASS_FLAGS and eq:
            out[i] = f"{flag}={class_path(flag, value)}"
        elif arg in _CLASS_FLAGS and i + 1 < len(out):
            out[i + 1] = class_path(arg, out[i + 1])
    return out


def with_config(args: list[str] | None) -> list[str]:
    """``args`` with the default config when none is given, shipped configs found, the W&B
    options' old spellings in the group's (``lit_seq.fit.wandb_options``) and the short names
    of tasks and systems as import paths (:func:`short_names`).

    ``--config configs/echo/rnn.yaml`` names the file in the working directory if there is
    one, else the config shipped in the package (so the README's commands work anywhere).
    A config file with the old W&B keys (a run folder's from before the group) is handed
    to the parser with them moved into its ``wandb`` section.
    """
    args = new_spelling(sys.argv[1:] if args is None else args)
    out, given = [], False
    while args:
        arg = args.pop(0)
        if arg == "--config" or arg.startswith("--config="):
            name = arg.split("=", 1)[1] if "=" in arg else (args.pop(0) if args else "")
            found = find_file(name) if name else None
            moved = new_layout(check_config_file(found)) if found is not None else None
            out += ["--config", moved or str(found or name)]
            given = True
        else:
            out.append(arg)
    if not given and not any(a in ("-h", "--help") for a in out):
        out = ["--config", str(DEFAULT_CONFIG), *out]
    return short_names(out)


def check_config_file(path: Path) -> dict:
    """The contents of ``path``; BadInput unless it is a YAML mapping of sections of a sane
    size."""
    try:
        content = load_yaml(path.read_text(), f"config {str(path)!r}")
    except (OSError, YamlError) as err:
        raise BadInput(str(err)) from None
    if content is None:
        raise BadInput(f"config {str(path)!r} is empty; give at least model, data and trainer")
    if not isinstance(content, dict):
        raise BadInput(
            f"config {str(path)!r} must be a mapping of sections (model, data, trainer, ...), "
            f"got a {type(content).__name__}"
        )
    return content
