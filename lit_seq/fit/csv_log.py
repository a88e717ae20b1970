"""``metrics.csv`` across resumes: a resumed fit continues its run's log instead of deleting it.

Lightning's CSVLogger deletes the file it starts in, so a resume lost every row logged
before the kill. :class:`RunCSVLogger` keeps the rows of the steps before the checkpoint it
resumes from (the run's book (``fit.book``) flushes the log with every checkpoint, so they are
on disk) and drops the later ones, which the resumed fit logs again: no step twice. It
overrides two methods of Lightning's ``ExperimentWriter`` (``_check_log_dir_exists`` and
``_rewrite_with_new_header``): private, so a Lightning upgrade must keep
``tests/test_resume.py`` green.
"""

import csv
import io
from pathlib import Path

from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.logger import rank_zero_experiment

from lit_seq.util.io import atomic_write_text


def _step(row: dict) -> int | None:
    """The step of a complete CSV row, None for a row a kill cut short."""
    if None in row or None in row.values():
        return None
    try:
        return int(float(row.get("step") or "nan"))
    except ValueError:
        return None


def _write_rows(path: Path, fieldnames: list[str], rows: list[dict]) -> None:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=fieldnames)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, text.getvalue())


class _ContinuedWriter(ExperimentWriter):
    """Lightning's CSV writer, keeping the rows of steps before ``resume_step`` on resume."""

    def __init__(self, log_dir: str, resume_step: int | None) -> None:
        self._resume_step = resume_step
        super().__init__(log_dir=log_dir)

    def _check_log_dir_exists(self) -> None:
        path = Path(self.metrics_file_path)
        if self._resume_step is None:  # a fresh fit, a fresh log (the run folder has its lock)
            path.unlink(missing_ok=True)
            return
        if not path.is_file():
            return
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            rows = [r for r in reader if (s := _step(r)) is not None and s < self._resume_step]
            header = list(reader.fieldnames or [])
        if not header:  # an empty file: nothing to keep
            path.unlink()
            return
        self.metrics_keys = header
        _write_rows(path, header, rows)

    def _rewrite_with_new_header(self, fieldnames: list[str]) -> None:
        # Lightning truncates the file and writes it again: a kill then would lose the log
        with open(self.metrics_file_path, newline="") as handle:
            rows = list(csv.DictReader(handle))
        _write_rows(Path(self.metrics_file_path), fieldnames, rows)


class RunCSVLogger(CSVLogger):
    """``metrics.csv`` in the run folder, continued by a resumed fit.

    Lightning's CSVLogger deletes the ``metrics.csv`` it starts in. Resumed from a
    checkpoint of step ``resume_step``, this one keeps the rows of the steps before it (all
    on disk: the run's book flushed them with the checkpoint) and drops the later ones,
    which the resumed fit logs again, so no step appears twice.
    """

    def __init__(self, run_dir: Path, resume_step: int | None = None) -> None:
        super().__init__(run_dir, name="", version="")
        self.resume_step = resume_step

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _ContinuedWriter(self.log_dir, self.resume_step)
        return self._experiment
