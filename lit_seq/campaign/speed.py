"""The campaign's speed rows: populations against solo runs, one JSON line per finished row.

    python -m lit_seq.campaign.speed --out speed.jsonl [--tiny]

Rows, most telling first, since the campaign stops this child at its time limit and keeps
the rows finished by then (each is appended and flushed as it ends):

1. ``pack_step`` (``lit_seq.bench.pack_step.measure``): one training step of K members as a
   population against the K members' solo steps, for the Delétang families the
   ``chomsky_gpu`` grid packs (reverse string x RNN, LSTM, Transformer at K = 1 and 10, a
   row's seeds) and the bench's transformer families (K = 1, 9, 27);
2. ``pack`` (``lit_seq.bench.pack.measure``): K whole fits (100 steps, tests included) one
   after another against the same K as one population, echo / RNN and signal / Transformer
   at K = 1, 3, 9, 27.

A row that fails (a Transformer with dropout cannot be vmapped before populations draw
their own masks) is written with its error and the next row runs. ``--tiny``: one row of
each kind at K = 2 and 2 steps, for the CPU run of the whole campaign in CI.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import traceback
from pathlib import Path

STRING_FAMILY = "deletang/reverse_string"  # configs/deletang/<task>: the grid's rows' configs
STEP_ROWS = [
    *((STRING_FAMILY, arch, k) for arch in ("rnn", "lstm", "transformer") for k in (1, 10)),
    *((task, "transformer", k) for task in ("signal", "parity_sum", "seq2seq") for k in (1, 9, 27)),
]
FIT_ROWS = [
    (task, arch, k)
    for k in (1, 3, 9, 27)
    for task, arch in (("echo", "rnn"), ("signal", "transformer"))
]
FIT_STEPS = 100  # lit_seq.bench.pack's STEPS: these rows read beside that section's
STEP_REPEATS = 5
TINY_STEP_ROWS = [("echo", "rnn", 2)]  # the string configs' test sets take seconds to draw
TINY_FIT_ROWS = [("echo", "rnn", 2)]


def rows(tiny: bool) -> list[tuple[str, str, str, int]]:
    """(kind, task, arch, K) in the order they run."""
    steps, fits = (TINY_STEP_ROWS, TINY_FIT_ROWS) if tiny else (STEP_ROWS, FIT_ROWS)
    return [("pack_step", *r) for r in steps] + [("pack", *r) for r in fits]


def measure(kind: str, task: str, arch: str, k: int, tiny: bool, new_dir) -> dict:
    """One row, by the bench section's own function."""
    if kind == "pack_step":
        from lit_seq.bench import pack_step

        return pack_step.measure(task, arch, k, 1 if tiny else STEP_REPEATS, new_dir)
    from lit_seq.bench import pack

    return pack.measure(task, arch, k, 2 if tiny else FIT_STEPS, new_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lit_seq.campaign.speed", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="JSON lines, one per row")
    parser.add_argument("--tiny", action="store_true", help="one row of each kind, K = 2")
    args = parser.parse_args(argv)
    from lit_seq.bench.common import device_name, run_dir_factory

    failed = 0
    with tempfile.TemporaryDirectory() as workdir, open(args.out, "a", buffering=1) as out:
        numbered = run_dir_factory(Path(workdir))

        def new_dir(label: str) -> Path:  # a Delétang family's task holds a '/'
            return numbered(label.replace("/", "_"))

        for kind, task, arch, k in rows(args.tiny):
            start = time.perf_counter()
            try:
                row = measure(kind, task, arch, k, args.tiny, new_dir)
            except Exception as err:  # one family's failure must not cost the other rows
                traceback.print_exc()
                row = {"task": task, "arch": arch, "k": k, "error": f"{type(err).__name__}: {err}"}
                failed += 1
            row = {"kind": kind, "device": device_name(), **row}
            row["row_s"] = round(time.perf_counter() - start, 1)
            out.write(json.dumps(row) + "\n")
            print(f"[speed] {json.dumps(row)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
