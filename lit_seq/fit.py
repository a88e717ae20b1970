"""Train one configuration, test it, and write ``metrics.json``.

    python -m lit_seq.fit --config configs/signal/transformer.yaml [--key value ...]

LightningCLI conventions apply: ``--help``, ``--print_config``, several ``--config``s,
dotted overrides such as ``--model.arch lstm`` or ``--trainer.max_steps 500``. With no
``--config`` the default configuration (signal / transformer) is trained. The run folder
holds the checkpoints (best and last), ``metrics.csv``, the offline W&B run and
``metrics.json``; an interrupted fit resumes with ``--run_dir DIR --ckpt_path last``, exactly
where it stopped: same data order, same RNG, same metrics as a fit never interrupted.

One run folder, one fit: a fit locks its folder for its whole life. SIGTERM (a preempted
job) or SIGINT stop a fit at a step boundary with ``last.ckpt`` saved there and exit status
143 or 130, with no ``metrics.json``; a resume finishes it.
"""

import errno
import logging
import sys
import warnings
from pathlib import Path

import torch
from jsonargparse import ArgumentError, DefaultHelpFormatter
from lightning.pytorch import Trainer
from lightning.pytorch.cli import LightningCLI, SaveConfigCallback

from lit_seq.assets import DEFAULT_CONFIG, find_file
from lit_seq.callbacks import AttentionMapLogger, ConfusionMatrixLogger, TrainTimer
from lit_seq.checkpoints import (
    CHECKPOINTS,
    LAST,
    AtomicCheckpointIO,
    EarlyLast,
    ResumeState,
    RunCheckpoint,
    discard_partial_writes,
)
from lit_seq.checks import BadInput, check_int
from lit_seq.cli_errors import one_line
from lit_seq.csv_log import RunCSVLogger
from lit_seq.data import SyntheticDataModule
from lit_seq.evaluation import RangeEval, length_curve, past_training_means, validation_scores
from lit_seq.progress_bar import ThrottledRichProgressBar
from lit_seq.record import FitResult, diverged_loss
from lit_seq.run_folder import (
    check_not_in_use,
    check_run,
    lock_run_dir,
    run_dir_path,
    wandb_run_id,
)
from lit_seq.runtime import disk_full
from lit_seq.safe_yaml import YamlError, load_yaml
from lit_seq.stop_on_signal import FitInterrupted, StopOnSignal
from lit_seq.summary import fit_header, options_help, print_metrics
from lit_seq.systems import SYSTEMS, SequenceSystem
from lit_seq.target import StopAtTarget, Target, check_target
from lit_seq.tracking import WANDB_MODES, WANDB_TAG_LIMIT, resolve_wandb_mode
from lit_seq.trainer_checks import check_trainer
from lit_seq.wandb_logger import GuardedWandbLogger, start_wandb_logger

# main() hands sys.argv over as ``args``, which is exactly what this warning is about
warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
# "Seed set to 0" on every run is noise; the seed is in the saved config
logging.getLogger("lightning.fabric.utilities.seed").setLevel(logging.WARNING)
# Lightning's info lines (GPU/TPU available, tips and adverts, "Restoring states from ..."):
# the header of a fit says what matters (fit_header), in five lines
logging.getLogger("lightning.pytorch.utilities.rank_zero").setLevel(logging.WARNING)
# the CSV log continues its file on a resume and a new folder holds only the lock: nothing
# is ever deleted, whatever this says
warnings.filterwarnings("ignore", message=".*Previous log files in this directory will be")
# lit_seq logs on exactly the steps that get written (SequenceSystem._written_this_step)
warnings.filterwarnings("ignore", message=".*is smaller than the logging interval")
# a deprecation inside Lightning itself (its _pytree), nothing a user can change
warnings.filterwarnings("ignore", message=".*isinstance\\(treespec, LeafSpec\\)")


class SaveAndLogConfig(SaveConfigCallback):
    """Writes ``config.yaml`` to the run folder and sends the resolved config to W&B too."""

    def save_config(self, trainer: Trainer, pl_module, stage: str) -> None:
        for logger in trainer.loggers:
            if isinstance(logger, GuardedWandbLogger):
                logger.update_config({"cli": resolved_config(self.config, pl_module)})


def resolved_config(config, model: SequenceSystem) -> dict:
    """The parsed ``config`` as a dict, with the model's arguments as the model was built.

    The parsed config keeps the parse-time defaults of the fields linked from the data
    (``out_features`` 1, ``max_len`` 512 where the model has 3 and 256): those are replaced
    by the system's own hyperparameters, so no value contradicts another.
    """
    content = config.clone().as_dict()
    hparams = {k: v for k, v in model.hparams.items() if not k.startswith("_")}
    content["model"] = {"class_path": content["model"]["class_path"], "init_args": hparams}
    return content


class LitSeqCLI(LightningCLI):
    """LightningCLI with lit_seq's run folder, loggers, checkpoints and data -> model links."""

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
            "--wandb",
            type=str,
            default="auto",
            help=f"Weights & Biases: one of {list(WANDB_MODES)}; auto = online when an API "
            "key is configured, else offline run files (upload later with `wandb sync`).",
        )
        parser.add_argument("--wandb_project", type=str, default="lit_seq", help="W&B project.")
        parser.add_argument("--wandb_group", type=str | None, default=None, help="W&B group.")
        parser.add_argument("--wandb_tags", type=list[str], default=[], help="W&B run tags.")
        parser.add_argument(
            "--wandb_save_requirements",
            type=bool,
            default=False,
            help="Let W&B record the installed packages with the run (slower start).",
        )
        parser.add_argument(
            "--wandb_config",
            type=dict,
            default={},
            help="Extra keys of the W&B run's config, as JSON (a grid gives each of its runs "
            "grid, block, cell, seed, run_id and one key per axis).",
        )
        parser.add_argument(
            "--wandb_log_model",
            type=bool,
            default=False,
            help="Upload the best and last checkpoints to W&B as model artifacts after the fit.",
        )
        parser.add_argument(
            "--checkpoint_every",
            type=int,
            default=50,
            help="Save checkpoints/last.ckpt every this many optimizer steps (and on an "
            "error), so that an interrupted fit resumes from near where it stopped.",
        )
        parser.add_class_arguments(Target, "target", instantiate=False)
        parser.add_class_arguments(RangeEval, "range_eval", instantiate=False)
        # the task decides the sizes; the model never has to be told them by hand
        for key in ("in_features", "out_features", "max_len"):
            parser.link_arguments(f"data.{key}", f"model.init_args.{key}", apply_on="instantiate")

    def parse_arguments(self, parser, args) -> None:
        """Parse, then refuse what Lightning would take (or trip over) before it seeds."""
        super().parse_arguments(parser, args)
        seed = self.config.seed_everything
        if not isinstance(seed, bool):  # true: Lightning picks a seed
            _checked(lambda: check_int("seed_everything", seed, 0, 2**32 - 1))
        _checked(lambda: check_trainer(self.config.trainer))
        _checked(lambda: check_int("checkpoint_every", self.config.checkpoint_every, 1))
        if long := [t for t in self.config.wandb_tags if len(t) > WANDB_TAG_LIMIT]:
            raise BadInput(
                f"wandb_tags: {long[0]!r} is {len(long[0])} characters; W&B takes at most "
                f"{WANDB_TAG_LIMIT}"
            )

    def before_instantiate_classes(self) -> None:
        self.wandb_mode = _checked(lambda: resolve_wandb_mode(self.config.wandb))

    def instantiate_trainer(self, **kwargs) -> Trainer:
        # data and system are built by now: only a good configuration gets a run folder
        check_pairing(self.datamodule, self.model)
        self.target, self.range_eval = check_goals(self.config, self.model)
        self.run_dir = run_dir_path(self.config, self.datamodule.name)
        check_not_in_use(self.run_dir)  # this check and the next read only: a refusal
        check_run(self.config, self.run_dir, self.model)  # changes nothing in the folder
        # one run folder, one fit: held until run() ends (or this process does, kill -9 too)
        self.run_lock = lock_run_dir(self.run_dir)
        try:
            # again, now that no other fit can change the folder
            self.resume = check_run(self.config, self.run_dir, self.model, announce=True)
            discard_partial_writes(self.run_dir)
            trainer_config = self.config_init.get("trainer") or {}
            plugins = trainer_config.get("plugins") or []
            return super().instantiate_trainer(
                default_root_dir=str(self.run_dir),
                logger=self._loggers(),
                callbacks=self._callbacks(trainer_config),
                plugins=[
                    *(plugins if isinstance(plugins, list) else [plugins]),
                    AtomicCheckpointIO(),
                ],
                **kwargs,
            )
        except BaseException:
            self.run_lock.close()  # nothing will run here: the folder is free again
            raise

    def _callbacks(self, trainer_config: dict) -> list:
        """The config's own callbacks, then checkpoints, timer, plots and the progress bar."""
        folder = self.run_dir / CHECKPOINTS
        checkpoint = RunCheckpoint(
            dirpath=folder,
            filename="best-{step}",
            monitor="val/loss",
            mode="min",
            save_last=True,
            enable_version_counter=False,  # one last.ckpt, never a last-v1.ckpt beside it
        )
        # after the ModelCheckpoint: at a validation step it stops once that one has saved
        self.stop_on_signal = StopOnSignal(folder / LAST)
        early = EarlyLast(folder / LAST, self.config.checkpoint_every)
        callbacks = list(trainer_config.get("callbacks") or [])
        callbacks += [checkpoint, early, self.stop_on_signal, ResumeState(), TrainTimer()]
        if self.target.metric is not None:
            callbacks.append(StopAtTarget(self.target))
        callbacks += [ConfusionMatrixLogger(), AttentionMapLogger()]
        if trainer_config.get("enable_progress_bar") is not False:  # None means the default: on
            callbacks.append(ThrottledRichProgressBar())
        return callbacks

    def _loggers(self) -> list:
        """CSV always; W&B unless off, and only if it starts (else ``wandb_error`` says why).

        A resume continues the W&B run of the fit it resumes (its id is in the run folder).
        """
        loggers = [RunCSVLogger(self.run_dir, self.resume.step if self.resume else None)]
        self.wandb_error = ""
        if self.wandb_mode != "off":
            wandb_logger, self.wandb_error = start_wandb_logger(
                self.wandb_mode,
                project=self.config.wandb_project,
                name=self.run_dir.name,
                save_dir=str(self.run_dir),
                id=wandb_run_id(self.run_dir, resuming=self.resume is not None),
                job_type="train",
                group=self.config.wandb_group,
                tags=list(self.config.wandb_tags),
                config=dict(self.config.wandb_config),
                log_model=self.config.wandb_log_model,
                save_requirements=self.config.wandb_save_requirements,
            )
            if wandb_logger is not None:  # known now, before any training: else, without W&B
                metrics = self.model.build_metrics().items()
                best = {f"val/{k}": bool(m.higher_is_better) for k, m in metrics}
                wandb_logger.define_best({"val/loss": False, **best})
                wandb_logger.update_summary({"params": self.model.num_parameters})
                loggers.append(wandb_logger)
        return loggers


def _checked(fn):
    try:
        return fn()
    except ValueError as err:
        raise BadInput(str(err)) from None


class CheckCLI(LitSeqCLI):
    """Parses and builds data and system exactly as a fit does; no run folder, no Trainer."""

    def instantiate_trainer(self, **kwargs) -> None:
        check_pairing(self.datamodule, self.model)
        check_goals(self.config, self.model)


def check_pairing(datamodule: SyntheticDataModule, model: SequenceSystem) -> None:
    """BadInput unless ``model`` is the kind of system that trains ``datamodule``'s task."""
    if datamodule.task_kind != model.task_kind:
        wanted = SYSTEMS.get(datamodule.task_kind)
        hint = f"; use {wanted.__module__}.{wanted.__name__}" if wanted else ""
        raise BadInput(
            f"model={type(model).__name__} trains {model.task_kind!r} tasks, but task "
            f"{datamodule.name!r} is {datamodule.task_kind!r}{hint}"
        )


def check_goals(config, model: SequenceSystem) -> tuple[Target, RangeEval]:
    """The config's target and range evaluation, checked against ``model``; else BadInput."""
    target, range_eval = Target(**config.target), RangeEval(**config.range_eval)
    check_target(target, ["val/loss", *(f"val/{name}" for name in model.build_metrics())])
    range_eval.check()
    return target, range_eval


def _with_config(args: list[str] | None) -> list[str]:
    """``args`` with the default config when none is given, and shipped configs found.

    ``--config configs/echo/rnn.yaml`` names the file in the working directory if there is
    one, else the config shipped in the package (so the README's commands work anywhere).
    """
    args = list(sys.argv[1:] if args is None else args)
    out, given = [], False
    while args:
        arg = args.pop(0)
        if arg == "--config" or arg.startswith("--config="):
            name = arg.split("=", 1)[1] if "=" in arg else (args.pop(0) if args else "")
            found = find_file(name) if name else None
            if found is not None:
                _check_config_file(found)
            out += ["--config", str(found or name)]
            given = True
        else:
            out.append(arg)
    if not given and not any(a in ("-h", "--help") for a in out):
        out = ["--config", str(DEFAULT_CONFIG), *out]
    return out


def _check_config_file(path: Path) -> None:
    """BadInput unless ``path`` is a YAML mapping of sections of a sane size."""
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


class _HelpFormatter(DefaultHelpFormatter):
    """jsonargparse's help, with the description (lit_seq's options) kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + line for line in text.splitlines(keepends=True))


def _make_cli(cli_class: type[LitSeqCLI], args: list[str]) -> LitSeqCLI:
    accelerated = torch.cuda.is_available()
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
                "precision": "bf16-mixed" if accelerated else "32-true",
                # the header says the parameters in one line; the table is one flag away
                "enable_model_summary": False,
            },
            save_config_callback=SaveAndLogConfig,
            save_config_kwargs={"overwrite": True, "save_to_log_dir": True},
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
    except (ArgumentError, ValueError) as err:
        raise BadInput(one_line(err)) from None


def build_cli(args: list[str] | None = None) -> LitSeqCLI:
    """Parse ``args`` and instantiate data, model and trainer; raise BadInput on bad input."""
    if torch.cuda.is_available():
        torch.set_float32_matmul_precision("high")
    return _make_cli(LitSeqCLI, _with_config(args))


def check_config(args: list[str]) -> CheckCLI:
    """What the fit arguments ``args`` build; BadInput if they do not.

    The result holds ``datamodule``, ``model`` (the system) and the parsed ``config``.
    The same parser, links and constructors as :func:`build_cli`, so a grid that checks each
    of its cells with this refuses, before anything trains, whatever a fit would refuse
    (cross-field rules included: ``d_model`` and ``n_heads``, a ``cls`` readout on a
    forward-only RNN), in the same words. No run folder, no Trainer, no data generated.
    """
    return _make_cli(CheckCLI, _with_config(args))


def run(cli: LitSeqCLI) -> FitResult:
    """Fit, test on the best checkpoint (all test sets), write and return the result.

    FitInterrupted (a SystemExit of status 143 or 130) on SIGTERM or SIGINT, after saving
    ``last.ckpt``; the run folder is unlocked on the way out, however it ends.
    """
    status, exit_code = "failed", 1  # what W&B is told unless the fit gets to its end
    print_header(cli)
    try:
        with cli.stop_on_signal.handling_signals():
            result = _fit_and_test(cli)
        status, exit_code = ("diverged", 1) if diverged_loss(result.metrics) else ("ok", 0)
        return result
    except FitInterrupted as err:
        status, exit_code = "interrupted", err.code
        raise
    except FloatingPointError:  # raised by the system when val/loss is not finite
        status = "diverged"
        raise
    finally:
        # also after a failure, so a later run in this process never logs into this one;
        # with a non-zero exit code, so that W&B shows the run as failed, not finished
        for logger in _wandb_loggers(cli.trainer):
            logger.update_summary(_summary(cli.trainer, status))
            logger.finish(exit_code=exit_code)
        cli.run_lock.close()


def print_header(cli: LitSeqCLI) -> None:
    """What the fit is about to do, in a few lines (see ``fit_header``)."""
    wandb = _wandb_loggers(cli.trainer)
    if wandb:
        path = wandb[0].run_path()  # the offline folder, or entity/project/id online
        offline = cli.wandb_mode == "offline" or cli.wandb_error
        where = f"offline, upload later with: wandb sync {path}" if offline else f"online {path}"
    else:
        where = f"off ({cli.wandb_error})" if cli.wandb_error else "off"
    resumed = cli.resume.step if cli.resume else None
    lines = fit_header(str(cli.run_dir), resumed, cli.model, cli.datamodule, cli.trainer, where)
    print("\n".join(lines), flush=True)


def _summary(trainer: Trainer, status: str) -> dict:
    """What the W&B runs table shows of a fit however it ended: status, steps and speed."""
    timer = next(c for c in trainer.callbacks if isinstance(c, TrainTimer))
    seconds, steps = timer.totals()
    batch_size = getattr(trainer.datamodule, "batch_size", 0)
    return {
        "status": status,
        "steps": trainer.global_step,
        "train_seconds": round(seconds, 3),
        "samples_per_second": round(steps * batch_size / max(seconds, 1e-9), 1),
    }


def _wandb_loggers(trainer: Trainer) -> list[GuardedWandbLogger]:
    return [lg for lg in trainer.loggers if isinstance(lg, GuardedWandbLogger)]


def _fit_and_test(cli: LitSeqCLI) -> FitResult:
    trainer, model, datamodule = cli.trainer, cli.model, cli.datamodule
    resume = str(cli.resume.path) if cli.resume else None
    trainer.fit(model, datamodule=datamodule, ckpt_path=resume, weights_only=True)
    timer = next(c for c in trainer.callbacks if isinstance(c, TrainTimer))
    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    tested = trainer.test(
        model, datamodule=datamodule, ckpt_path=best or None, verbose=False, weights_only=True
    )
    wandb = _wandb_loggers(trainer)
    # the tested weights: their validation scores (what a grid selects on) and length curve
    val_metrics = validation_scores(model, datamodule)
    curve = length_curve(model, datamodule, cli.range_eval)
    stopper = next((c for c in trainer.callbacks if isinstance(c, StopAtTarget)), None)
    reached = stopper.reached if stopper else None
    result = FitResult(
        task=datamodule.name,
        arch=model.arch_name,
        system=type(model).__name__,
        main_metric=model.main_metric,
        params=model.num_parameters,
        train_length=datamodule.train_length,
        steps=trainer.global_step,
        train_seconds=round(timer.seconds, 3),
        samples_per_second=round(timer.steps * datamodule.batch_size / max(timer.seconds, 1e-9), 1),
        best_checkpoint=best,
        last_checkpoint=str(Path(cli.run_dir) / CHECKPOINTS / LAST),
        run_dir=str(cli.run_dir),
        wandb_run=wandb[0].run_path() if wandb else "",
        wandb_error=cli.wandb_error or (wandb[0].error if wandb else ""),
        metrics={k: float(v) for result in tested for k, v in result.items()}
        | past_training_means(curve, datamodule.train_length),
        val_metrics={k: round(v, 6) for k, v in val_metrics.items()},
        target=cli.target.describe(),
        target_reached=None if stopper is None else reached is not None,
        target_step=reached[0] if reached else None,
        target_seconds=reached[1] if reached else None,
        curve=curve,
        chance=model.chance_level,
    )
    result.write(cli.run_dir)
    return result


def cli_main(args: list[str] | None = None) -> FitResult:
    """Build from ``args`` and run; what tests and the grid workers call in-process."""
    return run(build_cli(args))


def main() -> None:
    try:
        cli = build_cli()
    except BadInput as err:
        print(f"lit_seq.fit: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        record = run(cli)
    except FitInterrupted as err:
        hint = (
            f"resume with --run_dir {cli.run_dir} --ckpt_path last"
            if err.resumable
            else "nothing to resume: run it again"
        )
        print(f"lit_seq.fit: {err}; {hint}", file=sys.stderr)
        raise SystemExit(err.code) from None
    except Exception as err:
        # libraries word a full disk their own way: ENOSPC, or a failed write of a full disk
        if getattr(err, "errno", None) != errno.ENOSPC and not disk_full(cli.run_dir):
            raise
        # every file of the run is written atomically: what is there is whole, or absent
        print(
            f"lit_seq.fit: error: the disk holding {cli.run_dir} is full; free space, then "
            f"resume with --run_dir {cli.run_dir} --ckpt_path last",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    print_metrics(record)


if __name__ == "__main__":
    main()
