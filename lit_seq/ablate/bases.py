"""The base config of a grid cell that names a task and an arch with no config of its own.

A block with ``task`` and ``arch`` axes trains ``configs/<task>/<arch>.yaml``. Every task ships
rnn, lstm and transformer configs; the other backbones run on a task through a declared base,
the config of the same family for that task, with only the backbone changed (as
``ablations/mixers.yaml`` runs the mixers at the transformer's config)::

    axes: {task: [echo], arch: [lstm, mamba]}
    # lstm  -> configs/echo/lstm.yaml
    # mamba -> configs/echo/transformer.yaml with --model.init_args.arch=mamba

A shipped config always wins, so the cells of every grid written before keep their runs and
digests. A plug-in (an ``arch`` value that is an import path, ``examples.plugins.GRUBackbone``)
takes the task's lstm config and replaces its backbone (``model.init_args.backbone``, the
system's ``arch`` back at its default). A
combination no base fits (a mixer on the seq2seq task, whose system builds encoder-decoders of
its own) is refused in one line naming the ``config:`` to give instead.
"""

import importlib
import inspect
from functools import cache

from lit_seq.ablate.common import BadGrid
from lit_seq.models import BACKBONES, MEMORY_RNNS, MIXERS, SEQ2SEQ
from lit_seq.util.assets import config_file
from lit_seq.util.safe_yaml import load_yaml

# family -> the shipped configs its backbones run at, first found wins: the mixers are
# parallel sequence mixers, stacked and scheduled as the transformer is; the memory RNNs
# are a recurrent cell with memory, an rnn's budget and width (as configs/deletang/ has them)
FAMILY_BASES = {
    **{arch: ("transformer", "lstm") for arch in MIXERS},
    **{arch: ("rnn", "lstm") for arch in MEMORY_RNNS},
}
PLUGIN_BASES = ("lstm",)  # a plug-in backbone: a recurrent stack's budget and width
PLUGIN_KEY = "model.init_args.backbone"  # where a plug-in's import path goes


def shipped(task: str, arch: str) -> str:
    """The config a cell of ``task`` and ``arch`` trains when the task ships one."""
    return f"configs/{task}/{arch}.yaml"


def base_config(task: str, arch: str, where: str) -> tuple[str, dict]:
    """The base config of the cell (``task``, ``arch``) and the settings it adds on top of it
    (the backbone to use instead of the base's): ``configs/<task>/<arch>.yaml`` and none
    where it exists, else the family's base. BadGrid in one line where no base fits."""
    own = shipped(task, arch)
    if config_file(own).is_file():
        return own, {}
    plugin = "." in arch  # an import path: a plug-in backbone (docs/plugins.md)
    if not plugin and arch not in BACKBONES:
        raise BadGrid(
            f"{where}: arch={arch!r} is not one of {list(BACKBONES)} nor a plug-in's import path"
        )
    order = PLUGIN_BASES if plugin else FAMILY_BASES.get(arch, ())
    found = next((shipped(task, b) for b in order if config_file(shipped(task, b)).is_file()), None)
    if found is None:
        raise BadGrid(
            f"{where}: arch={arch!r} has no config for task={task!r} ({own} does not exist) "
            f"and no base fits; give the block a config: (a YAML file that trains {arch} on "
            f"{task})"
        )
    if _is_seq2seq(found):
        raise BadGrid(
            f"{where}: arch={arch!r} cannot train task={task!r}: its system builds "
            f"encoder-decoders of its own ({', '.join(SEQ2SEQ)}); give the block a config: "
            f"of your own for it, or one of those archs"
        )
    if plugin:  # the system's arch back at its default: a backbone replaces it, not both
        return found, {"arch": _default_arch(), PLUGIN_KEY: arch}
    return found, {"arch": arch}


def _default_arch() -> str:
    """The system's ``arch`` default, which it reads as "no built-in arch chosen"."""
    from lit_seq.systems import SequenceSystem

    return inspect.signature(SequenceSystem.__init__).parameters["arch"].default


@cache
def _is_seq2seq(config: str) -> bool:
    """True if the system of ``config`` trains seq2seq tasks (it takes no backbone)."""
    path = config_file(config)
    content = load_yaml(path.read_text(), path.name) or {}
    class_path = str((content.get("model") or {}).get("class_path", ""))
    module, _, name = class_path.rpartition(".")
    try:
        system = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError):
        return False  # the cell check builds it, and says what is wrong in its own words
    return getattr(system, "task_kind", "") == "seq2seq"
