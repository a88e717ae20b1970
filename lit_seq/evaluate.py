"""Score a trained checkpoint on its task's test sets, at any lengths and data seed.

    python -m lit_seq.evaluate RUN_DIR_OR_CKPT [--gen_factors 2 4 8] [--data_seed N]
                               [--range_eval.max_factor F] [--range_eval.step S] [--tag TAG]

The run folder's ``config.yaml`` rebuilds the data module (with the lengths and seed asked
for) and the checkpoint the system (its own hyperparameters and weights: a run folder's
best checkpoint unless a file is named, or its last one when its record scored the final
parameters, ``score_weights: last``). Every test set, the training length and ``k x`` it
per gen factor, is scored by the system's own metrics (``SequenceSystem.test_metrics_for``,
``lit_seq.fit.scoring.score``: what ``metrics.json`` means by the same key); with
``--range_eval.max_factor`` the accuracy-vs-length curve too. The result goes to
``RUN_DIR/eval-<tag>.json``; ``metrics.json`` (the training record) is never touched.

Sinusoidal, rotary, alibi, relative and no positions, and the recurrent backbones, read any
length. A learnable table (``max_len`` trained rows) and randomized positions (drawn from
[0, max_len), or [0, pos_range) when given) do not: longer lengths are refused in one line
naming the encoding, its limit and the longest factor that fits. Exit codes: 0 scored, 2
bad input.
"""

import argparse
import importlib
import sys
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from lit_seq.fit import check_config
from lit_seq.fit.checkpoints import CHECKPOINTS, LAST, CheckpointError, check_fits, read_checkpoint
from lit_seq.fit.scoring import (
    RangeEval,
    context_floors,
    length_curve,
    past_training_means,
    score,
)
from lit_seq.record import FitResult
from lit_seq.util.checks import BadInput
from lit_seq.util.io import atomic_write_json
from lit_seq.util.runtime import quiet_libraries

CONFIG_FILE = "config.yaml"  # in a run folder: written by lit_seq.fit


def _scored_last(run_dir: Path) -> bool:
    """Whether the run's record scored its final parameters (``score_weights: last``)."""
    try:
        return FitResult.read(run_dir).score_weights == "last"
    except (OSError, ValueError, TypeError):  # no record yet: the best checkpoint
        return False


def find_run(path: Path) -> tuple[Path, Path]:
    """(run folder, checkpoint) of ``path``: a run folder (the checkpoint its record scored:
    its best, or ``last.ckpt``) or a checkpoint file in one; BadInput if it is neither."""
    path = Path(path)
    if path.is_dir():
        best = sorted((path / CHECKPOINTS).glob("best-*.ckpt"))
        if _scored_last(path):
            best = []
        checkpoint = best[-1] if best else path / CHECKPOINTS / LAST
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
        with torch.no_grad():
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
) -> tuple[Path, dict]:
    """Score ``run`` (a run folder or a checkpoint); write and return (its file, the result)."""
    run_dir, checkpoint = find_run(run)
    config = run_dir / CONFIG_FILE
    if not config.is_file():
        raise BadInput(f"run={str(run)!r}: {str(config)!r} does not exist; is it a run folder?")
    # max_len and pos_range null: the model built here is dropped (the checkpoint's rules),
    # so a max_len or pos_range given at training may not refuse the longer test sets asked
    # for now (check_lengths refuses them by the checkpoint's own limit)
    args = [
        "--config",
        str(config),
        "--wandb=off",
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
    metrics = {}
    tests = zip(
        datamodule.test_prefixes, datamodule.test_lengths, datamodule.test_sets, strict=True
    )
    for prefix, length, test_set in tests:
        found = system.test_metrics_for(length, train_length)
        values = score(system, test_set.tensors, found, datamodule.batch_size) or {}
        metrics.update({f"{prefix}/{name}": round(v, 6) for name, v in values.items()})
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
    }
    path = run_dir / f"eval-{tag}.json"
    atomic_write_json(path, result)
    return path, result


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.evaluate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run", type=Path, help="a run folder of lit_seq.fit, or a checkpoint")
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
        )
    except BadInput as err:
        print(f"lit_seq.evaluate: error: {err}", file=sys.stderr)
        return 2
    console = Console()
    table = Table("metric", "value")
    table.columns[1].justify = "right"
    for key, value in sorted(result["metrics"].items()):
        table.add_row(key, f"{value:.4g}")
    console.print(
        f"{result['task']}, checkpoint at step {result['step']}, data seed {result['data_seed']}",
        highlight=False,
    )
    console.print(table)
    console.print(f"written: {path}", highlight=False, soft_wrap=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
