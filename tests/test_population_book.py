"""A population's member keeps the books its solo run keeps (``lit_seq.fit.book``).

Both paths call one ``RunBook``: the same checkpoints at the same steps (``--checkpoint_every``
included), the same W&B run state and status however the run ends (ok, diverged, target
reached, SIGTERM), read back from the offline run files real wandb wrote.
"""

from contextlib import nullcontext
from pathlib import Path

import pandas as pd
import pytest

from lit_seq import fit
from lit_seq.fit.book import RunBook
from lit_seq.fit.checkpoints import AtomicCheckpointIO
from lit_seq.fit.signals import FitInterrupted
from lit_seq.population.train import fit_population
from tests.helpers import sigterm_once_file_exists
from tests.test_population import _args
from tests.test_resume import SignalAt
from tests.test_wandb_files import read_runs


def _view(run_dir: Path) -> tuple:
    """What W&B shows of how a run ended: exit code, state, status, steps."""
    [view] = read_runs(run_dir)
    return view.exit_code, view.state, view.summary["status"], view.summary["steps"]


@pytest.mark.integration
def test_a_member_saves_its_checkpoints_at_its_solo_runs_steps(tmp_path, monkeypatch):
    written: dict[str, list[tuple[str, int]]] = {}
    write = RunBook._write

    def record(book: RunBook, path: Path) -> None:  # the real write, and what it wrote
        written.setdefault(book.run_dir.name, []).append((path.name, book.step))
        write(book, path)

    monkeypatch.setattr(RunBook, "_write", record)
    # and both through the same writer: the solo fit's atomic one (temp file, fsync, rename)
    atomic: dict[str, list[str]] = {}
    save = AtomicCheckpointIO.save_checkpoint

    def atomic_save(io, checkpoint, path, storage_options=None) -> None:
        atomic.setdefault(Path(path).parent.parent.name, []).append(Path(path).name)
        save(io, checkpoint, path, storage_options)

    monkeypatch.setattr(AtomicCheckpointIO, "save_checkpoint", atomic_save)
    every = "--checkpoint_every=7"  # between the validations at 10 and 20
    fit_population([_args("echo/rnn.yaml", tmp_path / f"m{k}", k, every) for k in range(2)])
    for k in range(2):
        fit.cli_main(_args("echo/rnn.yaml", tmp_path / f"s{k}", k, every))
        assert written[f"m{k}"] == written[f"s{k}"]
        assert atomic[f"m{k}"] == atomic[f"s{k}"] == [name for name, _ in written[f"s{k}"]]
    # every 7 steps, and at each validation (10, 20) its best (if better) and last
    assert {("last.ckpt", 7), ("last.ckpt", 10), ("last.ckpt", 14), ("last.ckpt", 20)} <= set(
        written["m0"]
    )


@pytest.mark.integration
def test_a_member_writes_the_training_rows_its_solo_run_writes(tmp_path):
    # 12 steps, validation at 10: the rows of steps 10 and 11 come after the last checkpoint
    # (a member once lost them: nothing wrote its CSV rows at the end of training)
    short = ("--trainer.max_steps=12",)
    fit_population([_args("echo/rnn.yaml", tmp_path / "m0", 0, *short)])
    fit.cli_main(_args("echo/rnn.yaml", tmp_path / "s0", 0, *short))
    steps = {}
    for name in ("m0", "s0"):
        frame = pd.read_csv(tmp_path / name / "metrics.csv")
        steps[name] = frame.dropna(subset=["train/loss"])["step"].tolist()
    assert steps["m0"] == steps["s0"] == list(range(12))


@pytest.mark.integration
def test_a_member_tells_wandb_how_it_ended_as_its_solo_run_does(tmp_path):
    # one population: one member reaches its target, one diverges, one trains to its end
    target = ["--target.metric=val/acc", "--target.threshold=0.6"]
    how = {
        "target": [*target],
        "diverged": [*target, "--model.init_args.lr=1e300"],
        "ok": [*target, "--model.init_args.lr=0.0001"],  # never reaches it in 20 steps
    }
    members = [
        _args("echo/rnn.yaml", tmp_path / f"m_{name}", k, *extra, wandb="offline")
        for k, (name, extra) in enumerate(how.items())
    ]
    reached, diverged, ok = fit_population(members)
    assert reached.target_reached and isinstance(diverged, FloatingPointError) and ok.steps == 20
    for k, (name, extra) in enumerate(how.items()):
        solo_dir = tmp_path / f"s_{name}"
        with pytest.raises(FloatingPointError) if name == "diverged" else nullcontext():
            fit.cli_main(_args("echo/rnn.yaml", solo_dir, k, *extra, wandb="offline"))
        assert _view(tmp_path / f"m_{name}") == _view(solo_dir), name
    assert _view(tmp_path / "m_diverged")[:3] == (1, "failed", "diverged")
    assert _view(tmp_path / "m_target")[:3] == (0, "finished", "ok")


@pytest.mark.integration
def test_a_member_stopped_by_sigterm_is_interrupted_with_143_as_its_solo_run(tmp_path):
    members = [
        _args("echo/rnn.yaml", tmp_path / f"m{k}", k, "--trainer.max_steps=200", wandb="offline")
        for k in range(2)
    ]

    killer = sigterm_once_file_exists(tmp_path / "m0" / "checkpoints" / "last.ckpt")
    outcomes = fit_population(members)
    killer.join()
    assert all(isinstance(o, FitInterrupted) and o.code == 143 for o in outcomes), outcomes
    cli = fit.build_cli(_args("echo/rnn.yaml", tmp_path / "solo", 0, wandb="offline"))
    cli.trainer.callbacks.insert(0, SignalAt("step", 4))
    with pytest.raises(FitInterrupted):
        fit.run(cli)
    solo = _view(tmp_path / "solo")
    for k in range(2):
        member = _view(tmp_path / f"m{k}")
        assert member[:3] == solo[:3] == (143, "failed", "interrupted")
        assert member[3] == outcomes[k].step
