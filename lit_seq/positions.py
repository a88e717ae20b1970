"""Where along a sequence a trained per-step model is right: accuracy by position span.

    python -m lit_seq.positions RUN_DIR [--checkpoint best|last] [--json FILE]

A length-generalisation score of 0.5 at twice the training length can mean "right on the
first half, wrong after it" or "half right everywhere"; this tells them apart. For a run of
a per-step task (``parity_sum``, ``echo``) it reloads the run's checkpoint and its data
(from ``RUN_DIR/config.yaml``: same seed, same test sets) and prints, for every test set,
the accuracy over each span of one training length: positions [0, N), [N, 2N), ...
"""

import argparse
import json
import sys
from pathlib import Path

import torch

from lit_seq.fit import BadInput, check_config
from lit_seq.record import FitResult
from lit_seq.results.markdown import markdown_table
from lit_seq.util.runtime import quiet_libraries

CHECKPOINTS = ("best", "last")


def find_checkpoint(run_dir: Path, which: str) -> Path:
    """The run's best (lowest val loss) or last checkpoint.

    The best one is the file fit recorded in ``metrics.json``, looked up by name in the run's
    own ``checkpoints/`` so that a moved or copied run folder still works.
    """
    folder = run_dir / "checkpoints"
    if which == "last":
        found = [folder / "last.ckpt"]
    else:
        try:
            recorded = FitResult.read(run_dir).best_checkpoint
            found = [folder / Path(recorded).name] if recorded else []
        except (OSError, ValueError, TypeError):  # no record: the only best-* file
            found = sorted(folder.glob("best-*.ckpt"))
    found = [p for p in found if p.is_file()]
    if not found:
        raise FileNotFoundError(f"no {which} checkpoint in {folder}")
    return found[-1]


def load_run(run_dir: Path, which: str = "best"):
    """(system, datamodule) of a finished run, the datamodule set up for testing.

    Both are built from the run's own ``config.yaml`` by ``lit_seq.fit`` (same seed, same
    test sets), then the checkpoint's weights are loaded (tensors only: ``weights_only``).
    """
    config = run_dir / "config.yaml"
    if not config.is_file():
        raise FileNotFoundError(f"{run_dir} has no config.yaml: not a run folder of lit_seq.fit")
    built = check_config(["--config", str(config), "--wandb=off"])
    datamodule, system = built.datamodule, built.model
    if not hasattr(system, "step_hits"):
        raise ValueError(
            f"{type(system).__name__} has no per-step predictions; "
            "positions applies to per-step tasks (parity_sum, echo)"
        )
    checkpoint = torch.load(find_checkpoint(run_dir, which), map_location="cpu", weights_only=True)
    system.load_state_dict(checkpoint["state_dict"])
    datamodule.setup("test")
    return system.eval(), datamodule


@torch.no_grad()
def span_accuracy(system, datamodule) -> dict[str, list[float | None]]:
    """Per test set: accuracy over each span of one training length (None: nothing counted)."""
    span = datamodule.train_length
    result = {}
    for prefix, loader in zip(datamodule.test_prefixes, datamodule.test_dataloader(), strict=True):
        hits_sum, counted = None, None
        for batch in loader:
            hits, valid = system.step_hits(batch)
            hits = (hits & valid).sum(0)
            valid = valid.sum(0)
            hits_sum = hits if hits_sum is None else hits_sum + hits
            counted = valid if counted is None else counted + valid
        spans = []
        for start in range(0, len(counted), span):
            n = int(counted[start : start + span].sum())
            spans.append(int(hits_sum[start : start + span].sum()) / n if n else None)
        result[prefix] = spans
    return result


def format_table(result: dict[str, list[float | None]], span: int) -> str:
    """Markdown: one row per test set, one column per span ("-": nothing counted there)."""
    width = max(len(v) for v in result.values())
    header = ["test set"] + [f"[{i * span}, {(i + 1) * span})" for i in range(width)]
    rows = []
    for prefix, spans in result.items():
        cells = ["-" if a is None else f"{a:.3f}" for a in spans]
        rows.append([prefix, *cells, *[""] * (width - len(cells))])
    return markdown_table(header, rows).rstrip("\n")


def main(argv: list[str] | None = None) -> int:
    quiet_libraries()
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.positions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, help="a finished run folder of lit_seq.fit")
    parser.add_argument("--checkpoint", choices=CHECKPOINTS, default="best")
    parser.add_argument("--json", type=Path, help="also write the spans as JSON here")
    args = parser.parse_args(argv)
    try:
        system, datamodule = load_run(args.run_dir, args.checkpoint)
    except (FileNotFoundError, ValueError, KeyError, BadInput) as err:
        print(f"lit_seq.positions: error: {err}", file=sys.stderr)
        return 2
    result = span_accuracy(system, datamodule)
    print(f"accuracy by position span of {args.run_dir} ({args.checkpoint} checkpoint)")
    print(format_table(result, datamodule.train_length))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
