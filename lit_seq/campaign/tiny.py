"""The campaign's tiny grid and its resume check: the whole campaign on a CPU, for CI.

The tiny grid is the device grid cut down (:func:`tiny_grid`): its recurrent reverse-string
rows (populations today, as every row will be), 2 seeds, 2 steps, sequences of length 6
and a handful of test sequences, so the same configs, overrides and packing run in seconds.
:func:`resume_check` then plays two device calls and a commit between them: call A is
stopped (SIGTERM, as at a call's limit) once its first population has its records; its
archive is imported into a stand-in for the committed folder; call B starts from a new
working folder seeded from that one, as a later loan would, and finishes the grid. It
passes when every run is ok and call B trained only what call A had not (call A's records
come through untouched).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from lit_seq.campaign.archive import import_archive
from lit_seq.campaign.grid_call import GridCall, run_call
from lit_seq.record import read_records

TINY_BLOCKS = ("reverse_string_rnn", "reverse_string_lstm")
TINY_OVERRIDES = {
    "data.init_args.length": 6,
    "data.init_args.gen_factors": [2],
    "data.init_args.batch_size": 8,
    "data.init_args.n_val": 8,
    "data.init_args.n_test": 8,
    "range_eval.max_factor": 2,
    "range_eval.step": 3,
    "range_eval.n": 8,
    "range_eval.sub_batch": 8,
    "steps": 2,
    "val_every": 2,
}


def tiny_grid(grid: Path, into: Path) -> Path:
    """Write the tiny version of ``grid`` (see the module) into ``into``; its path."""
    spec = yaml.safe_load(Path(grid).read_text())
    spec["name"] = f"{spec['name']}_tiny"
    spec["seeds"] = [0, 1]
    spec["overrides"] = {**spec.get("overrides", {}), **TINY_OVERRIDES}
    spec["blocks"] = [b for b in spec["blocks"] if b["name"] in TINY_BLOCKS]
    if len(spec["blocks"]) != len(TINY_BLOCKS):
        raise ValueError(f"{grid} lacks one of the blocks {TINY_BLOCKS} the tiny grid keeps")
    into.mkdir(parents=True, exist_ok=True)
    path = into / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def resume_check(call: GridCall, limit_s: float) -> dict:
    """Call A stopped after its first records, imported, call B resumed (see the module)."""
    committed = call.committed
    # one worker: the populations train one after another, so the stop lands while the
    # second trains (with several workers both could end before it: a flaky check)
    first = GridCall(**{**vars(call), "work": call.work / "call_a", "stop_after": 1, "workers": 1})
    result_a = run_call(first, limit_s)
    archive = call.out / f"{call.name}.tar.gz"
    import_archive(archive, committed)
    after_a = {i: r.finished_at for i, r in read_records(committed).items() if r.ok}
    second = GridCall(**{**vars(call), "work": call.work / "call_b", "stop_after": None})
    result_b = run_call(second, limit_s)
    import_archive(archive, committed)
    final = read_records(committed)
    untouched = all(final[i].finished_at == t for i, t in after_a.items())
    passed = (
        result_a.stopped == "condition"
        and 0 < len(after_a) < result_b.runs
        and result_b.seeded == len(after_a)
        and untouched
        and len(final) == result_b.runs
        and all(r.ok for r in final.values())
    )
    return {
        "passed": passed,
        "call_a": result_a.to_json(),
        "call_b": result_b.to_json(),
        "ok_after_call_a": len(after_a),
        "call_a_records_untouched": untouched,
        "runs_ok": sum(r.ok for r in final.values()),
    }


def describe(check: dict) -> str:
    """One line for the log."""
    a, b = check["call_a"], check["call_b"]
    return (
        f"resume check {'passed' if check['passed'] else 'FAILED'}: call A stopped "
        f"({a['stopped'] or 'not stopped'}) with {check['ok_after_call_a']} runs ok; call B "
        f"seeded {b['seeded']}, ended with {b['ok_after']}/{b['runs']} ok (exit {b['code']}); "
        f"call A's records untouched: {check['call_a_records_untouched']}; "
        + json.dumps({"rows_done": b["rows_done"]})
    )
