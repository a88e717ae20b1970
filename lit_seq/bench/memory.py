"""Memory: peak RSS of one default fit, and RSS of a long-lived worker over many fits.

Each measurement runs in a fresh child process (``python -m lit_seq.bench.memory KIND
ARGS_JSON RESULT_FILE``) so that nothing the benchmark itself holds is counted:

- ``fit``: one ``lit_seq.fit`` run (default config unless told otherwise); peak RSS from
  ``getrusage`` and, on a GPU, ``torch.cuda.max_memory_allocated``.
- ``worker``: ``runs`` consecutive tiny fits in one process, as a grid worker runs cells,
  with the RSS after each (after ``gc.collect()``). growth = rss[-1] / rss[0] - 1: memory
  that keeps growing after the first run is memory kept from run to run.
"""

import gc
import json
import os
import resource
import sys
from pathlib import Path

import torch

from lit_seq.ablate.run_one import GRID_FLAGS
from lit_seq.bench.common import TINY_FIT, fit_args, log, output_tail, run_module
from lit_seq.util.runtime import end_with

TARGET_GROWTH = 0.10


def current_rss_mb() -> float:
    """Resident set size now (Linux ``/proc``); the peak so far where /proc is missing."""
    try:
        with open("/proc/self/statm") as handle:
            pages = int(handle.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return peak_rss_mb()


def peak_rss_mb() -> float:
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return kib / 2**20 if sys.platform == "darwin" else kib / 2**10


def _cuda_peak_mb() -> float | None:
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None


def child_fit(args: list[str]) -> dict:
    from lit_seq.fit import cli_main

    cli_main(args)
    return {"peak_rss_mb": round(peak_rss_mb(), 1), "cuda_peak_mb": _cuda_peak_mb()}


def child_worker(args: list[str], runs: int, root: str) -> dict:
    from lit_seq.fit import cli_main

    rss, cuda = [], []
    for i in range(runs):
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        cli_main([*args, f"--run_dir={root}/run{i:02d}"])
        gc.collect()
        rss.append(round(current_rss_mb(), 1))
        cuda.append(_cuda_peak_mb())
    return {"rss_mb": rss, "cuda_peak_mb": cuda, "peak_rss_mb": round(peak_rss_mb(), 1)}


def _in_child(kind: str, payload: dict, result_file: Path) -> dict:
    proc = run_module("lit_seq.bench.memory", kind, json.dumps(payload), str(result_file))
    if proc.returncode != 0:
        tail = " | ".join(output_tail(proc, 3))
        raise RuntimeError(f"memory child {kind!r} failed ({proc.returncode}): {tail}")
    return json.loads(result_file.read_text())


def run(quick: bool, workdir: Path) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    log("memory: one default fit in a child process")
    args = fit_args(*(TINY_FIT if quick else ()), run_dir=workdir / "fit")
    fit = _in_child("fit", {"args": args}, workdir / "fit.json")
    runs = 5 if quick else 20
    log(f"memory: {runs} consecutive tiny fits in one worker process")
    # run_dir is added per run, as a grid worker does
    args = fit_args(*TINY_FIT, *GRID_FLAGS)
    payload = {"args": args, "runs": runs, "root": str(workdir)}
    worker = _in_child("worker", payload, workdir / "worker.json")
    rss = worker["rss_mb"]
    growth = rss[-1] / rss[0] - 1
    rows = [
        {"what": "one default fit (signal/transformer)", "peak_rss_mb": fit["peak_rss_mb"]},
        {
            "what": f"worker, {runs} tiny fits",
            "peak_rss_mb": worker["peak_rss_mb"],
            "rss_first_mb": rss[0],
            "rss_last_mb": rss[-1],
            "growth": round(growth, 3),
        },
    ]
    return {
        "target": f"worker growth <= {TARGET_GROWTH:.0%} after the first run",
        "notes": [
            "children are fresh processes; W&B off; worker fits: default config, 20 steps, "
            "progress bar and model summary off (as grid workers run), RSS after gc.collect()",
        ],
        "rows": rows,
        "worker_rss_mb": rss,
        "fit_cuda_peak_mb": fit["cuda_peak_mb"],
        "worker_cuda_peak_mb": worker["cuda_peak_mb"],
        "passed": growth <= TARGET_GROWTH,
    }


def _main(argv: list[str]) -> None:
    kind, payload, result_file = argv[0], json.loads(argv[1]), Path(argv[2])
    if kind == "fit":
        result = child_fit(payload["args"])
    elif kind == "worker":
        result = child_worker(payload["args"], payload["runs"], payload["root"])
    else:
        raise SystemExit(f"kind={kind!r} is not one of ['fit', 'worker']")
    result_file.write_text(json.dumps(result))


if __name__ == "__main__":
    end_with(lambda: _main(sys.argv[1:]))
