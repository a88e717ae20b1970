"""What a fit prints: its own options in ``--help``, a short header, and its test metrics.

LightningCLI's ``--help`` documents the Trainer at length but lit_seq's own options (the
backbone, the positional encoding, the readout, each task's settings) only under
``--model.help CLASS``; :func:`options_help` lists them at the top of ``--help``, with
their allowed values, read from the typed signatures (so it cannot drift from them).
"""

import dataclasses
import functools
import inspect
import re
import textwrap
import typing

import docstring_parser
import yaml
from jsonargparse import ArgumentParser
from rich.console import Console
from rich.table import Table

from lit_seq.data import TASKS
from lit_seq.fit.scoring import RangeEval
from lit_seq.fit.target import Target
from lit_seq.fit.wandb_options import WandbOptions
from lit_seq.record import FitResult
from lit_seq.systems import SYSTEMS, SequenceSystem
from lit_seq.systems.compiled import describe_compile
from lit_seq.util.assets import DEFAULT_CONFIG, shipped_name
from lit_seq.util.console import output_console

LINKED = ("in_features", "out_features", "data_max_len")  # set from the data: never by hand


WIDTH = 100  # columns of an option line in --help
# where a doc's first sentence ends: at a full stop, but not that of "e.g." or "et al."
FIRST_SENTENCE = re.compile(r"(?<!\be\.g)(?<!\bet al)\. ")


def _kind(annotation) -> str:
    """A parameter's type as --help should show it: choices as ``{a,b}``, else the name."""
    if typing.get_origin(annotation) is typing.Literal:
        return "{" + ",".join(map(str, typing.get_args(annotation))) + "}"
    return getattr(annotation, "__name__", str(annotation)).replace("typing.", "")


def _options(cls: type, skip: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    """(name, ``kind = default``, first sentence of its doc) per argument of ``cls.__init__``."""
    docs = {
        p.arg_name: " ".join((p.description or "").replace("``", "").split())
        for p in docstring_parser.parse(cls.__init__.__doc__ or cls.__doc__ or "").params
    }
    hints = typing.get_type_hints(cls.__init__)
    # a dataclass field's default_factory shows as <factory> in the signature: its value
    factories = {
        f.name: f.default_factory for f in getattr(cls, "__dataclass_fields__", {}).values()
    }
    rows = []
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or name in skip or param.kind is param.VAR_KEYWORD:
            continue
        kind = _kind(hints.get(name, param.annotation))
        default = param.default
        if factories.get(name, dataclasses.MISSING) is not dataclasses.MISSING:
            default = factories[name]()
        rows.append((name, f"{kind} = {default!r}", FIRST_SENTENCE.split(docs.get(name, ""))[0]))
    return rows


@functools.cache  # read once a process
def plain_fit_model() -> dict:
    """The model arguments a plain ``python -m lit_seq.fit`` (no ``--config``) trains with:
    those its default config (``DEFAULT_CONFIG``) sets."""
    return yaml.safe_load(DEFAULT_CONFIG.read_text())["model"].get("init_args") or {}


def _plain_default(row: tuple[str, str, str]) -> tuple[str, str, str]:
    """A model option's row with the value a plain fit runs with where its default config
    sets another than the class's (``lr`` 0.01 where the class says 0.001)."""
    name, kind, doc = row
    plain = plain_fit_model()
    if name not in plain or kind.endswith(f" = {plain[name]!r}"):
        return row
    kind, _, default = kind.partition(" = ")
    return name, f"{kind} = {plain[name]!r} (class: {default})", doc


# the fit's options outside model and data, each group a class whose docstring is its help
RUN_GROUPS = (("wandb", WandbOptions), ("target", Target), ("range_eval", RangeEval))


@functools.cache  # a parser per task: built once a process
def task_options(task: type) -> tuple[str, ...]:
    """The option names of ``task`` in ``--data.help``'s order: its own, then those it hands
    to ``SyntheticDataModule`` through ``**kwargs`` (which the parser follows, and a plain
    signature does not show)."""
    parser = ArgumentParser()
    parser.add_class_arguments(task)
    return tuple(parser.get_defaults().keys())


def _line(indent: str, name: str, kind: str, doc: str) -> str:
    head = f"{indent}{name:<16} {kind}"
    if len(head) > WIDTH:  # a long list of choices (arch's) on a line of its own, then the rest
        choices, _, default = kind.partition(" = ")
        return f"{indent}{name} {choices}\n" + _line(indent, "", f"= {default}", doc)
    room = WIDTH - len(head) - 2
    return f"{head}  {textwrap.shorten(doc, room, placeholder='...')}" if room > 12 else head


@functools.cache  # every fit's parser carries it; built once a process (it reads signatures)
def options_help() -> str:
    """The text at the top of ``python -m lit_seq.fit --help``: lit_seq's own options."""
    lines = [
        "Train one configuration (default: signal / transformer), test it on every test set",
        "and write its run folder. lit_seq's own options follow; all options of one class:",
        "--model.help CLASS or --data.help CLASS, by class or short name (--data.help",
        "parity_check; --model.help takes a task, a task kind or an arch: --model.help lstm).",
        "",
        "Which setting wins: arguments are read left to right and a later one wins. So with",
        "--config a.yaml --config b.yaml --model.lr 0.01, b.yaml wins over a.yaml and the flag",
        "over both; a flag placed before a --config is overridden by that file.",
        "",
        "run options: --run_dir, --ckpt_path, --checkpoint_every, --init_seed, --score_weights,",
        "--scoring, --compile (each under its name below), and these groups:",
    ]
    for group, cls in RUN_GROUPS:
        lines.append(f"  {group} (--{group}.NAME VALUE):")
        lines += [_line("    ", *row) for row in _options(cls)]
    lines += [
        "",
        "model options (--model.NAME VALUE) of every system; the defaults are those a plain",
        f"python -m lit_seq.fit runs with ({shipped_name(DEFAULT_CONFIG)}), with the class's",
        "own where that config sets another:",
    ]
    base = _options(SequenceSystem, skip=LINKED)
    lines += [_line("  ", *_plain_default(row)) for row in base]
    for system in SYSTEMS.values():
        own = _options(system, skip=(*LINKED, *(n for n, _, _ in base)))
        if own:  # the arguments a system adds to those of the base class
            lines.append(f"  {system.__name__} (--model; trains {system.task_kind!r} tasks) adds:")
            lines += [_line("    ", *_plain_default(row)) for row in own]
    lines += ["", "tasks (--data NAME, then --data.NAME VALUE; all: --data.help NAME):"]
    for name, task in TASKS.items():
        options = ", ".join(task_options(task))
        lines += textwrap.wrap(
            f"{name} (lit_seq.data.{task.__name__}): {options}",
            WIDTH,
            initial_indent="  ",
            subsequent_indent="      ",
        )
    return "\n".join(lines)


def training_data(datamodule) -> str:
    """What a fit trains on, as the header says it: a fixed set of ``n_train`` sequences, or
    (``sampling="fresh"``) a new batch every step; at one length or, with the curriculum, a
    range of them. E.g. ``a fresh batch of 128 every step, lengths 1..40``."""
    train_lengths = getattr(datamodule, "train_lengths", [datamodule.train_length])
    lo, hi = min(train_lengths), max(train_lengths)
    span = f"lengths {lo}..{hi}" if lo < hi else f"length {hi}"
    if getattr(datamodule, "sampling", "fixed") == "fresh":
        return f"a fresh batch of {datamodule.batch_size} every step, {span}"
    return f"{getattr(datamodule, 'n_train', '?')} training sequences of {span}"


def fit_header(
    run_dir: str,
    resumed_step: int | None,
    system,
    datamodule,
    trainer,
    wandb: str,
    notes: list[str] | tuple[str, ...] = (),
    seeds: dict | None = None,
    compile_choice: str = "off",
) -> list[str]:
    """The few lines a fit prints before it trains: where, what, on what, and W&B; then a
    line per setting the fit changed to make it run (``notes``). ``seeds``: the data and
    initialisation seeds (``lit_seq.fit.seeds.resolve_seeds``), said after the data;
    ``compile_choice``: its ``--compile``, said with the device as it resolves there."""
    resumed = f" (resuming at step {resumed_step})" if resumed_step is not None else ""
    arch = system.arch_name  # a plug-in backbone's own name, and its class and options
    if getattr(system, "plugin", None) is not None:
        arch += f" = {system.plugin.describe()}"
    lengths = ", ".join(map(str, datamodule.test_lengths))
    n_val, n_test = (getattr(datamodule, k, "?") for k in ("n_val", "n_test"))
    device = trainer.strategy.root_device
    seed_line = [f"seeds: data {seeds['data_seed']}, initial weights {seeds['init_seed']}"]
    seed_line = seed_line if seeds else []
    return [
        f"run folder: {run_dir}{resumed}",
        f"model: {type(system).__name__} / {arch}, {system.num_parameters:,} parameters",
        f"data: {datamodule.name}, {training_data(datamodule)}, {n_val} validation, "
        f"{n_test} per test set at lengths {lengths}",
        *seed_line,
        f"device: {device.type}, precision {trainer.precision}, {trainer.max_steps} steps, "
        f"compile {describe_compile(compile_choice, device)}",
        f"W&B: {wandb}",
        *(f"note: {note}" for note in notes),
    ]


def print_metrics(result: FitResult, console: Console | None = None) -> None:
    """Print ``result`` (what ``metrics.json`` holds) as a table with a header line."""
    console = console or output_console()
    console.print(
        f"{result.task} / {result.arch}: {result.params:,} params, "
        f"{result.steps} steps in {result.train_seconds:.1f} s "
        f"({result.samples_per_second:.0f} samples/s)",
        highlight=False,
        soft_wrap=True,
    )
    table = Table("metric", "value")
    table.columns[1].justify = "right"
    for key, value in sorted(result.metrics.items()):
        table.add_row(key, f"{value:.4g}")
    console.print(table)
    console.print(f"run folder: {result.run_dir}", highlight=False, soft_wrap=True)
