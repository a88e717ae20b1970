"""A grid's torch threads are its own option: the same per run whatever ``--workers`` is,
printed, recorded; the CPU is named precisely; a cell that mixes machines is flagged."""

import pandas as pd
import pytest

from lit_seq.ablate.__main__ import build_parser, main
from lit_seq.record import read_records
from lit_seq.results.machines import mixed_machines
from lit_seq.results.tables import aggregate_table, summary_markdown
from lit_seq.util.environment import describe_cpu
from tests.helpers import write_grid

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu avx512f

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
"""


def test_the_cpu_is_named_by_model_name_vendor_family_and_model():
    assert describe_cpu(CPUINFO) == "Intel(R) Xeon(R) Processor (GenuineIntel family 6 model 143)"
    epyc = "vendor_id : AuthenticAMD\ncpu family : 25\nmodel : 1\nmodel name : AMD EPYC\n"
    assert describe_cpu(epyc) == "AMD EPYC (AuthenticAMD family 25 model 1)"
    assert describe_cpu("processor : 0\nvendor_id : ARM\n") == ""  # no model name: platform's


def test_threads_default_to_one_per_run_whatever_the_workers():
    parser = build_parser()
    assert parser.parse_args(["g.yaml", "--workers", "2"]).threads == 1
    assert parser.parse_args(["g.yaml", "--threads", "3"]).threads == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["g.yaml", "--threads", "0"])


def _runs(threads: list[int], devices: list[str]) -> pd.DataFrame:
    """Runs of one cell, ``test/acc`` 0.5 each, on the given threads and CPUs."""
    n = len(threads)
    return pd.DataFrame(
        {
            "run_id": [f"c__seed={s}" for s in range(n)],
            "block": "b",
            "cell": "c",
            "task": "echo",
            "arch": "rnn",
            "seed": range(n),
            "main_metric": "acc",
            "train_length": 10,
            "target": None,
            "chance": 0.5,
            "status": "ok",
            "selected": True,
            "select_group": None,
            "select_axis": None,
            "target_reached": None,
            "device_name": devices,
            "cpu_capability": "AVX512",
            "torch_version": "2.13.0+cpu",
            "torch_threads": threads,
            "precision": "32-true",
            "test/acc": 0.5,
            **{c: 1.0 for c in ["params", "steps", "train_seconds", "samples_per_second"]},
            "target_seconds": None,
        }
    )


def test_a_cell_whose_seeds_differ_in_threads_or_cpu_is_flagged_in_its_tables():
    assert mixed_machines(_runs([1, 1, 1], ["A"] * 3)) == ""
    mixed = _runs([1, 1, 2], ["A", "B", "B"])
    assert mixed_machines(mixed) == "device_name A (1), B (2); torch_threads 1 (2), 2 (1)"
    aggregate = aggregate_table(mixed)
    assert aggregate.loc[0, "mixed_machines"] == mixed_machines(mixed)
    summary = summary_markdown(aggregate)
    assert "machines differ" in summary and "torch_threads 1 (2), 2 (1)" in summary
    assert "machines differ" not in summary_markdown(aggregate_table(_runs([1, 1], ["A"] * 2)))


@pytest.mark.integration
def test_one_or_two_workers_give_the_same_digits_with_one_thread_each(tmp_path, capsys):
    # a recurrent and a transformer run; before --threads, one worker took every CPU (2
    # threads on a 2-core machine) and two workers one each. Runs this small give the same
    # digits on 1 and 2 threads (measured), so the thread count each record names is what
    # catches a grid that sets threads from its workers again; larger models differ
    # (docs/grids.md, "What moves a run's digits")
    grid = write_grid(
        tmp_path,
        "threads",
        "seeds: [0]\nblocks:\n- {axes: {task: [echo], arch: [rnn, transformer]}}\n",
    )
    metrics = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        argv = [str(grid), "--out", str(out), "--workers", str(workers), "--wandb", "off"]
        assert main(argv) == 0
        assert f"on {workers} local worker(s), 1 torch thread per run" in capsys.readouterr().out
        records = read_records(out)
        assert {r.torch_threads for r in records.values()} == {1}
        metrics[workers] = {i: (r.metrics, r.val_metrics) for i, r in records.items()}
    assert metrics[1] == metrics[2]
