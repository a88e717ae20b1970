"""Weights & Biases logging that never stops a run: the first failure is kept, W&B goes quiet.

W&B is a view of a run; the run folder and its records are the results. So every call into
wandb that Lightning or lit_seq makes goes through :class:`GuardedWandbLogger`, which turns
an exception (no network, a full disk, a crashed wandb service) into one warning line and a
note in the run's record (``wandb_error``), and makes every later call a no-op. The run is
started eagerly by :func:`start_wandb_logger`, so that a W&B that cannot start is known
before the first training step, not half-way through. Online, ``wandb.init`` waits at most
``WANDB_INIT_TIMEOUT_S`` for the server; if online fails, the run is logged offline instead
(real run files, in a fresh W&B service), and the note says so.
"""

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

from lightning.pytorch.loggers import WandbLogger

from lit_seq.fit.run_folder import keep_wandb_run_id, wandb_run_id
from lit_seq.fit.wandb_modes import WANDB_INIT_TIMEOUT_S, wandb_run_path, wandb_target
from lit_seq.fit.wandb_options import WandbOptions
from lit_seq.fit.wandb_sweep import AGENT_OWNS, record_sweep_run, sweep_id
from lit_seq.util.errors import error_line


class GuardedWandbLogger(WandbLogger):
    """A ``WandbLogger`` whose failures are recorded in :attr:`error` instead of raised."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Lightning hands wandb.init ``anonymous=None``, which wandb >= 0.19 warns about
        self._wandb_init.pop("anonymous", None)
        if sweep_id():  # the agent's, from the environment; wandb.init would ignore ours
            for key in AGENT_OWNS:
                self._wandb_init.pop(key, None)
        self.error = ""  # the first failure, as one line; "" while W&B works
        self._started = False
        self._higher: dict[str, bool] = {}  # metric -> higher-is-better, by define_best
        self._best: dict[str, float] = {}  # metric -> its best value logged so far

    def _guard(self, call: Callable[[], object], warn: bool = True) -> object:
        if self.error:
            return None
        try:
            return call()
        except Exception as err:  # noqa: BLE001 - whatever W&B raised, the run goes on
            self.error = error_line(err, limit=500)
            if warn:
                _warn(f"W&B stopped, training goes on: {self.error}")
            return None

    def start(self, warn: bool = True) -> bool:
        """Start the W&B run (``wandb.init``) now; False if it could not start.

        ``warn``: print the failure (else it is only kept in :attr:`error`)."""
        import wandb

        open_before = wandb.run  # another run's in this process (a population member's)
        self._started = self._guard(self._init_run, warn) is not None
        if not self._started:  # a half-started run must not swallow the next one
            with contextlib.suppress(Exception):
                if wandb.run is not None and wandb.run is not open_before:
                    wandb.run.finish(exit_code=1)
        return self._started

    def _init_run(self):
        """The W&B run, started now. Lightning's ``experiment`` would reuse a run already open
        in this process (``wandb.run``): every run opens its own (a population's members are
        K runs open at once)."""
        import wandb

        if self._experiment is None and wandb.run is not None:
            self._experiment = wandb.init(**self._wandb_init, reinit="create_new")
            self._experiment.define_metric("trainer/global_step")
            self._experiment.define_metric("*", step_metric="trainer/global_step", step_sync=True)
        return self.experiment

    def update_config(self, config: dict) -> None:
        self._guard(lambda: self.experiment.config.update(config, allow_val_change=True))

    def update_summary(self, values: dict) -> None:
        """Set keys of the run's summary (what the W&B runs table shows per run)."""
        self._guard(lambda: self.experiment.summary.update(values))

    def define_best(self, metrics: dict[str, bool]) -> None:
        """Summarise each metric by its best value so far: ``metrics`` maps a key to
        higher-is-better. Its charts keep Lightning's step axis (``trainer/global_step``).

        The summary keeps ``val/acc`` as ``{"max": ...}``, which is not a number a sweep can
        optimise; so each one is also logged as ``best/<key>`` (``best/val/acc``), a plain
        number in history and summary: the key a W&B sweep's ``metric.name`` names."""

        def define() -> None:
            for key, higher in metrics.items():
                self.experiment.define_metric(
                    key, step_metric="trainer/global_step", summary="max" if higher else "min"
                )
                # a resumed run goes on from the best its first session logged (online)
                kept = self.experiment.summary.get(f"best/{key}")
                if isinstance(kept, int | float):
                    self._best[key] = float(kept)
            self._higher.update(metrics)

        self._guard(define)

    def log_metrics(self, metrics, step=None) -> None:
        metrics = {**metrics, **self._bests(metrics)}
        self._guard(lambda: super(GuardedWandbLogger, self).log_metrics(metrics, step))

    def _bests(self, metrics: dict) -> dict[str, float]:
        """``best/<key>`` of each metric of :meth:`define_best` in ``metrics``: its best value
        so far, this one included."""
        out = {}
        for key, higher in self._higher.items():
            if (value := metrics.get(key)) is None:
                continue
            value, old = float(value), self._best.get(key)
            if old is None or (value > old if higher else value < old):
                self._best[key] = value
            out[f"best/{key}"] = self._best[key]
        return out

    def log_hyperparams(self, params) -> None:
        self._guard(lambda: super(GuardedWandbLogger, self).log_hyperparams(params))

    def log_image(self, key, images, step=None, **kwargs) -> None:
        self._guard(lambda: super(GuardedWandbLogger, self).log_image(key, images, step, **kwargs))

    def finalize(self, status: str) -> None:
        self._guard(lambda: super(GuardedWandbLogger, self).finalize(status))

    def log_checkpoints(self, files: dict) -> None:
        """Upload checkpoint ``files`` (alias -> path; missing ones skipped) as one model
        artifact of the run (``--wandb_log_model``)."""

        def upload() -> None:
            import wandb

            artifact = wandb.Artifact(name=f"model-{self.experiment.id}", type="model")
            kept = [(alias, Path(p)) for alias, p in files.items() if p and Path(p).is_file()]
            for alias, path in kept:
                artifact.add_file(str(path), name=f"{alias}-{path.name}")
            if kept:
                self.experiment.log_artifact(artifact, aliases=[a for a, _ in kept])

        self._guard(upload)

    def run_path(self) -> str:
        """Where the W&B run is (see ``wandb_run_path``); "" if it never started or failed."""
        if not self._started or self.error:
            return ""
        return str(self._guard(lambda: wandb_run_path(self.experiment)) or "")

    def finish(self, exit_code: int = 0) -> None:
        """Close the W&B run, so that a later run in this process never merges into it.

        ``exit_code``: non-zero for a fit that failed, diverged or was interrupted, which W&B
        then shows as failed instead of finished."""
        if self._started:
            code = exit_code or (1 if self.error else 0)
            with contextlib.suppress(Exception):  # nothing left to tell if this fails too
                self.experiment.finish(exit_code=code)


def start_run_wandb(
    options: WandbOptions, mode: str, run_dir: Path, model, *, resuming: bool, seeds: dict
) -> tuple[GuardedWandbLogger | None, str]:
    """The W&B logger of the fit in ``run_dir`` by ``options`` (None when off or when W&B
    cannot start), and one line saying what went wrong ("" if nothing did). A resume
    continues the W&B run of the fit it resumes (its id is in the run folder); its config
    names the backbone and the run's ``seeds``."""
    if mode == "off":
        return None, ""
    # under a sweep agent the run's id, project and entity are the agent's (wandb_sweep)
    sweep = sweep_id()
    project, entity = wandb_target(options.project, options.entity)
    owned = {} if sweep else {"project": project, "entity": entity}
    owned["id"] = None if sweep else wandb_run_id(run_dir, resuming=resuming)
    logger, error = start_wandb_logger(
        mode,
        **owned,
        name=run_dir.name,
        save_dir=str(run_dir),
        job_type="train",
        group=options.group,
        tags=list(options.tags),
        config=dict(options.config),
        save_requirements=options.save_requirements,
    )
    if logger is not None and sweep:  # the folder names the run the agent made
        keep_wandb_run_id(run_dir, logger.experiment.id)
        record_sweep_run(run_dir, logger.experiment, sweep)
    if logger is not None:  # known now, before any training: else, without W&B
        metrics = model.build_metrics().items()
        best = {f"val/{k}": bool(m.higher_is_better) for k, m in metrics}
        logger.define_best({"val/loss": False, **best})
        # the backbone by its name: a plug-in's own, where the config's arch is unused
        arch = model.arch_name
        logger.update_config({"arch_name": arch, **seeds})
        logger.update_summary({"params": model.num_parameters, "arch": arch})
    return logger, error


def start_wandb_logger(
    mode: str, save_requirements: bool = False, **kwargs
) -> tuple[GuardedWandbLogger | None, str]:
    """A started W&B logger for ``mode`` (``online`` / ``offline``), or None if W&B cannot start;
    and one line saying what went wrong ("" if nothing did). ``kwargs`` go to ``WandbLogger``.

    ``save_requirements``: let W&B capture the installed packages (``requirements.txt``), which
    costs about a quarter of a second per run; off unless asked for.

    Online waits at most ``WANDB_INIT_TIMEOUT_S`` for the server. If online fails, the run is
    logged offline instead (real run files), in a fresh W&B service: wandb keeps one service and
    its settings per process, so the failed online start is finished and torn down first.
    """
    import wandb

    if mode != "online":
        return _start(mode, kwargs, settings=_settings(save_requirements))
    settings = _settings(save_requirements, init_timeout=WANDB_INIT_TIMEOUT_S)
    logger, online_error = _start("online", kwargs, warn=False, settings=settings)
    if logger is not None:
        return logger, ""
    with contextlib.suppress(Exception):  # start() has finished any half-open run
        wandb.teardown(exit_code=1)
    offline = _settings(save_requirements)
    logger, offline_error = _start("offline", kwargs, warn=False, settings=offline)
    note = f"W&B online failed ({online_error}), " + (
        f"offline too: {offline_error}"
        if logger is None
        else f"logged offline instead: wandb sync {logger.run_path()} uploads it"
    )
    _warn(note)
    return logger, note


def _settings(save_requirements: bool, **settings):
    """wandb's settings of a fit's run: quiet (lit_seq prints the one line that matters: where
    the run is), requirements captured only when asked for."""
    import wandb

    return wandb.Settings(silent=True, x_save_requirements=save_requirements, **settings)


def _start(
    mode: str, kwargs: dict, warn: bool = True, **init
) -> tuple[GuardedWandbLogger | None, str]:
    # ``mode`` goes to wandb.init itself. Lightning's ``offline=True`` only sets WANDB_MODE in
    # this process's environment, which wandb ignores once it is set up here (so an offline
    # retry after a failed online start went online again, and wrote no offline files), and
    # which would turn every later W&B run of this process (a grid worker) offline.
    logger = GuardedWandbLogger(mode=mode, **kwargs, **init)
    if logger.start(warn):
        return logger, ""
    return None, logger.error


def _warn(line: str) -> None:
    print(f"lit_seq: warning: {line}", file=sys.stderr)
