"""Train one configuration, test it, and write ``metrics.json``.

    python -m lit_seq.fit --config configs/signal/transformer.yaml [--key value ...]

LightningCLI conventions apply: ``--help``, ``--print_config``, several ``--config``s,
dotted overrides such as ``--model.arch lstm`` or ``--trainer.max_steps 500``. With no
``--config`` the default configuration (signal / transformer) is trained. The run folder
holds the checkpoints (best and last), ``metrics.csv``, the offline W&B run and
``metrics.json``; an interrupted fit resumes with ``--run_dir DIR --ckpt_path last``.
"""

import logging
import re
import sys
import warnings
from datetime import datetime
from pathlib import Path

import torch
from jsonargparse import ArgumentError
from lightning.pytorch import Trainer
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.cli import LightningCLI, SaveConfigCallback
from lightning.pytorch.loggers import CSVLogger, WandbLogger

from lit_seq.callbacks import AttentionMapLogger, ConfusionMatrixLogger, TrainTimer
from lit_seq.data import TASKS, SyntheticDataModule
from lit_seq.io import atomic_write_json
from lit_seq.progress_bar import ThrottledRichProgressBar
from lit_seq.summary import print_metrics
from lit_seq.systems import SequenceSystem
from lit_seq.tracking import WANDB_MODES, resolve_wandb_mode, wandb_run_path

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
DEFAULT_CONFIG = CONFIG_DIR / "signal" / "transformer.yaml"
METRICS_FILE = "metrics.json"

# main() hands sys.argv over as ``args``, which is exactly what this warning is about
warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
# "Seed set to 0" on every run is noise; the seed is in the saved config
logging.getLogger("lightning.fabric.utilities.seed").setLevel(logging.WARNING)


class BadInput(ValueError):
    """A configuration problem found before training; shown as one line, no traceback."""


class SaveAndLogConfig(SaveConfigCallback):
    """Writes ``config.yaml`` to the run folder and sends the full config to W&B too."""

    def save_config(self, trainer: Trainer, pl_module, stage: str) -> None:
        config = self.config.clone().as_dict()
        for logger in trainer.loggers:
            if isinstance(logger, WandbLogger):
                logger.experiment.config.update({"cli": config}, allow_val_change=True)


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
        # the task decides the sizes; the model never has to be told them by hand
        for key in ("in_features", "out_features", "max_len"):
            parser.link_arguments(f"data.{key}", f"model.init_args.{key}", apply_on="instantiate")

    def before_instantiate_classes(self) -> None:
        config = self.config
        self.wandb_mode = _checked(lambda: resolve_wandb_mode(config.wandb))
        self.run_dir = _prepare_run_dir(config)

    def instantiate_trainer(self, **kwargs) -> Trainer:
        config = self.config
        trainer_config = self._get(self.config_init, "trainer", default={})
        checkpoint = ModelCheckpoint(
            dirpath=self.run_dir / "checkpoints",
            filename="best-{step}",
            monitor="val/loss",
            mode="min",
            save_last=True,
        )
        callbacks = list(trainer_config.get("callbacks") or [])
        callbacks += [checkpoint, TrainTimer(), ConfusionMatrixLogger(), AttentionMapLogger()]
        if trainer_config.get("enable_progress_bar") is not False:  # None means the default: on
            callbacks.append(ThrottledRichProgressBar())
        loggers = [CSVLogger(self.run_dir, name="", version="")]
        if self.wandb_mode != "off":
            loggers.append(
                WandbLogger(
                    project=config.wandb_project,
                    name=self.run_dir.name,
                    save_dir=str(self.run_dir),
                    offline=self.wandb_mode == "offline",
                    group=config.wandb_group,
                    tags=list(config.wandb_tags),
                )
            )
        return super().instantiate_trainer(
            default_root_dir=str(self.run_dir), logger=loggers, callbacks=callbacks, **kwargs
        )


def _checked(fn):
    try:
        return fn()
    except ValueError as err:
        raise BadInput(str(err)) from None


def _task_name(datamodule_class_path: str) -> str:
    for name, cls in TASKS.items():
        if datamodule_class_path.endswith(cls.__name__):
            return name
    return datamodule_class_path.rsplit(".", 1)[-1]


def _prepare_run_dir(config) -> Path:
    """Pick the run folder and make sure it is writable and safe to use."""
    if config.run_dir:
        run_dir = Path(config.run_dir)
    else:
        task = _task_name(config.data.class_path)
        arch = config.model.init_args.get("arch", "model")
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        run_dir = Path("runs") / f"{task}-{arch}-{stamp}"
    if (run_dir / METRICS_FILE).exists() and not config.ckpt_path:
        raise BadInput(
            f"run_dir={str(run_dir)!r} already holds a finished run; choose another run_dir "
            "(nothing was overwritten)"
        )
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        probe = run_dir / ".write_probe"
        probe.touch()
        probe.unlink()
    except OSError as err:
        raise BadInput(f"run_dir={str(run_dir)!r} is not writable: {err.strerror}") from None
    return run_dir


def build_cli(args: list[str] | None = None) -> LitSeqCLI:
    """Parse ``args`` and instantiate data, model and trainer; raise BadInput on bad input."""
    args = list(sys.argv[1:] if args is None else args)
    if not any(a == "--config" or a.startswith("--config=") for a in args) and not any(
        a in ("-h", "--help") for a in args
    ):
        args = ["--config", str(DEFAULT_CONFIG), *args]
    accelerated = torch.cuda.is_available()
    if accelerated:
        torch.set_float32_matmul_precision("high")
    try:
        return LitSeqCLI(
            model_class=SequenceSystem,
            datamodule_class=SyntheticDataModule,
            subclass_mode_model=True,
            subclass_mode_data=True,
            seed_everything_default=0,
            trainer_defaults={
                "accelerator": "auto",
                "devices": 1,
                "precision": "bf16-mixed" if accelerated else "32-true",
            },
            save_config_callback=SaveAndLogConfig,
            save_config_kwargs={"overwrite": True, "save_to_log_dir": True},
            parser_kwargs={"exit_on_error": False},
            run=False,
            args=args,
        )
    except (ArgumentError, ValueError) as err:
        raise BadInput(_one_line(err)) from None


def _inner(error: BaseException) -> BaseException | None:
    if error.__cause__ is not None or error.__suppress_context__:
        return error.__cause__
    return error.__context__


def _one_line(error: BaseException) -> str:
    """The root cause of a (jsonargparse-wrapped) error as one line, prefixed by its field."""
    chain = [error]
    while (inner := _inner(chain[-1])) is not None:
        chain.append(inner)
    root = " ".join(str(chain[-1]).split())
    # jsonargparse names the nested keys it was parsing: 'Parser key "data": ... "length"'
    keys = re.findall(r'Parser key "([^"]+)"', str(error))
    field = ".".join(dict.fromkeys(keys))
    if field and field not in root:
        return f"{field}: {root}"
    return root


def run(cli: LitSeqCLI) -> dict:
    """Fit, test on the best checkpoint (all test sets), write and return the metrics."""
    try:
        return _fit_and_test(cli)
    finally:
        # also after a failure, so a later run in this process never logs into this one
        _finish_wandb(cli.trainer)


def _fit_and_test(cli: LitSeqCLI) -> dict:
    trainer, model, datamodule = cli.trainer, cli.model, cli.datamodule
    trainer.fit(model, datamodule=datamodule, ckpt_path=cli.config.ckpt_path)
    timer = next(c for c in trainer.callbacks if isinstance(c, TrainTimer))
    best = trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else ""
    tested = trainer.test(model, datamodule=datamodule, ckpt_path=best or None, verbose=False)
    metrics = {k: float(v) for result in tested for k, v in result.items()}
    wandb_run = ""
    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger):
            wandb_run = wandb_run_path(logger.experiment)
    record = {
        "task": _task_name(cli.config.data.class_path),
        "arch": model.hparams.arch,
        "system": type(model).__name__,
        "main_metric": model.main_metric,
        "params": model.num_parameters,
        "steps": trainer.global_step,
        "train_seconds": round(timer.seconds, 3),
        "samples_per_second": round(
            timer.steps * datamodule.batch_size / max(timer.seconds, 1e-9), 1
        ),
        "best_checkpoint": best,
        "last_checkpoint": str(Path(cli.run_dir) / "checkpoints" / "last.ckpt"),
        "run_dir": str(cli.run_dir),
        "wandb_run": wandb_run,
        "metrics": metrics,
    }
    atomic_write_json(Path(cli.run_dir) / METRICS_FILE, record)
    return record


def _finish_wandb(trainer: Trainer) -> None:
    """Close the W&B run so the next run in this process never merges into it."""
    for logger in trainer.loggers:
        if isinstance(logger, WandbLogger) and logger._experiment is not None:
            logger.experiment.finish()


def cli_main(args: list[str] | None = None) -> dict:
    """Build from ``args`` and run; what tests and the grid workers call in-process."""
    return run(build_cli(args))


def main() -> None:
    try:
        cli = build_cli()
    except BadInput as err:
        print(f"lit_seq.fit: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    record = run(cli)
    print_metrics(record)


if __name__ == "__main__":
    main()
