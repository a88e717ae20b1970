"""The fit's command line: LightningCLI with lit_seq's run folder, loggers and checks.

:func:`build_cli` parses and builds data, system and Trainer (what ``python -m lit_seq.fit``
runs); :func:`check_config` parses and builds data and system only, with the same parser and
constructors (what a grid runs on every cell before anything trains).
"""

import shlex
from pathlib import Path
from typing import Literal

import torch
import yaml
from jsonargparse import ArgumentError, DefaultHelpFormatter
from lightning.pytorch import Trainer
from lightning.pytorch.cli import LightningCLI, SaveConfigCallback

from lit_seq.data import SyntheticDataModule
from lit_seq.fit.book import RunBook
from lit_seq.fit.callbacks import AttentionMapLogger, ConfusionMatrixLogger
from lit_seq.fit.checkpoints import AtomicCheckpointIO
from lit_seq.fit.header import options_help
from lit_seq.fit.input_checks import (
    NOT_CONFIG_KEYS,
    batch_notes,
    check_goals,
    check_pairing,
    check_precision,
    check_trainer,
    checked,
    fit_val_interval,
    one_line,
    unknown_key,
    with_config,
)
from lit_seq.fit.keeper import BookKeeper
from lit_seq.fit.phases import now
from lit_seq.fit.progress_bar import ThrottledRichProgressBar
from lit_seq.fit.scoring import RangeEval
from lit_seq.fit.seeds import add_init_seed, initial_weights_rng, resolve_seeds, run_seed
from lit_seq.fit.size_limit import check_size
from lit_seq.fit.target import Target
from lit_seq.fit.wandb_logger import GuardedWandbLogger
from lit_seq.fit.wandb_modes import resolve_wandb_mode
from lit_seq.fit.wandb_options import WandbOptions
from lit_seq.systems import SequenceSystem
from lit_seq.systems.compiled import CompileChoice
from lit_seq.util.assets import shipped_name
from lit_seq.util.checks import BadInput, check_int
from lit_seq.util.devices import accelerator_type, default_precision, matmul_precision
from lit_seq.util.environment import fit_environment

CONFIG_FILE = "config.yaml"  # in the run folder: the fit's whole config, what a resume reads


def resume_command(run_dir: Path) -> str:
    """The command that resumes the fit of ``run_dir``, to be pasted as it is: its own config
    (a resume with another config builds another model), its folder, its last checkpoint."""
    config = Path(run_dir) / CONFIG_FILE
    args = ["--config", str(config), "--run_dir", str(run_dir), "--ckpt_path", "last"]
    return shlex.join(["python", "-m", "lit_seq.fit", *args])


class SaveAndLogConfig(SaveConfigCallback):
    """Writes ``config.yaml`` to the run folder and sends the resolved config to W&B too,
    with the machine and software of the run (``environment``, as in its record)."""

    def save_config(self, trainer: Trainer, pl_module, stage: str) -> None:
        for logger in trainer.loggers:
            if isinstance(logger, GuardedWandbLogger):
                _log_config(logger, self.config, pl_module, trainer)


def save_member_config(cli: "LitSeqCLI", trainer: Trainer) -> None:
    """What :class:`SaveAndLogConfig` does, for a fit trained by ``trainer``, another's (a
    population member's: the population's)."""
    path = cli.book.run_dir / CONFIG_FILE
    # the text SaveConfigCallback writes; its check of the config again, which the parse
    # made, left out (a third of the time, K times over in a population)
    cli.parser.save(
        cli.config, str(path), skip_unset=False, overwrite=True, multifile=False,
        skip_validation=True,
    )  # fmt: skip
    if cli.book.wandb is not None:
        _log_config(cli.book.wandb, cli.config, cli.model, trainer)
    # and what Lightning logs as a Trainer starts: the model's and the data's arguments
    hparams = {**cli.model.hparams_initial, **cli.datamodule.hparams_initial}
    for logger in cli.book.loggers:
        logger.log_hyperparams(hparams)
        logger.save()


def _log_config(logger: GuardedWandbLogger, config, model, trainer: Trainer) -> None:
    environment = fit_environment(trainer.strategy.root_device, trainer.precision)
    logger.update_config({"cli": resolved_config(config, model), "environment": environment})


def resolved_config(config, model: SequenceSystem) -> dict:
    """The parsed ``config`` as a dict, with the model's arguments as the model was built.

    The parsed config keeps the parse-time defaults of the fields linked from the data
    (``out_features`` 1, ``max_len`` 512 where the model has 3 and 256): those are replaced
    by the system's own hyperparameters, so no value contradicts another. The config files
    are named as a record names its base config (``configs/echo/rnn.yaml`` for a shipped one,
    ``lit_seq.util.assets.shipped_name``), not by this machine's path to the checkout.
    """
    content = config.clone().as_dict()
    if content.get("config"):
        content["config"] = [shipped_name(str(path)) for path in content["config"]]
    hparams = {k: v for k, v in model.hparams.items() if not k.startswith("_")}
    content["model"] = {"class_path": content["model"]["class_path"], "init_args": hparams}
    return content


# Building LightningCLI's parser reads the signature of every class it can build (most of a
# second of CPU); parsing with it takes milliseconds. A process that builds many fits (a
# population's members, a grid checking its cells) builds one parser per kind of CLI and
# reuses it: a parser keeps no state of a parse.
_PARSERS: dict[tuple, object] = {}


class LitSeqCLI(LightningCLI):
    """LightningCLI with lit_seq's options, checks and data -> model links; the run's
    bookkeeping (folder, loggers, checkpoints, target, signals) is its ``book``."""

    def setup_parser(self, add_subcommands: bool, main_kwargs: dict, subparser_kwargs: dict):
        key = (type(self), add_subcommands, repr(main_kwargs), repr(subparser_kwargs))
        if key in _PARSERS:
            self.parser = _PARSERS[key]
            return
        super().setup_parser(add_subcommands, main_kwargs, subparser_kwargs)
        _PARSERS[key] = self.parser

    def _dump_config(self) -> None:
        """LightningCLI's ``config_dump`` (the config as plain values: what it saves as the
        model's and the data's hyperparameters), made without checking the parsed config
        once more (the parse checked it) and read back with libyaml where there is one:
        the same values (every shipped config: tests/test_cli_dump.py) in a third of the
        time, paid by every fit and K times by a population."""
        if hasattr(self, "config_dump"):
            return
        text = self.parser.dump(
            self.config, skip_link_targets=False, skip_unset=False, format="yaml",
            skip_validation=True,
        )  # fmt: skip
        self.config_dump = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        if "subcommand" in self.config:
            self.config_dump = self.config_dump[self.config.subcommand]

    def add_arguments_to_parser(self, parser) -> None:
        parser.add_argument(
            "--run_dir",
            type=str | None,
            default=None,
            help="Run folder (default: runs/<task>-<arch>-<time>). Must not hold a finished "
            "run unless resuming.",
        )
        parser.add_argument(
            "--ckpt_path",
            type=str | None,
            default=None,
            help="Resume training: 'last' (the run folder's last checkpoint) or a file.",
        )
        parser.add_argument(
            "--checkpoint_every",
            type=int,
            default=50,
            help="Save checkpoints/last.ckpt every this many optimizer steps (and on an "
            "error), so that an interrupted fit resumes from near where it stopped.",
        )
        parser.add_class_arguments(WandbOptions, "wandb", instantiate=False)
        add_init_seed(parser)
        parser.add_argument(
            "--score_weights",
            type=Literal["best", "last"],
            default="best",
            help="The weights the test sets, validation scores and range evaluation score: "
            "best (the lowest val/loss checkpoint) or last (the final parameters, as Delétang "
            "et al. 2023). The record says which (score_weights).",
        )
        parser.add_argument(
            "--scoring",
            type=Literal["full", "selection"],
            default="full",
            help="What the scored weights are scored on: full (every test set and the range "
            "evaluation) or selection (the validation scores and the test set at the training "
            "length only: what a grid's learning-rate selection run is read for; the grid "
            "driver sets it). The record says which (scoring).",
        )
        parser.add_argument(
            "--compile",
            type=CompileChoice,
            default="auto",
            help="Run the training step (the network's forward, the loss and their backward) "
            "through torch.compile: on, off, or auto = on a GPU only (CUDA graphs, "
            "mode reduce-overhead); on a CPU the default mode, measured 0.6-1.7x eager there "
            "(docs/performance.md). The first step of a new shape compiles (1-5 min on 2 CPU "
            "cores). The header and config.yaml say which.",
        )
        parser.add_class_arguments(Target, "target", instantiate=False)
        parser.add_class_arguments(RangeEval, "range_eval", instantiate=False)
        # the task decides the sizes; the model never has to be told them by hand
        for key in ("in_features", "out_features"):
            parser.link_arguments(f"data.{key}", f"model.init_args.{key}", apply_on="instantiate")
        # max_len only defaults to the data's: a link replaces its target, and one given
        # (room for longer evaluations later) must be kept, so the link fills its own field
        parser.link_arguments(
            "data.max_len", "model.init_args.data_max_len", apply_on="instantiate"
        )

    def parse_arguments(self, parser, args) -> None:
        """Parse, then refuse what Lightning would take (or trip over) before it seeds."""
        try:
            super().parse_arguments(parser, args)
        except ArgumentError as err:  # a misspelt section is said with the sections there are
            keys = sorted({a.dest.split(".")[0] for a in parser._actions} - NOT_CONFIG_KEYS)
            raise BadInput(unknown_key(str(err), keys) or one_line(err)) from None
        seed = self.config.seed_everything
        if not isinstance(seed, bool):  # true: Lightning picks a seed
            checked(lambda: check_int("seed_everything", seed, 0, maximum=2**32 - 1))
        if (init_seed := self.config.init_seed) is not None:
            checked(lambda: check_int("init_seed", init_seed, 0, maximum=2**32 - 1))
        checked(lambda: check_trainer(self.config.trainer))
        # what the fit changes to make a setting run, each said in the header (print_header)
        self.notes = [note] if (note := fit_val_interval(self.config.trainer)) else []
        checked(lambda: check_int("checkpoint_every", self.config.checkpoint_every, 1))
        self.wandb = WandbOptions(**self.config.wandb)
        checked(self.wandb.check)

    def before_instantiate_classes(self) -> None:
        self.wandb_mode = resolve_wandb_mode(self.wandb.mode)

    def instantiate_classes(self) -> None:
        """Data, system and Trainer, the system's initial weights drawn from ``--init_seed``
        and the data from ``--data.seed``, each the run's seed where unset (``fit.seeds``);
        a model over the size limit refused first (counted on the meta device: nothing is
        allocated and no random number drawn)."""
        check_size(self.parser, self.config)
        with initial_weights_rng(self.config.init_seed, run_seed(self.config)):
            super().instantiate_classes()
        self.model.compile_choice = self.config.compile  # resolved on the fit's device

    def open_book(self) -> None:
        """Check the built data and system, then open the run's book (claims its folder)."""
        # data and system are built by now: only a good configuration gets a run folder
        self.seeds = resolve_seeds(self.config, self.datamodule)
        check_pairing(self.datamodule, self.model)
        checked(lambda: check_precision(self.config.trainer))
        self.notes += batch_notes(self.datamodule)
        self.book = RunBook.open(
            self.config, self.datamodule, self.model, self.wandb_mode, self.wandb, self.seeds
        )

    def instantiate_trainer(self, **kwargs) -> Trainer:
        self.open_book()
        try:
            return self._build_trainer(**kwargs)
        except BaseException:
            self.book.lock.release()  # nothing will run here: the folder is free again
            raise

    def _build_trainer(self, **kwargs) -> Trainer:
        """Lightning's Trainer with the book's loggers and keeper, plots and atomic writes."""
        trainer_config = self.config_init.get("trainer") or {}
        plugins = trainer_config.get("plugins") or []
        self.keeper = BookKeeper(self.book)  # the book's one adapter to Lightning
        callbacks = [*(trainer_config.get("callbacks") or []), self.keeper]
        callbacks += [ConfusionMatrixLogger(), AttentionMapLogger()]
        if trainer_config.get("enable_progress_bar") is not False:  # None means the default: on
            callbacks.append(ThrottledRichProgressBar())
        return super().instantiate_trainer(
            default_root_dir=str(self.book.run_dir),
            logger=self.book.loggers,
            callbacks=callbacks,
            plugins=[*(plugins if isinstance(plugins, list) else [plugins]), AtomicCheckpointIO()],
            **kwargs,
        )


class CheckCLI(LitSeqCLI):
    """Parses and builds data and system exactly as a fit does; no run folder, no Trainer."""

    def instantiate_trainer(self, **kwargs) -> None:
        self.seeds = resolve_seeds(self.config, self.datamodule)
        check_pairing(self.datamodule, self.model)
        check_goals(self.config, self.model)


class _HelpFormatter(DefaultHelpFormatter):
    """jsonargparse's help, with the description (lit_seq's options) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + line for line in text.splitlines(keepends=True))


def _make_cli(cli_class: type[LitSeqCLI], args: list[str]) -> LitSeqCLI:
    device_type = accelerator_type()  # where accelerator "auto" trains
    try:
        return cli_class(
            model_class=SequenceSystem,
            datamodule_class=SyntheticDataModule,
            subclass_mode_model=True,
            subclass_mode_data=True,
            seed_everything_default=0,
            trainer_defaults={
                "accelerator": "auto",
                "devices": 1,
                "precision": default_precision(device_type),
                # the header says the parameters in one line; the table is one flag away
                "enable_model_summary": False,
            },
            save_config_callback=SaveAndLogConfig,
            save_config_kwargs={
                "config_filename": CONFIG_FILE,
                "overwrite": True,
                "save_to_log_dir": True,
            },
            parser_kwargs={
                "exit_on_error": False,
                "prog": "python -m lit_seq.fit",
                "usage": "python -m lit_seq.fit [--config FILE ...] [--SECTION.KEY VALUE ...]",
                "description": options_help(),
                "formatter_class": _HelpFormatter,
            },
            auto_configure_optimizers=False,  # the systems configure their own
            run=False,
            args=args,
        )
    except BadInput:
        raise
    except (ArgumentError, ValueError) as err:
        raise BadInput(one_line(err)) from None


def build_cli(args: list[str] | None = None, kind: type[LitSeqCLI] = LitSeqCLI) -> LitSeqCLI:
    """Parse ``args`` and instantiate data, model and trainer; raise BadInput on bad input.

    ``kind``: a subclass that builds otherwise (a population's member: no Trainer)."""
    started = now()  # the build phase starts here, before the run's book (and clock) exist
    if matmul := matmul_precision(accelerator_type()):
        torch.set_float32_matmul_precision(matmul)
    cli = _make_cli(kind, with_config(args))
    cli.book.phases.enter("build", at=started)
    return cli


def check_config(args: list[str]) -> CheckCLI:
    """What the fit arguments ``args`` build; BadInput if they do not.

    The result holds ``datamodule``, ``model`` (the system) and the parsed ``config``.
    The same parser, links and constructors as :func:`build_cli`, so a grid that checks each
    of its cells with this refuses, before anything trains, whatever a fit would refuse
    (cross-field rules included: ``d_model`` and ``n_heads``, a ``cls`` readout on a
    forward-only RNN), in the same words. No run folder, no Trainer, no data generated.
    """
    return _make_cli(CheckCLI, with_config(args))
