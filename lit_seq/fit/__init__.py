"""One durable fit: the CLI, the run folder, checkpoints, signals, logs, W&B and the record.

``python -m lit_seq.fit`` is :mod:`lit_seq.fit.__main__`; in-process callers (grid
workers, tests, the benchmark) use :func:`cli_main` and :func:`check_config`.
"""

from lit_seq.fit.cli import LitSeqCLI, build_cli, check_config
from lit_seq.fit.run import cli_main, run
from lit_seq.record import FitResult
from lit_seq.util.checks import BadInput

__all__ = ["BadInput", "FitResult", "LitSeqCLI", "build_cli", "check_config", "cli_main", "run"]
