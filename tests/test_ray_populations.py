"""Populations on Ray (``--executor ray --pack on|auto``): each pack is one Ray task, its
members recorded as the runs they are, exactly as the local executor records them.

The first tests start no Ray (the GPU fraction a population asks for, its settings, the
driver's line about the tasks). The Ray tests (markers ``ray`` and ``integration``) share one
in-process ``ray.init("local", num_cpus=2)``; a driver started as a subprocess joins it by
its address, so that driver can be killed with a real signal without taking Ray down.
"""

import os
import signal
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pandas as pd
import pytest

from lit_seq.ablate.__main__ import main
from lit_seq.ablate.common import BadGrid
from lit_seq.ablate.grid import load_grid
from lit_seq.ablate.jobs import GridJob, RayOptions
from lit_seq.ablate.packing import packs
from lit_seq.ablate.ray_executor import _header, pack_gpus, ray_options, run_ray
from lit_seq.record import read_records
from tests.helpers import REPO, write_grid

NEEDS_RAY = pytest.mark.skipif(find_spec("ray") is None, reason="needs pip install -e '.[ray]'")

# two packs of two echo / rnn seeds: one of 6 steps, one long enough to be killed in training
KILL_GRID = """seeds: [0, 1]
blocks:
- {name: short, axes: {task: [echo], arch: [rnn]}}
- {name: long, axes: {task: [echo], arch: [rnn], trainer.max_steps: [400],
                      trainer.val_check_interval: [200]}}
"""


def needs_ray(test):
    """The ``ray`` and ``integration`` markers, and a skip where the extra is not installed."""
    return pytest.mark.integration(pytest.mark.ray(NEEDS_RAY(test)))


@pytest.fixture(scope="module")
def ray_instance():
    import ray

    # "local": never a cluster someone else started on this machine
    ray.init("local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_a_population_asks_for_its_members_gpus_at_most_one():
    assert pack_gpus(RayOptions(), run_gpus=0.25, size=3) == 0.75
    assert pack_gpus(RayOptions(), run_gpus=0.3, size=3) == 0.9  # not 0.8999999999999999
    assert pack_gpus(RayOptions(), run_gpus=0.25, size=27) == 1.0  # one device
    assert pack_gpus(RayOptions(), run_gpus=1.0, size=2) == 1.0  # the default: one per GPU
    assert pack_gpus(RayOptions(), run_gpus=0.0, size=27) == 0.0  # a CPU cluster
    assert pack_gpus(RayOptions(pack_num_gpus=0.5), run_gpus=0.1, size=27) == 0.5


@NEEDS_RAY
def test_pack_num_gpus_comes_from_the_grid_or_the_flag_and_is_at_most_one(tmp_path, capsys):
    assert ray_options({"pack_num_gpus": 0.5}).pack_num_gpus == 0.5
    assert ray_options({"pack_num_gpus": 0.5}, pack_num_gpus=1).pack_num_gpus == 1.0
    with pytest.raises(BadGrid, match="pack_num_gpus=2 must be <= 1: a population is one device"):
        ray_options({"pack_num_gpus": 2})
    # --pack on is taken with ray; the flag is checked before anything is read or written
    grid = write_grid(
        tmp_path, "one", "seeds: [0]\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    )
    args = [str(grid), "--out", str(tmp_path / "out"), "--executor", "ray", "--pack", "on"]
    assert main([*args, "--ray-pack-num-gpus", "1.5", "--dry-run"]) == 2
    assert "--ray-pack-num-gpus: pack_num_gpus=1.5 must be <= 1" in capsys.readouterr().err
    assert main([*args, "--ray-pack-num-gpus", "0.5", "--dry-run"]) == 0
    with pytest.raises(SystemExit):  # argparse: a --ray-* flag without --executor ray
        main([str(grid), "--ray-pack-num-gpus", "0.5"])


def test_the_driver_says_what_each_task_asks_for(tmp_path):
    body = "seeds: [0, 1, 2, 3, 4, 5]\nblocks:\n- {axes: {task: [echo], arch: [rnn]}}\n"
    runs = load_grid(write_grid(tmp_path, "six", body))[1]
    units = [*packs(runs[:5], "on", "cuda", max_size=3), runs[5:6]]  # 3 + 2 together, 1 alone
    assert [len(u) for u in units] == [3, 2, 1]
    total = {"CPU": 8.0, "GPU": 2.0}
    assert _header(units, RayOptions(num_cpus=2), 0.25, total) == (
        "ray: 3 tasks of 2 CPU: 2 populations of 2-3 runs, 0.5-0.75 GPU each (K x a run's, at "
        "most 1); 1 run alone, 0.25 GPU each; cluster 8 CPU, 2 GPU"
    )
    assert _header(units[:1], RayOptions(pack_num_gpus=1), 0.25, total) == (
        "ray: 1 task of 1 CPU: 1 population of 3 runs, 1 GPU each (--ray-pack-num-gpus); "
        "cluster 8 CPU, 2 GPU"
    )
    alone = packs(runs, "off", "cuda")
    assert _header(alone, RayOptions(), 1, total) == (
        "ray: 6 tasks of 1 CPU, 1 GPU each; cluster 8 CPU, 2 GPU"
    )


@needs_ray
def test_a_member_that_fails_on_ray_keeps_the_others_records(ray_instance, tmp_path):
    # lr 1e300 diverges at once (a real failure) beside a good member of the same population
    body = "seeds: [0]\nblocks:\n- {axes: {task: [echo], arch: [rnn], lr: [0.01, 1.0e+300]}}\n"
    runs = load_grid(write_grid(tmp_path, "div", body))[1]
    out = tmp_path / "out"
    started, handed = [], []
    job = GridJob(out, "div", "off", ray=RayOptions(), pack="on")
    run_ray(runs, job, lambda run, worker: started.append(worker), handed.append)
    records = read_records(out)
    assert sorted(r.run_id for r in handed) == sorted(records) == sorted(r.run_id for r in runs)
    good, bad = (records[r.run_id] for r in runs)
    assert good.ok and good.metrics["test/acc"] > 0.5
    assert bad.status == "failed" and "training diverged" in bad.error
    assert {good.pack_size, bad.pack_size} == {2} and good.worker == bad.worker
    assert good.worker.startswith("ray-") and set(started) == {good.worker}  # one task
    assert Path(good.log).name == f"{runs[0].run_id}.pack.log" and Path(good.log).is_file()


def _holders(path: Path) -> list[int]:
    """The processes that have ``path`` open (Linux /proc)."""
    pids = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) == str(path) for fd in fd_dir.iterdir()):
                pids.append(int(fd_dir.parent.name))
        except OSError:  # gone, or not ours to read
            continue
    return pids


@needs_ray
@pytest.mark.slow  # ~150 s at load 12-14 on 2 cores: three drivers, of which two pay Ray workers
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_packed_grid_on_ray_killed_and_resumed_gives_the_local_digits(
    ray_instance, tmp_path, capsys
):
    grid = write_grid(tmp_path, "raypack", KILL_GRID)
    ids = [r.run_id for r in load_grid(grid)[1]]
    flags = ["--pack", "on", "--wandb", "off"]
    # unbroken, local executor: the digits to match (one worker: a run's digits do not depend
    # on the worker count, test_ablate_threads; a second would pay its own Lightning import)
    reference = tmp_path / "local"
    assert main([str(grid), "--out", str(reference), "--workers", "1", *flags]) == 0

    out = tmp_path / "ray"
    address = ["--executor", "ray", "--ray-address", ray_instance.get_runtime_context().gcs_address]
    command = [sys.executable, "-m", "lit_seq.ablate", str(grid), "--out", str(out)]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    proc = subprocess.Popen([*command, *flags, *address], cwd=REPO, **quiet)
    deadline = time.time() + 300
    try:  # the short population has finished while the long one trains: SIGKILL the driver
        while len(list((out / "records").glob("short*.json"))) < 2 or not list(
            (out / "logs").glob("long*.pack.log")
        ):
            assert proc.poll() is None and time.time() < deadline, "the short pack never ended"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
    finished = {p.name: p.read_bytes() for p in (out / "records").glob("*.json")}
    assert sorted(finished) == sorted(f"{i}.json" for i in ids if i.startswith("short"))
    [log] = (out / "logs").glob("long*.pack.log")
    deadline = time.time() + 60  # Ray ends the dead driver's tasks: nothing trains on
    while _holders(log) and time.time() < deadline:
        time.sleep(0.2)
    assert not _holders(log), "the killed driver's population still runs"

    capsys.readouterr()
    # the same command again, here: this process's Ray connection is the cluster's
    assert main([str(grid), "--out", str(out), *flags, "--executor", "ray"]) == 0
    assert "ray: 1 task of 1 CPU: 1 population of 2 runs, 0 GPU each" in capsys.readouterr().out
    for name, content in finished.items():
        assert (out / "records" / name).read_bytes() == content  # kept, not re-run
    records, local = read_records(out), read_records(reference)
    assert sorted(records) == sorted(local) == sorted(ids)
    for run_id, record in records.items():
        assert record.ok and record.pack_size == 2 and record.worker.startswith("ray-")
        assert record.metrics == local[run_id].metrics  # the same digits as unbroken, local
        csv = Path("runs", run_id, "metrics.csv")  # every logged loss and validation
        assert (out / csv).read_bytes() == (reference / csv).read_bytes()
    ray_table, local_table = (pd.read_csv(d / "runs.csv") for d in (out, reference))
    assert list(ray_table.columns) == list(local_table.columns)
