"""The device campaign: one call of a GPU loan, and the import of what it brought back.

    python -m lit_seq.campaign run [--out DIR] [--budget-s S] [--stages tests,speed,chomsky]
                                   [--workers N] [--compile auto|on|off] [--tiny]
    python -m lit_seq.campaign import ARCHIVE [--into docs/results/chomsky_gpu]

``run`` (on the GPU machine; ``scripts/gpu_campaign.sh`` sets it up) spends at most
``--budget-s`` seconds: stage 1, the GPU tests and the population against solo speed rows
(3 minutes at most), then stage 2, the ``chomsky_gpu`` grid as populations, resumed from
the records committed in ``docs/results/chomsky_gpu`` and stopped, resumably, when the
budget is spent. Everything it writes to ``--out`` ($OUT on the device) is a file a call
brings back: the logs as they grow, the speed rows, ``summary.json`` and the grid's records
packed in ``chomsky_gpu.tar.gz``, rewritten as each run finishes. ``--tiny`` runs the same
campaign on a CPU in about a minute (GPU tests skipped, one speed row of each kind, a
2-row, 2-seed, 2-step grid stopped and resumed from its archive): CI's check that it works.

``import`` merges the records of a brought-back archive into the committed folder (runs
already ``ok`` there are kept); then ``python -m lit_seq.report docs/results/chomsky_gpu``
rebuilds its tables, and the folder is committed, so that the next call resumes from it.
Exit codes: 0 done, 1 a stage failed, 2 bad input. docs/performance.md gives the device
call's command line.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from lit_seq.campaign.archive import ArchiveError, import_archive
from lit_seq.campaign.stages import GRID_NAME, RUNNERS, STAGES, Campaign
from lit_seq.util.cli import comma_choices

GRID = Path("ablations") / f"{GRID_NAME}.yaml"
COMMITTED = Path("docs") / "results" / GRID_NAME


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lit_seq.campaign",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="one device call of the campaign")
    run.add_argument("--out", type=Path, help="what comes back (default $OUT, else campaign_out)")
    run.add_argument(
        "--work", type=Path, help="working folders (default .campaign; tiny: a temp one)"
    )
    run.add_argument(
        "--budget-s", type=float, default=480.0, help="the call's seconds (default 480)"
    )
    run.add_argument(
        "--stages",
        type=comma_choices("stages", STAGES),
        default=STAGES,
        help="default tests,speed,chomsky",
    )
    run.add_argument("--grid", type=Path, default=GRID, help=f"default {GRID}")
    run.add_argument(
        "--committed", type=Path, default=COMMITTED, help=f"resume from (default {COMMITTED})"
    )
    run.add_argument("--workers", type=int, default=4, help="grid workers on the GPU (default 4)")
    run.add_argument(
        "--compile",
        choices=("auto", "on", "off"),
        default="auto",
        help="passed to lit_seq.ablate (default auto: compiled on a GPU)",
    )
    run.add_argument("--tiny", action="store_true", help="the whole campaign on a CPU, tiny sizes")
    imp = commands.add_parser(
        "import", help="merge a brought-back archive into the committed folder"
    )
    imp.add_argument("archive", type=Path, help="chomsky_gpu.tar.gz from a device call")
    imp.add_argument("--into", type=Path, default=COMMITTED, help=f"default {COMMITTED}")
    return parser


def _device_ok(tiny: bool) -> str | None:
    """None when this machine can run the campaign, else why not."""
    import torch

    if tiny or torch.cuda.is_available():
        return None
    return "no CUDA device is visible; on a CPU run the tiny campaign (--tiny)"


def run(args: argparse.Namespace) -> int:
    if args.budget_s <= 0 or args.workers < 1:
        print(
            f"lit_seq.campaign: error: --budget-s={args.budget_s} and --workers={args.workers} must be > 0",
            file=sys.stderr,
        )
        return 2
    if (why := _device_ok(args.tiny)) is not None:
        print(f"lit_seq.campaign: error: {why}", file=sys.stderr)
        return 2
    out = args.out or Path(os.environ.get("OUT") or "campaign_out")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="campaign_") as scratch:
        work = args.work or (Path(scratch) if args.tiny else Path(".campaign"))
        # tiny: the committed folder is a stand-in that the resume check fills
        committed = work / "committed" if args.tiny else args.committed
        campaign = Campaign(
            out=out,
            work=work.absolute(),
            grid=args.grid,
            committed=committed.absolute(),
            budget_s=args.budget_s,
            stages=args.stages,
            tiny=args.tiny,
            workers=1 if args.tiny else args.workers,
            compile_mode=args.compile,
        )
        import torch

        device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        campaign.say(
            f"{'tiny ' if args.tiny else ''}campaign on {device}, torch {torch.__version__}: "
            f"stages {','.join(args.stages)}, budget {args.budget_s:.0f} s -> {out}"
        )
        campaign.record("device", {"name": device, "torch": torch.__version__, "tiny": args.tiny})
        failed = [s for s in args.stages if not RUNNERS[s](campaign)]
        campaign.say(
            f"done in {campaign.elapsed():.0f} s; {'failed: ' + ', '.join(failed) if failed else 'every stage ok'}"
        )
    return 1 if failed else 0


def import_(args: argparse.Namespace) -> int:
    try:
        merged = import_archive(args.archive, args.into)
    except ArchiveError as err:
        print(f"lit_seq.campaign: error: {err}", file=sys.stderr)
        return 2
    print(
        f"{args.into}: {merged.taken} records taken ({merged.failed} of them failed runs, which "
        f"run again), {merged.kept} already ok there kept; next: python -m lit_seq.report "
        f"{args.into}, then commit the folder"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run(args) if args.command == "run" else import_(args)


if __name__ == "__main__":
    sys.exit(main())
