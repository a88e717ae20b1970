"""Is a seed's luck in its cells the luck of the sequences it was scored on? A test.

    python scripts/seed_luck_rescore.py results/pe_extrapolation [--data_seed 9999]

A run's range evaluation draws its sequences from the run's own seed
(``lit_seq.systems.length_score.range_generator``), so every run of a task with seed s is
scored on the same sequences, and one easy draw could make seed s the best of many cells.
This re-scores every reported run of a grid (``selected`` not False, ``ok``) as
``python -m lit_seq.evaluate RUN --data_seed D`` would (the run's own range evaluation: max
factor, step and n read from its ``config.yaml``), so that all runs of a task are scored on one
shared draw, then runs the report's seed-luck test (``lit_seq.results.seed_wins``) on the
re-scored column beside the original. If the top seed's excess wins vanish on the shared
draw, the sequences were the cause; if they stay, the models were.

Scores go to each run folder's ``eval-seed<D>.json`` (a run already re-scored is read, not
re-run: the script resumes) and the comparison to ``GRID/seed_luck_rescore.csv``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

from lit_seq.evaluate import evaluate
from lit_seq.fit.scoring import RangeEval
from lit_seq.results.best import score_column
from lit_seq.results.seed_wins import seed_wins


def rescore(run_dir: Path, data_seed: int) -> dict:
    """The run's metrics re-scored on data seed ``data_seed`` (read back when already done):
    its range evaluation as it ran (max factor, step, n from its ``config.yaml``), no test
    set past N (``gen_factors`` empty: the range is the score read here)."""
    out = run_dir / f"eval-seed{data_seed}.json"
    if not out.exists():
        config = yaml.safe_load((run_dir / "config.yaml").read_text())["range_eval"]
        keep = {k: config[k] for k in ("max_factor", "step", "n", "sub_batch") if k in config}
        evaluate(run_dir, [], data_seed, RangeEval(**keep), f"seed{data_seed}")
    return json.loads(out.read_text())["metrics"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid", type=Path, help="a grid's output folder (results/<grid>)")
    parser.add_argument("--data_seed", type=int, default=9999, help="the shared draw's seed")
    args = parser.parse_args(argv)
    sys.argv = sys.argv[:1]  # LightningCLI, built per run below, reads only its own args
    runs = pd.read_csv(args.grid / "runs.csv")
    reported = runs[runs["selected"].ne(False) & (runs["status"] == "ok")].copy()
    cells, rows = {}, []
    for task, task_runs in reported.groupby("task", sort=False):
        score = score_column(runs[runs["task"] == task], task_runs["main_metric"].iloc[0])
        cells.update(dict.fromkeys(task_runs["cell"], score))
        for index, run in task_runs.iterrows():
            metrics = rescore(args.grid / "runs" / run["run_id"], args.data_seed)
            reported.loc[index, "shared_draw"] = metrics[score]
            rows.append(
                {
                    "run_id": run["run_id"],
                    "cell": run["cell"],
                    "seed": run["seed"],
                    "score": score,
                    "own_draw": run[score],
                    "shared_draw": metrics[score],
                }
            )
    table = pd.DataFrame(rows)
    table.to_csv(args.grid / "seed_luck_rescore.csv", index=False)
    own = seed_wins(reported, cells)
    shared = seed_wins(reported, dict.fromkeys(cells, "shared_draw"))
    for name, result in (("own draws", own), (f"one shared draw (seed {args.data_seed})", shared)):
        print(
            f"{name}: wins {result.wins} over {result.cells} untied cells ({result.tied} tied); "
            f"top seed {result.top_seed}, block-permutation p = {result.p:.4g} "
            f"({result.method}): {result.verdict}"
        )
    moved = (table["shared_draw"] - table["own_draw"]).abs()
    print(
        f"{len(table)} runs re-scored; |shared - own| median {moved.median():.4f}, "
        f"max {moved.max():.4f} -> {args.grid / 'seed_luck_rescore.csv'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
