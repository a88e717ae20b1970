"""Interrupted fits resume exactly: real kills and signals, real checkpoints, real files.

A fit killed (SIGKILL) or stopped (SIGTERM, SIGINT) and resumed with ``--ckpt_path last``
must end with the test metrics and the ``metrics.csv`` of a fit never interrupted; what a
resume cannot trust (an unreadable, foreign or missing checkpoint, a folder in use, a run
with nothing left to train) is refused in one line.
"""

import csv
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import lightning as L
import pytest
import torch
from torch.utils.data import BatchSampler, RandomSampler

from lit_seq.data import TensorDictDataset, batch_loader
from lit_seq.data.base import EpochBatches
from lit_seq.fit import BadInput, build_cli, check_config, cli_main, run
from lit_seq.fit.checkpoints import AtomicCheckpointIO
from lit_seq.fit.csv_log import RunCSVLogger
from lit_seq.fit.signals import FitInterrupted
from lit_seq.record import METRICS_FILE
from lit_seq.util.io import atomic_write_text
from lit_seq.util.runtime import QUIET_OPENMP
from tests.helpers import REPO, tiny_fit

ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"
ECHO_LSTM = REPO / "configs" / "echo" / "lstm.yaml"
ECHO_TRANSFORMER = REPO / "configs" / "echo" / "transformer.yaml"

# a fit with dropout (so the RNG matters) and 7 batches an epoch, checkpointed every 10
# steps: every checkpoint but one is mid-epoch, so a resume must continue the epoch's order
EXACT = [
    "--config",
    str(ECHO_TRANSFORMER),
    "--model.dropout=0.1",
    "--data.init_args.n_train=448",
    "--trainer.val_check_interval=10",
    "--trainer.log_every_n_steps=3",
    "--trainer.limit_val_batches=2",
    "--trainer.limit_test_batches=2",
    "--trainer.deterministic=true",
    "--trainer.enable_progress_bar=false",
    "--trainer.enable_model_summary=false",
    "--wandb=off",
]
LONG = "--trainer.max_steps=150"  # long enough to be stopped well before its end
SHORT = "--trainer.max_steps=40"  # for the in-process fits
ENV = {**os.environ, **QUIET_OPENMP, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}


def fit_command(run_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "lit_seq.fit", *EXACT, LONG, f"--run_dir={run_dir}", *extra]


def fit(run_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    """``python -m lit_seq.fit`` of the exact-resume fit, to its end."""
    return subprocess.run(
        fit_command(run_dir, *extra), cwd=REPO, env=ENV, capture_output=True, text=True
    )


def default_sigint() -> None:
    """A child's SIGINT as a terminal's foreground job has it. A job started in the
    background of a non-interactive shell (``nohup bash .ci/run &``) inherits SIGINT
    ignored, and the fit keeps an ignored SIGINT ignored, on purpose (``fit.signals``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_fit(run_dir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        fit_command(run_dir),
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )


def wait_for_checkpoint(process: subprocess.Popen, run_dir: Path) -> None:
    """Return once the fit has saved its first checkpoint (fail if it ended first)."""
    last = run_dir / "checkpoints" / "last.ckpt"
    while not last.exists():
        assert process.poll() is None, process.stderr.read().decode()[-2000:]
        time.sleep(0.02)


def step_of(checkpoint: Path) -> int:
    return torch.load(checkpoint, weights_only=True)["global_step"]


def metrics(run_dir: Path) -> dict:
    return json.loads((run_dir / METRICS_FILE).read_text())


def log_rows(run_dir: Path, untimed_tests: bool = False) -> list[dict]:
    """The rows of ``metrics.csv``; with ``untimed_tests``, test rows without step and epoch."""
    with open(run_dir / "metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if untimed_tests and any(k.startswith("test") and v for k, v in row.items()):
            del row["step"], row["epoch"]
    return rows


def snapshot(run_dir: Path) -> dict:
    """Every file of a run folder with its bytes and modification time."""
    return {
        str(p.relative_to(run_dir)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """The uninterrupted fit every interrupted one is compared with (its own process)."""
    run_dir = tmp_path_factory.mktemp("straight") / "run"
    result = fit(run_dir)
    assert result.returncode == 0, result.stderr[-2000:]
    return run_dir


# ---- the data order ----------------------------------------------------------------------


def test_the_shuffle_of_an_epoch_is_a_pure_function_of_seed_and_epoch():
    def passes(sampler: EpochBatches, n: int) -> list[list[int]]:
        return [[i for batch in sampler for i in batch] for _ in range(n)]

    running = passes(EpochBatches(50, 8, shuffle=True, seed=3), 4)  # a hand loop: no set_epoch
    fresh = EpochBatches(50, 8, shuffle=True, seed=3)
    fresh.set_epoch(3)  # a fresh process, at epoch 3
    assert passes(fresh, 1)[0] == running[3]
    assert len({tuple(p) for p in running}) == 4 and sorted(running[3]) == list(range(50))
    assert passes(EpochBatches(50, 8, True, seed=4), 1)[0] != running[0]
    # the orders the seeded RandomSampler before it gave a fit (which takes an epoch's
    # batches and no more), so every seed keeps the data order it had
    before = BatchSampler(
        RandomSampler(range(50), generator=torch.Generator().manual_seed(3)), 8, False
    )

    def epoch() -> list[int]:
        batches = iter(before)
        return [i for _ in range(len(before)) for i in next(batches)]

    assert [epoch() for _ in range(4)] == running


def test_a_resumed_epoch_hands_out_only_the_batches_not_yet_trained():
    sampler = EpochBatches(23, 5, shuffle=True, seed=0)
    sampler.set_epoch(2)
    whole = list(sampler)
    sampler.set_epoch(2)
    batches = iter(sampler)
    trained = [next(batches), next(batches)]
    state = sampler.state_dict()
    assert state == {"epoch": 2, "batches": 2}

    resumed = EpochBatches(23, 5, shuffle=True, seed=0)
    resumed.load_state_dict(state)
    resumed.set_epoch(2)  # what Lightning calls as the epoch starts again
    assert trained + list(resumed) == whole
    resumed.set_epoch(3)  # the next epoch is whole again
    assert len(list(resumed)) == 5

    finished = EpochBatches(23, 5, shuffle=True, seed=0)
    finished.load_state_dict({"epoch": 2, "batches": 5})  # saved after the epoch's last batch
    assert finished.state_dict() == {"epoch": 3, "batches": 0}
    assert len(list(finished)) == 5


def test_the_train_loader_carries_its_position_for_lightning():
    loader = batch_loader(TensorDictDataset({"i": torch.arange(20)}), 4, True, 0)
    batches = iter(loader)
    next(batches)
    assert loader.state_dict() == {"epoch": 0, "batches": 1}


# ---- files: atomic, with the usual permissions --------------------------------------------


@pytest.mark.parametrize(
    ("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)], ids=["022", "077", "002"]
)
def test_written_files_honour_the_umask(umask, mode, tmp_path):
    previous = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "a.json", "{}")
        AtomicCheckpointIO().save_checkpoint({"x": torch.ones(2)}, tmp_path / "c" / "x.ckpt")
    finally:
        os.umask(previous)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == mode
    assert (tmp_path / "c" / "x.ckpt").stat().st_mode & 0o777 == mode


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError("no pickling")


def test_a_checkpoint_write_that_fails_leaves_the_old_file_whole(tmp_path):
    io = AtomicCheckpointIO()
    path = tmp_path / "last.ckpt"
    io.save_checkpoint({"w": torch.arange(3)}, path)
    with pytest.raises(RuntimeError, match="no pickling"):
        io.save_checkpoint({"w": torch.zeros(3), "bad": Unpicklable()}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]  # no temp file left
    assert io.load_checkpoint(path)["w"].tolist() == [0, 1, 2]
    # loads are weights_only: a file that would run code on unpickling is refused
    torch.save({"f": Unpicklable.__reduce__}, tmp_path / "code.ckpt")
    with pytest.raises(Exception, match="[Ww]eights"):
        io.load_checkpoint(tmp_path / "code.ckpt")


# ---- metrics.csv across a resume ------------------------------------------------------------


def test_a_resumed_log_keeps_the_rows_before_its_checkpoint_and_repeats_no_step(tmp_path):
    rows = [{"step": s, "train/loss": 1 / (s + 1), "val/loss": ""} for s in range(0, 12, 2)]
    with open(tmp_path / "metrics.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["step", "train/loss", "val/loss"])
        writer.writeheader()
        writer.writerows(rows)
        handle.write("13,0.0")  # the row a kill cut short
    logger = RunCSVLogger(tmp_path, resume_step=6)  # the checkpoint was at step 6
    logger.log_metrics({"train/loss": 0.5}, step=6)
    logger.log_metrics({"lr": 0.1}, step=8)  # a new column: the file gets a new header
    logger.save()
    with open(tmp_path / "metrics.csv", newline="") as handle:
        kept = list(csv.DictReader(handle))
    assert [int(r["step"]) for r in kept] == [0, 2, 4, 6, 8]
    assert kept[0]["train/loss"] == "1.0" and kept[3]["train/loss"] == "0.5"
    assert kept[4]["lr"] == "0.1"

    RunCSVLogger(tmp_path).log_metrics({"x": 1.0}, step=0)  # a fresh fit starts a fresh log
    assert not (tmp_path / "metrics.csv").exists()


# ---- exact resumes ---------------------------------------------------------------------------


@pytest.mark.integration
def test_a_fit_killed_and_resumed_ends_as_if_never_interrupted(straight, tmp_path):
    run_dir = tmp_path / "run"
    process = start_fit(run_dir)
    wait_for_checkpoint(process, run_dir)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (run_dir / METRICS_FILE).exists(), "the fit ended before it was killed"

    resumed = fit(run_dir, "--ckpt_path=last")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert metrics(run_dir)["metrics"] == metrics(straight)["metrics"]  # exactly equal floats
    assert metrics(run_dir)["steps"] == 150
    # the rows logged before the kill are kept, none repeated: the log of an unbroken fit
    assert (run_dir / "metrics.csv").read_text() == (straight / "metrics.csv").read_text()

    before = snapshot(run_dir)
    again = fit(run_dir, "--ckpt_path=last")  # the same command on the finished run
    assert again.returncode == 2
    assert "is finished: last.ckpt is at step 150" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert snapshot(run_dir) == before  # nothing changed, not even a timestamp


@pytest.mark.integration
@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"]
)
def test_a_signal_saves_where_the_fit_stopped_and_exits_with_its_status(
    signum, status, straight, tmp_path
):
    run_dir = tmp_path / "run"
    process = start_fit(run_dir)
    wait_for_checkpoint(process, run_dir)
    process.send_signal(signum)
    _, stderr = process.communicate()
    assert process.returncode == status
    line = stderr.decode().strip().splitlines()[-1]
    name = signal.Signals(signum).name
    assert line.startswith(f"lit_seq.fit: stopped by {name} at step ")
    assert line.endswith(
        f"resume with: python -m lit_seq.fit --config {run_dir / 'config.yaml'} "
        f"--run_dir {run_dir} --ckpt_path last"
    )
    assert not (run_dir / METRICS_FILE).exists()
    stopped_at = int(line.split(" at step ")[1].split(",")[0])
    assert 10 <= stopped_at < 150
    assert step_of(run_dir / "checkpoints" / "last.ckpt") == stopped_at

    resumed = fit(run_dir, "--ckpt_path=last")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert metrics(run_dir)["metrics"] == metrics(straight)["metrics"]
    assert (run_dir / "metrics.csv").read_text() == (straight / "metrics.csv").read_text()


@pytest.mark.integration
def test_the_printed_resume_command_works_when_pasted(tmp_path):
    # a config that is not the default one, with overrides: the hint must bring them back
    run_dir = tmp_path / "run"
    args = [a if a != str(ECHO_TRANSFORMER) else str(ECHO_RNN) for a in EXACT]
    command = [sys.executable, "-m", "lit_seq.fit", *args, LONG, f"--run_dir={run_dir}"]
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    wait_for_checkpoint(process, run_dir)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate()
    assert process.returncode == 130
    line = stderr.decode().strip().splitlines()[-1]
    pasted = shlex.split(line.split("resume with: ", 1)[1])
    assert pasted[:3] == ["python", "-m", "lit_seq.fit"]
    resumed = subprocess.run(
        [sys.executable, *pasted[1:]], cwd=tmp_path, env=ENV, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "(resuming at step " in resumed.stdout
    assert metrics(run_dir)["steps"] == 150 and metrics(run_dir)["arch"] == "rnn"


class SignalAt(L.Callback):
    """Sends this process a real SIGTERM once, at ``hook`` of global step ``step``."""

    def __init__(self, hook: str, step: int) -> None:
        self.hook, self.step, self.sent = hook, step, False

    def _maybe(self, hook: str, trainer: L.Trainer) -> None:
        due = hook == self.hook and trainer.global_step == self.step
        if due and not self.sent and not trainer.sanity_checking:
            self.sent = True
            os.kill(os.getpid(), signal.SIGTERM)

    def on_train_batch_start(self, trainer, *args) -> None:
        self._maybe("step", trainer)

    def on_validation_batch_start(self, trainer, *args) -> None:
        self._maybe("validation", trainer)

    def on_test_batch_start(self, trainer, *args) -> None:
        self._maybe("test", trainer)


@pytest.fixture(scope="module")
def straight_here(tmp_path_factory):
    """The uninterrupted short fit, in this process (as the in-process resumes are)."""
    run_dir = tmp_path_factory.mktemp("straight_here") / "run"
    return cli_main([*EXACT, SHORT, f"--run_dir={run_dir}"]), run_dir


@pytest.mark.integration
@pytest.mark.parametrize(
    ("hook", "step", "saved_at"),
    [
        ("step", 23, 24),  # mid-step: the step is finished, then saved
        ("validation", 20, 20),  # mid-validation: the validation and its checkpoint finish
        ("test", 40, 40),  # after training: stops at once, the last checkpoint stands
    ],
)
def test_a_sigterm_anywhere_stops_at_a_step_boundary_and_resumes_exactly(
    hook, step, saved_at, straight_here, tmp_path
):
    expected, straight_dir = straight_here
    run_dir = tmp_path / "run"
    cli = build_cli([*EXACT, SHORT, f"--run_dir={run_dir}"])
    cli.trainer.callbacks.insert(0, SignalAt(hook, step))
    with pytest.raises(FitInterrupted) as stopped:
        run(cli)
    assert stopped.value.code == 143
    assert not (run_dir / METRICS_FILE).exists()
    assert step_of(run_dir / "checkpoints" / "last.ckpt") == saved_at

    resumed = cli_main([*EXACT, SHORT, f"--run_dir={run_dir}", "--ckpt_path=last"])
    assert resumed.metrics == expected.metrics
    # a resume with no step left only tests: Lightning then logs the test rows one step (and
    # epoch) earlier than an unbroken fit does; every value is the same
    untimed = hook == "test"
    assert log_rows(run_dir, untimed) == log_rows(straight_dir, untimed)
    assert resumed.train_seconds > 0 and resumed.samples_per_second > 0  # never a 0.0 record


# ---- what a resume cannot trust ---------------------------------------------------------------


@pytest.mark.integration
def test_an_unreadable_last_checkpoint_gives_way_to_the_newest_readable_one(tmp_path, capfd):
    run_dir = tmp_path / "run"
    tiny_fit(ECHO_RNN, run_dir)  # checkpoints at steps 3 and 6
    (run_dir / METRICS_FILE).unlink()  # as if killed after its last checkpoint
    best = next((run_dir / "checkpoints").glob("best-*.ckpt"))
    last = run_dir / "checkpoints" / "last.ckpt"
    last.write_bytes(last.read_bytes()[:1000])  # truncated
    capfd.readouterr()

    record = tiny_fit(ECHO_RNN, run_dir, "--ckpt_path=last", "--trainer.max_steps=9")
    warnings = [line for line in capfd.readouterr().err.splitlines() if "lit_seq.fit" in line]
    assert len(warnings) == 1
    assert "last.ckpt' is not a readable checkpoint" in warnings[0]
    assert f"resuming from {best.name} (step {step_of(best)})" in warnings[0]
    assert record.steps == 9
    assert step_of(last) == 9  # whole again


def test_nothing_to_resume_is_one_line_and_never_a_fresh_start(tmp_path):
    args = ["--config", str(ECHO_RNN), "--wandb=off", "--ckpt_path=last"]
    with pytest.raises(BadInput, match="has nothing to resume"):
        build_cli([*args, f"--run_dir={tmp_path / 'missing'}"])
    assert not (tmp_path / "missing").exists()
    with pytest.raises(BadInput, match="resumes the fit of --run_dir"):
        build_cli(args)

    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    with pytest.raises(BadInput, match="has nothing to resume") as error:
        build_cli([*args, f"--run_dir={tmp_path / 'run'}"])
    (folder / "last.ckpt").write_bytes(b"")
    (folder / "best-step=3.ckpt").write_text("not a checkpoint")
    with pytest.raises(
        BadInput, match="last.ckpt' is not a checkpoint: the file is empty"
    ) as error:
        build_cli([*args, f"--run_dir={tmp_path / 'run'}"])
    assert "\n" not in str(error.value)


def test_a_fresh_fit_into_an_unfinished_runs_folder_is_refused(tmp_path):
    folder = tmp_path / "run" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "last.ckpt").write_bytes(b"left by a killed fit")
    with pytest.raises(BadInput, match="holds the checkpoints of an unfinished fit"):
        build_cli(["--config", str(ECHO_RNN), "--wandb=off", f"--run_dir={tmp_path / 'run'}"])
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["checkpoints"]


def fake_checkpoint(path: Path, config: Path) -> Path:
    """A training checkpoint of the system ``config`` builds (as Lightning lays one out)."""
    system = check_config(["--config", str(config)]).model
    torch.save(
        {"state_dict": system.state_dict(), "global_step": 3, "loops": {}, "optimizer_states": []},
        path,
    )
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: d / "nope.ckpt", r"ckpt_path='.*nope.ckpt' does not exist"),
        (lambda d: d, r"ckpt_path='.*' is not a file"),
        (
            lambda d: (d / "a.ckpt").write_text("hello") and d / "a.ckpt",
            r"ckpt_path='.*a.ckpt' is not a readable checkpoint \(",
        ),
        (
            lambda d: torch.save({"state_dict": {}}, d / "w.ckpt") or d / "w.ckpt",
            r"is not a training checkpoint of lit_seq.fit \(no global_step, loops, optimizer",
        ),
        (
            lambda d: fake_checkpoint(d / "lstm.ckpt", ECHO_LSTM),
            r"is a checkpoint of another model: shapes differ: net\.backbone\.rnn\.weight_ih_l0 "
            r"\(128, 32\) there, \(32, 32\) here",
        ),
        (
            lambda d: fake_checkpoint(d / "transformer.ckpt", ECHO_TRANSFORMER),
            r"is a checkpoint of another model: missing net\.backbone\.rnn\.weight_ih_l0, .* "
            r"\(\+\d+ more\); unexpected net\.",
        ),
    ],
    ids=["missing", "a folder", "not a checkpoint", "weights only", "lstm", "transformer"],
)
def test_a_checkpoint_that_cannot_be_resumed_is_one_line(make, expected, tmp_path):
    ckpt = make(tmp_path)
    with pytest.raises(BadInput, match=expected) as error:
        build_cli(
            ["--config", str(ECHO_RNN), "--wandb=off", f"--ckpt_path={ckpt}"]
            + [f"--run_dir={tmp_path / 'run'}"]
        )
    assert "\n" not in str(error.value)
    assert not (tmp_path / "run").exists()  # checked before any folder is made


@pytest.mark.integration
def test_the_command_line_refuses_a_foreign_checkpoint_with_exit_2(tmp_path):
    ckpt = fake_checkpoint(tmp_path / "lstm.ckpt", ECHO_LSTM)
    command = [sys.executable, "-m", "lit_seq.fit", "--config", str(ECHO_RNN), "--wandb=off"]
    command += [f"--ckpt_path={ckpt}", f"--run_dir={tmp_path / 'run'}"]
    result = subprocess.run(command, cwd=REPO, env=ENV, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("lit_seq.fit: error: ckpt_path=")
    assert "is a checkpoint of another model" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


# ---- one run folder, one fit -------------------------------------------------------------------


def test_a_second_fit_into_a_folder_in_use_is_refused(tmp_path):
    args = ["--config", str(ECHO_RNN), "--wandb=off", f"--run_dir={tmp_path / 'run'}"]
    first = build_cli(args)  # holds the folder until it runs (or is let go)
    with pytest.raises(BadInput, match=rf"is in use by another fit \(pid {os.getpid()}\)"):
        build_cli(args)
    first.book.lock.release()
    build_cli(args).book.lock.release()  # free again


@pytest.mark.integration
def test_a_fit_in_another_process_holds_its_folder_until_it_dies(tmp_path):
    run_dir = tmp_path / "run"
    process = start_fit(run_dir)
    try:
        wait_for_checkpoint(process, run_dir)
        with pytest.raises(BadInput, match=rf"is in use by another fit \(pid {process.pid}\)"):
            build_cli([*EXACT, LONG, f"--run_dir={run_dir}", "--ckpt_path=last"])
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    build_cli([*EXACT, LONG, f"--run_dir={run_dir}", "--ckpt_path=last"]).book.lock.release()


@pytest.mark.integration
def test_a_moved_run_folder_resumes_with_its_best_checkpoint_and_one_last(tmp_path):
    tiny_fit(ECHO_RNN, tmp_path / "a")
    (tmp_path / "a" / METRICS_FILE).unlink()
    shutil.move(tmp_path / "a", tmp_path / "b")
    record = tiny_fit(ECHO_RNN, tmp_path / "b", "--ckpt_path=last", "--trainer.max_steps=9")
    names = sorted(p.name for p in (tmp_path / "b" / "checkpoints").iterdir())
    assert "last.ckpt" in names and not any("-v1" in n for n in names)
    assert (
        Path(record.best_checkpoint).parent.resolve() == (tmp_path / "b" / "checkpoints").resolve()
    )
    assert Path(record.best_checkpoint).is_file()


@pytest.mark.integration
def test_a_fit_killed_between_validations_resumes_from_its_early_checkpoint(straight, tmp_path):
    run_dir = tmp_path / "run"
    # validation every 10 steps, checkpoints every 7: the first last.ckpt is at step 7
    process = subprocess.Popen(
        fit_command(run_dir, "--checkpoint_every=7"),
        cwd=REPO,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_checkpoint(process, run_dir)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = step_of(run_dir / "checkpoints" / "last.ckpt")
    assert saved % 7 == 0 or saved % 10 == 0
    resumed = fit(run_dir, "--ckpt_path=last", "--checkpoint_every=7")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert metrics(run_dir)["metrics"] == metrics(straight)["metrics"]
    assert (run_dir / "metrics.csv").read_text() == (straight / "metrics.csv").read_text()
