"""Data generation: the seeds' per-element Python loops vs lit_seq's vectorised DataModules,
and a fresh batch's draw against the training step it feeds (``fresh_draw``).

Both sides build the same number of examples of the same length. The lit_seq side is the
public path: construct the task's DataModule (tiny val/test splits, no length-
generalisation sets) and call ``setup("fit")``. ratio = loop seconds / lit_seq seconds.
The section's ``fresh`` table: `lit_seq.bench.fresh_draw` (draw <= 5% of a Delétang step).
"""

from collections.abc import Callable
from pathlib import Path

from lit_seq.bench import fresh_draw, seed_recipes
from lit_seq.bench.common import Stopwatch, alternating, log, median
from lit_seq.data import TASKS

TARGET = 500.0  # lit_seq at least 500x faster than the Python loops

# task -> (examples, length, what the baseline is)
SIZES = {
    "signal": (900, 64, "seed 000 make_signal_data: one sine per Python iteration"),
    "parity_sum": (5000, 20, "seed 002 generate_data: triple loop over (example, t, k)"),
    "echo": (4000, 10, "seed 002 echo data: one NumPy sequence, target set per element"),
    "seq2seq": (10000, 10, "no seed (no target): one token at a time in Python, lists"),
}


def _loop(task: str, n: int, length: int) -> Callable[[], object]:
    if task == "signal":
        return lambda: seed_recipes.signal_data_loop(n // 3, length)
    if task == "parity_sum":
        return lambda: seed_recipes.parity_sum_data_loop(n, length, 10)
    if task == "echo":
        return lambda: seed_recipes.echo_data_loop(n, length, 2)
    if task == "seq2seq":
        return lambda: seed_recipes.seq2seq_data_loop(n, 2, length, 10, "reverse")
    raise ValueError(f"task={task!r} has no loop baseline; known: {sorted(SIZES)}")


def _lit(task: str, n: int, length: int) -> Callable[[], object]:
    """Build ``n`` training examples through the DataModule; val/test kept minimal."""
    if task == "signal":
        kwargs = dict(n_per_class=n // 3, n_eval_per_class=1, length=length)
    elif task == "seq2seq":
        kwargs = dict(n_train=n, n_val=1, n_test=1, max_length=length)
    else:
        kwargs = dict(n_train=n, n_val=1, n_test=1, length=length)

    def build() -> object:
        datamodule = TASKS[task](gen_factors=[], **kwargs)
        datamodule.setup("fit")
        return datamodule

    return build


def measure(task: str, n: int, length: int, repeats: int, lit_inner: int = 20) -> dict:
    """Interleaved: each round times the loop once and lit_seq ``lit_inner`` times (it is
    ~1000x faster, so one call is too short to time alone); ratio of the medians."""
    loop, lit = _loop(task, n, length), _lit(task, n, length)
    seconds: dict[str, list[float]] = {"loop": [], "lit_seq": []}
    for _, side in alternating(list(seconds), repeats):
        if side == "loop":
            with Stopwatch() as sw:
                loop()
            seconds[side].append(sw.seconds)
        else:
            for _ in range(lit_inner):
                with Stopwatch() as sw:
                    lit()
                seconds[side].append(sw.seconds)
    loop_s, lit_s = median(seconds["loop"]), median(seconds["lit_seq"])
    ratio = loop_s / lit_s
    return {
        "task": task,
        "ratio": round(ratio, 1),
        "examples": n,
        "length": length,
        "loop_s": round(loop_s, 4),
        "lit_seq_s": round(lit_s, 6),
        "baseline": SIZES[task][2],
        # seq2seq has no seed generator: its row is for information only
        "passed": ratio >= TARGET if task != "seq2seq" else None,
    }


def run(quick: bool, workdir: Path | None = None) -> dict:
    repeats = 1 if quick else 3
    rows = []
    for task, (n, length, _) in SIZES.items():
        n = max(3, n // 20) if quick else n
        log(f"datagen: {task}, {n} x {length}, {repeats} round(s)")
        rows.append(measure(task, n, length, repeats))
    log("datagen: fresh batches drawn vs training steps, Delétang's configs")
    fresh = fresh_draw.run(quick)
    return {
        "target": f"ratio >= {TARGET:g}; fresh: {fresh['target']}",
        "repeats": repeats,
        "notes": [
            "ratio: Python-loop seconds / lit_seq DataModule seconds for the same examples "
            "(medians; the loops re-implement the seeds' generators)",
        ],
        "rows": rows,
        "fresh": fresh,
        "passed": all(r["passed"] is not False for r in rows) and fresh["passed"],
    }
