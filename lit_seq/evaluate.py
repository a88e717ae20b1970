"""Score a trained checkpoint on its task's test sets, at any lengths and data seed.

    python -m lit_seq.evaluate RUN_DIR_OR_CKPT [--checkpoint best|last] [--gen_factors 2 4 8]
                               [--data_seed N] [--range_eval.max_factor F]
                               [--range_eval.step S] [--tag TAG]

The run folder's ``config.yaml`` rebuilds the data module (with the lengths and seed asked
for) and the checkpoint the system (its own hyperparameters and weights, refused unless they
fit it). A run folder's checkpoint is the one its record scored (``--checkpoint scored``, the
default): its best one unless the record scored the final parameters (``score_weights:
last``); ``--checkpoint best`` is the best one (the one ``metrics.json`` names, looked up in
the folder's own ``checkpoints/`` so that a moved run still works; else its ``best-*`` file of
the latest step; else ``last.ckpt``) and ``--checkpoint last`` is ``last.ckpt``.
Every test set, the training length and ``k x`` it per gen factor, is scored by the system's
own metrics (``SequenceSystem.test_metrics_for``, ``lit_seq.fit.scoring.score``: what
``metrics.json`` means by the same key); with ``--range_eval.max_factor`` the
accuracy-vs-length curve too. A per-step task (``parity_sum``, ``echo``, ...) also gets its
accuracy by position span of one training length on every test set (``positions``: 0.5 at
2x can mean "first half right, second half wrong"). The result goes to
``RUN_DIR/eval-<tag>.json``; ``metrics.json`` (the training record) is never touched.

Sinusoidal, rotary, alibi, relative and no positions, and the recurrent backbones, read any
length. A learnable table (``max_len`` trained rows) and randomized positions (drawn from
[0, max_len), or [0, pos_range) when given) do not: longer lengths are refused in one line
naming the encoding, its limit and the longest factor that fits. Exit codes: 0 scored, 2
bad input.
"""

import argparse
import importlib
import re
import sys
from pathlib import Path

import torch
from rich.table import Table

from lit_seq.fit import check_config
from lit_seq.fit.checkpoints import CHECKPOINTS, LAST, CheckpointError, check_fits, read_checkpoint
from lit_seq.fit.scoring import (
    RangeEval,
    context_floors,
    length_curve,
    past_training_means,
    position_spans,
    score,
)
from lit_seq.record import FitResult
from lit_seq.results.markdown import markdown_table
from lit_seq.util.checks import BadInput
from lit_seq.util.console import output_console
from lit_seq.util.io import atomic_write_json
from lit_seq.util.runtime import end_with, quiet_libraries

CONFIG_FILE = "config.yaml"  # in a run folder: written by lit_seq.fit
WHICH = ("scored", "best", "last")  # a run folder's checkpoint to load


def _scored_last(run_dir: Path) -> bool:
    """Whether the run's record scored its final parameters (``score_weights: last``)."""
    try:
        return FitResult.read(run_dir).score_weights == "last"
    except (OSError, ValueError, TypeError):  # no record yet: the best checkpoint
        return False


def _best(run_dir: Path) -> Path | None:
    """The run's best checkpoint: the one its record names (by file name, in this folder's
    own checkpoints/), else its ``best-*`` file of the latest step; None if there is none."""
    folder = run_dir / CHECKPOINTS
    try:
        recorded = FitResult.read(run_dir).best_checkpoint
    except (OSError, ValueError, TypeError):  # no record yet (an interrupted fit)
        recorded = ""
    if recorded and (folder / Path(recorded).name).is_file():
        return folder / Path(recorded).name
    found = sorted(folder.glob("best-*.ckpt"), key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))
    return found[-1] if found else None


def find_run(path: Path, which: str = "scored") -> tuple[Path, Path]:
    """(run folder, checkpoint) of ``path``: a run folder (``which``: ``scored``, the one its
    record scored, its best unless ``score_weights: last``; ``best``, its best checkpoint, else
    ``last.ckpt``; ``last``) or a checkpoint file in one; BadInput if it is neither."""
    path = Path(path)
    if path.is_dir():
        if which == "scored":
            which = "last" if _scored_last(path) else "best"
        best = _best(path) if which == "best" else None
        checkpoint = best or path / CHECKPOINTS / LAST
        if not checkpoint.is_file():
            raise BadInput(f"run={str(path)!r} holds no checkpoint in {CHECKPOINTS}/")
        return path, checkpoint
    if not path.is_file():
        raise BadInput(f"run={str(path)!r} is neither a run folder nor a checkpoint file")
    run_dir = path.parent.parent if path.parent.name == CHECKPOINTS else path.parent
    return run_dir, path


def load_system(config_class: str, checkpoint_path: Path):
    """The system of ``checkpoint_path``: class ``config_class``, its saved hyperparameters
    and weights (tensors and plain values only are read); BadInput if it is not one."""
    try:
        checkpoint = read_checkpoint(checkpoint_path)
    except CheckpointError as err:
        raise BadInput(str(err)) from None
    module, _, name = config_class.rpartition(".")
    system_class = getattr(importlib.import_module(module), name)
    hparams = checkpoint.get("hyper_parameters") or {}
    system = system_class(**{k: v for k, v in hparams.items() if not k.startswith("_")})
    try:
        check_fits(checkpoint, system, checkpoint_path)
    except CheckpointError as err:
        raise BadInput(str(err)) from None
    system.load_state_dict(checkpoint["state_dict"])
    return system.eval(), int(checkpoint["global_step"])


def check_lengths(system, datamodule, gen_factors: list[int]) -> None:
    """BadInput unless the network reads sequences of every test length (a learnable table
    or randomized positions read at most the training run's ``max_len``, randomized ones
    given ``pos_range`` at most that)."""
    limit = system.length_limit  # None: any length
    longest = max(datamodule.test_lengths)
    if limit is None or longest <= limit:
        return
    # a trial batch at the longest length: the network's own check counts the positions it
    # adds (appended outputs, a decoder's BOS), and its message names the encoding
    batch = datamodule.draw(2, longest, torch.Generator().manual_seed(0))
    try:
        with torch.inference_mode():
            system.evaluate(batch, system.test_metrics_for(longest, datamodule.train_length))
    except ValueError as err:
        fits = limit // datamodule.train_length
        raise BadInput(
            f"gen_factors={gen_factors}: length {longest} does not fit this model ({err}); "
            f"at most factor {fits} for this checkpoint"
        ) from None


def evaluate(
    run: Path,
    gen_factors: list[int] | None = None,
    data_seed: int | None = None,
    range_eval: RangeEval | None = None,
    tag: str | None = None,
    which: str = "scored",
) -> tuple[Path, dict]:
    """Score ``run`` (a run folder, its ``which`` checkpoint, or a checkpoint); write and
    return (its file, the result)."""
    run_dir, checkpoint = find_run(run, which)
    config = run_dir / CONFIG_FILE
    if not config.is_file():
        raise BadInput(f"run={str(run)!r}: {str(config)!r} does not exist; is it a run folder?")
    # max_len and pos_range null: the model built here is dropped (the checkpoint's rules),
    # so a max_len or pos_range given at training may not refuse the longer test sets asked
    # for now (check_lengths refuses them by the checkpoint's own limit)
    args = [
        "--config",
        str(config),
        "--wandb.mode=off",
        "--ckpt_path=null",
        "--model.init_args.max_len=null",
        "--model.init_args.pos_range=null",
    ]
    if gen_factors is not None:
        args.append(f"--data.init_args.gen_factors={list(gen_factors)}")
    if data_seed is not None:
        args.append(f"--data.init_args.seed={data_seed}")
    cli = check_config(args)  # the data module as the fit built it, with these lengths / seed
    datamodule = cli.datamodule
    system, step = load_system(cli.config.model.class_path, checkpoint)
    factors = list(datamodule.gen_factors)
    check_lengths(system, datamodule, factors)
    datamodule.setup("test")
    train_length = datamodule.train_length
    metrics, positions = {}, {}
    tests = zip(
        datamodule.test_prefixes, datamodule.test_lengths, datamodule.test_sets, strict=True
    )
    for prefix, length, test_set in tests:
        found = system.test_metrics_for(length, train_length)
        values = score(system, test_set.tensors, found, datamodule.batch_size) or {}
        metrics.update({f"{prefix}/{name}": round(v, 6) for name, v in values.items()})
        if hasattr(system, "step_hits"):  # a per-step task: where along the sequence it fails
            spans = position_spans(system, test_set.tensors, train_length, datamodule.batch_size)
            positions[prefix] = spans
    range_eval = range_eval or RangeEval()
    range_eval.check()
    curve = length_curve(system, datamodule, range_eval)
    metrics.update(past_training_means(curve, train_length))
    tag = tag or f"{checkpoint.stem}-seed{datamodule.seed}-x{'-'.join(map(str, factors)) or '1'}"
    result = {
        "checkpoint": str(checkpoint),
        "step": step,
        "task": datamodule.name,
        "data_seed": datamodule.seed,
        "gen_factors": factors,
        "train_length": train_length,
        "test_lengths": datamodule.test_lengths,
        "main_metric": system.main_metric,
        "chance": system.chance_level,
        "context_floor": context_floors(datamodule, curve),
        "metrics": metrics,
        "curve": curve,
        "positions": positions,  # test set -> accuracy per span of train_length positions
    }
    path = run_dir / f"eval-{tag}.json"
    atomic_write_json(path, result)
    return path, result


def positions_table(positions: dict[str, list[float | None]], span: int) -> str:
    """Markdown: one row per test set, one column per span ("-": nothing counted there)."""
    width = max(len(v) for v in positions.values())
    header = ["test set"] + [f"[{i * span}, {(i + 1) * span})" for i in range(width)]
    rows = []
    for prefix, spans in positions.items():
        cells = ["-" if a is None else f"{a:.3f}" for a in spans]
        rows.append([prefix, *cells, *[""] * (width - len(cells))])
    return markdown_table(header, rows).rstrip("\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.evaluate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=Path, help="a run folder of lit_seq.fit, or a checkpoint")
    parser.add_argument(
        "--checkpoint",
        choices=WHICH,
        default="scored",
        help="a run folder's checkpoint: scored (the one its record scored: best, or last "
        "with score_weights last), best (lowest val/loss; last.ckpt if none) or last",
    )
    parser.add_argument(
        "--gen_factors",
        type=int,
        nargs="*",
        help="test sets at k x the training length (default: the run's own; none: only the "
        "training length)",
    )
    parser.add_argument("--data_seed", type=int, help="seed of the test sets (default: the run's)")
    parser.add_argument("--range_eval.max_factor", dest="max_factor", type=float, default=0.0)
    parser.add_argument("--range_eval.step", dest="step", type=int, default=1)
    parser.add_argument("--range_eval.n", dest="n", type=int, default=200)
    parser.add_argument("--tag", help="names the output: RUN_DIR/eval-TAG.json")
    return parser


def main(argv: list[str] | None = None) -> int:
    quiet_libraries()
    args = build_parser().parse_args(argv)
    try:
        path, result = evaluate(
            args.run,
            gen_factors=args.gen_factors,
            data_seed=args.data_seed,
            range_eval=RangeEval(max_factor=args.max_factor, step=args.step, n=args.n),
            tag=args.tag,
            which=args.checkpoint,
        )
    except BadInput as err:
        print(f"lit_seq.evaluate: error: {err}", file=sys.stderr)
        return 2
    console = output_console()
    table = Table("metric", "value")
    table.columns[1].justify = "right"
    for key, value in sorted(result["metrics"].items()):
        table.add_row(key, f"{value:.4g}")
    console.print(
        f"{result['task']}, checkpoint at step {result['step']}, data seed {result['data_seed']}",
        highlight=False,
    )
    console.print(table)
    if result["positions"]:
        console.print(f"accuracy by position span ({Path(result['checkpoint']).name}):")
        print(positions_table(result["positions"], result["train_length"]))
    console.print(f"written: {path}", highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    end_with(main)
