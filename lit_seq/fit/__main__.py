"""Train one configuration, test it, and write ``metrics.json``.

    python -m lit_seq.fit --config configs/signal/transformer.yaml [--key value ...]

LightningCLI conventions apply: ``--help``, ``--print_config``, several ``--config``s,
dotted overrides such as ``--model.arch lstm`` or ``--trainer.max_steps 500``. With no
``--config`` the default configuration (signal / transformer) is trained. The run folder
holds the checkpoints (best and last), ``metrics.csv``, the offline W&B run and
``metrics.json``; an interrupted fit resumes with ``--config DIR/config.yaml --run_dir DIR
--ckpt_path last`` (the command it prints as it stops), exactly where it stopped: same data
order, same RNG, same metrics as a fit never interrupted.

One run folder, one fit: a fit locks its folder for its whole life. SIGTERM (a preempted
job) or SIGINT stop a fit at a step boundary with ``last.ckpt`` saved there and exit status
143 or 130, with no ``metrics.json``; a resume finishes it.
"""

import errno
import sys

from lit_seq.fit.cli import build_cli, resume_command
from lit_seq.fit.header import print_metrics
from lit_seq.fit.run import run
from lit_seq.fit.signals import FitInterrupted
from lit_seq.record import diverged_loss
from lit_seq.util.checks import BadInput
from lit_seq.util.runtime import disk_full, end_with, quiet_libraries


def main() -> None:
    quiet_libraries()
    try:
        cli = build_cli()
    except BadInput as err:
        print(f"lit_seq.fit: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        record = run(cli)
    except FloatingPointError as err:  # the system's divergence rule: nothing to test
        print(
            f"lit_seq.fit: status: diverged: {err}; run folder {cli.book.run_dir}", file=sys.stderr
        )
        raise SystemExit(1) from None
    except FitInterrupted as err:
        hint = (
            f"resume with: {resume_command(cli.book.run_dir)}"
            if err.resumable
            else "nothing to resume: run it again"
        )
        print(f"lit_seq.fit: {err}; {hint}", file=sys.stderr)
        raise SystemExit(err.code) from None
    except Exception as err:
        # libraries word a full disk their own way: ENOSPC, or a failed write of a full disk
        if getattr(err, "errno", None) != errno.ENOSPC and not disk_full(cli.book.run_dir):
            raise
        # every file of the run is written atomically: what is there is whole, or absent
        print(
            f"lit_seq.fit: error: the disk holding {cli.book.run_dir} is full; free space, then "
            f"resume with: {resume_command(cli.book.run_dir)}",
            file=sys.stderr,
        )
        raise SystemExit(1) from None
    print_metrics(record)
    if bad := diverged_loss(record.metrics):  # finite in training, not on a test set
        print(f"lit_seq.fit: status: diverged: {bad} is {record.metrics[bad]}", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    end_with(main)
