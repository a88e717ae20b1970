"""``python -m lit_seq.ablate --time-limit SECONDS`` and SIGTERM (``ablate.time_limit``): the
grid stops with every finished run recorded, and the same command trains only the rest."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.time_limit import GridStopped, stopping
from lit_seq.record import read_records
from tests.helpers import REPO, SMOKE, alive, driver, driver_workers, write_grid

LIMIT_S = 30  # ample for one worker's start and two tiny runs on a loaded 2-core machine


@pytest.mark.parametrize("value", ["0", "-5", "ten", "inf", "nan"])
def test_a_bad_time_limit_is_one_line_naming_the_flag_before_anything_is_touched(
    value, tmp_path, capsys
):
    out = tmp_path / "out"
    assert main([str(SMOKE), "--out", str(out), f"--time-limit={value}", "--wandb", "off"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--time-limit={value}: must be a number of seconds > 0" in err
    assert not out.exists()


def test_sigterm_and_the_end_of_the_limit_stop_the_block_and_the_old_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGALRM)
    with pytest.raises(GridStopped) as term, stopping(None, time.monotonic()):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # never reached: the handler raises in this thread
    assert (term.value.code, term.value.why) == (143, "stopped by SIGTERM")
    with pytest.raises(GridStopped) as limit, stopping(0.2, time.monotonic()):
        time.sleep(10)
    assert (limit.value.code, limit.value.why) == (124, "time limit of 0.2 s reached")
    spent = time.monotonic() - 5  # a command whose checks took the whole budget
    with pytest.raises(GridStopped), stopping(3, spent):
        pytest.fail("the block ran with its budget spent")
    with stopping(60, time.monotonic()):
        pass  # a grid done in time: nothing is raised, the alarm is off again
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGALRM)) == before


@pytest.mark.integration
@pytest.mark.slow  # two drivers, one of them waiting out its limit
def test_a_grid_stops_at_its_time_limit_and_the_same_command_finishes_it(tmp_path):
    grid = write_grid(
        tmp_path, "budget", "seeds: [0, 1, 2]\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    )
    out = tmp_path / "out"
    flags = ["--out", out, "--workers", "2", "--pack", "off", "--wandb", "off"]
    flags += ["--time-limit", str(LIMIT_S)]
    command = [sys.executable, "-m", "lit_seq.ablate", str(grid), *map(str, flags)]
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        # one worker frozen as soon as it exists: the run it holds is still training at the
        # limit on any machine, while the other worker trains the other two
        while not driver_workers(proc.pid):
            assert proc.poll() is None and time.monotonic() - started < 120
            time.sleep(0.02)
        frozen = driver_workers(proc.pid)[0]
        os.kill(frozen, signal.SIGSTOP)
        said, _ = proc.communicate(timeout=LIMIT_S + 120)
    finally:
        proc.kill()
    assert proc.returncode == 124, said[-2000:]
    assert time.monotonic() - started < LIMIT_S + 60  # stopped at its limit, not waited out
    assert f"time limit of {LIMIT_S} s reached: 2 of 3 runs done" in said
    assert "run the same command to resume" in said
    deadline = time.monotonic() + 15
    while alive(frozen) and time.monotonic() < deadline:  # killed with the driver's stop
        time.sleep(0.1)
    assert not alive(frozen)
    first = {p.name: p.stat().st_mtime_ns for p in (out / "records").iterdir()}
    assert len(first) == 2 and all(r.ok for r in read_records(out).values())
    assert not (out / "runs.csv").exists()  # tables come with the end of the grid

    again = driver(grid, *flags)  # the next job: the same command line

    assert again.returncode == 0, again.stderr[-2000:]
    assert "3 runs, 2 already done, 1 to run" in again.stdout
    records = read_records(out)
    assert len(records) == 3 and all(r.ok for r in records.values())
    assert {name: (out / "records" / name).stat().st_mtime_ns for name in first} == first
    assert set(pd.read_csv(out / "runs.csv")["status"]) == {"ok"}
