"""Where a run's seconds go: the phase clock's worked example, a real fit's phases, the
report's phase table on records with worked numbers (issue 57)."""

import time

import pytest

from lit_seq.fit import phases
from lit_seq.fit.phases import PhaseClock
from lit_seq.record import PHASES, RunRecord
from lit_seq.results.hours import phase_markdown, phase_table
from tests.helpers import CONFIG_DIR, tiny_fit


def _ticking(monkeypatch) -> list[float]:
    """A clock the test moves by hand: wall seconds ``t[0]``, CPU half of them."""
    t = [0.0]
    monkeypatch.setattr(phases, "now", lambda: (t[0], t[0] / 2))
    return t


def test_a_phase_inside_another_pauses_it_each_second_counted_once(monkeypatch):
    """The docstring's example: train from 0 s, val from 3 s to 5 s, train ends at 9 s."""
    t = _ticking(monkeypatch)
    clock = PhaseClock()
    clock.enter("train")
    t[0] = 3.0
    clock.enter("val")
    t[0] = 5.0
    clock.leave("val")
    t[0] = 9.0
    clock.leave("train")
    t[0] = 20.0  # nothing open: not counted
    wall, cpu = clock.seconds()
    assert wall == {**dict.fromkeys(PHASES, 0.0), "train": 7.0, "val": 2.0}
    assert cpu == {**dict.fromkeys(PHASES, 0.0), "train": 3.5, "val": 1.0}


def test_leaving_an_outer_phase_ends_those_an_error_left_open(monkeypatch):
    """An exception inside a validation skips its end; leaving train closes both."""
    t = _ticking(monkeypatch)
    clock = PhaseClock()
    clock.enter("build", at=(-2.0, -1.0))  # began 2 s before the clock was made
    t[0] = 1.0
    clock.leave("build")
    clock.enter("train")
    clock.enter("val")
    t[0] = 4.0
    clock.leave("train")
    clock.leave("val")  # no longer open: nothing
    t[0] = 6.0
    wall, _ = clock.seconds()
    assert (wall["build"], wall["train"], wall["val"]) == (3.0, 0.0, 3.0)


def test_a_share_of_another_clock_adds_to_this_one():
    clock = PhaseClock()
    clock.add({"train": 9.0, "test": 3.0}, {"train": 6.0}, share=1 / 3)
    wall, cpu = clock.seconds()
    assert (wall["train"], wall["test"], cpu["train"]) == (3.0, 1.0, 2.0)


@pytest.mark.parametrize("scoring", ["full", "selection"])
def test_a_real_fit_records_every_phase_within_its_wall_time(tmp_path, scoring):
    """Every phase >= 0 and their sum within the fit's wall time; training, the test and
    (scored in full) the range evaluation took some; CPU seconds recorded beside them."""
    started = time.perf_counter()
    result = tiny_fit(
        CONFIG_DIR / "echo" / "rnn.yaml",
        tmp_path / "run",
        "--range_eval.max_factor=2",
        f"--scoring={scoring}",
    )
    wall = time.perf_counter() - started
    assert list(result.phase_seconds) == list(PHASES)
    assert list(result.phase_cpu_seconds) == list(PHASES)
    assert all(v >= 0 for v in [*result.phase_seconds.values(), *result.phase_cpu_seconds.values()])
    assert sum(result.phase_seconds.values()) <= wall + 0.01
    for phase in ("build", "train", "val", "test", "write"):
        assert result.phase_seconds[phase] > 0, phase
    assert (result.phase_seconds["range_eval"] > 0) is (scoring == "full")
    assert result.scoring == scoring


def test_a_fit_scored_for_selection_keeps_what_selection_reads_and_nothing_else(tmp_path):
    """Same seed, same training: the validation scores and the test set at the training
    length are equal; the longer test sets and the length curve are left out."""
    config = CONFIG_DIR / "echo" / "rnn.yaml"
    full = tiny_fit(config, tmp_path / "full", "--range_eval.max_factor=2")
    lean = tiny_fit(config, tmp_path / "lean", "--range_eval.max_factor=2", "--scoring=selection")
    assert lean.val_metrics == full.val_metrics and lean.val_metrics
    assert lean.metrics == {k: v for k, v in full.metrics.items() if k.startswith("test/")}
    assert any(k.startswith("range_ood/") for k in full.metrics) and full.curve
    assert lean.curve == {} and lean.range_ood_longest is None


def _record(cell: str, index: int, wall: float | None, phase: dict, pack: int = 1) -> RunRecord:
    return RunRecord(
        run_id=f"{cell}__seed={index}",
        cell=cell,
        index=index,
        status="ok",
        wall_seconds=wall,
        phase_seconds={**dict.fromkeys(PHASES, 0.0), **phase} if phase else {},
        phase_cpu_seconds={"train": phase.get("train", 0.0) / 2} if phase else {},
        pack_size=pack,
    )


def test_the_phase_table_adds_up_by_cell_with_worked_numbers():
    """The docstring's example (cell a), a pack of 2 (cell b: each member half its pack's
    wall), and a record made before phases (cell c: in wall, in no phase)."""
    records = [
        _record("a", 0, 10.0, {"build": 2.0, "train": 5.0, "range_eval": 2.0}),
        _record("a", 1, 6.0, {"build": 1.0, "train": 3.0, "range_eval": 1.0}),
        _record("b", 2, 8.0, {"train": 2.0, "test": 1.0}, pack=2),
        _record("b", 3, 8.0, {"train": 2.0, "test": 1.0}, pack=2),
        _record("c", 4, 5.0, {}),
    ]
    table = phase_table(records).set_index("cell")
    a = table.loc["a"]
    assert (a["runs"], a["wall"], a["build"], a["train"], a["range_eval"]) == (2, 16, 3, 8, 3)
    assert a["rest"] == 2 and a["cpu"] == 4 and a["no_phases"] == 0
    b = table.loc["b"]
    assert (b["wall"], b["train"], b["test"], b["rest"]) == (8, 4, 2, 2)
    c = table.loc["c"]
    assert (c["wall"], c["no_phases"], c["train"], c["rest"]) == (5, 1, 0, 0)
    total = table.loc["all"]
    assert (total["runs"], total["wall"], total["train"], total["rest"]) == (5, 29, 12, 4)
    text = phase_markdown(phase_table(records))
    assert "| a | 2 | 16.0 s | 3.0 s (19%) | 8.0 s (50%) |" in text
    assert "1 of 5 records were made before runs kept their phases" in text
    # the share is of the wall of the runs that kept phases (24 s), and a cell without any
    # prints "-", not 0
    assert "| all | 5 | 29.0 s | 3.0 s (12%) | 12.0 s (50%) |" in text
    assert "| c | 1 | 5.0 s | - | - |" in text


def test_old_records_without_phases_still_load():
    old = RunRecord.from_json({"run_id": "x", "status": "ok", "wall_seconds": 3.0})
    assert old.phase_seconds == {} and old.scoring == "full"
    assert phase_table([old]).iloc[0]["no_phases"] == 1
