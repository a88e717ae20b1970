"""Rewrite a grid folder's records with the paths relative to the folder, numbers untouched.

    python scripts/portable_records.py docs/results/mixers [docs/results/matrix ...]

Records written before their paths were relative (``lit_seq.record``) name the checkout of
the machine that ran the grid (``/work/main/docs/results/mixers/runs/<id>/...``). A reader
already resolves those against the folder it reads (``RunRecord.written_in``); this makes
the committed files say what they mean: ``runs/<id>/checkpoints/last.ckpt``,
``logs/<id>.log``. Only the path fields change, each from where the record was written
(the folder above its ``run_dir``'s ``runs/``): the script checks that every other field is
equal before and after, and a record already relative is left as it is. A folder a grid is
writing into must not be given: its driver writes records beside this script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lit_seq.record import RECORDS, RunRecord
from lit_seq.util.folder_paths import relative_to_folder
from lit_seq.util.io import atomic_write_json, read_json

# what a record stores relative to its folder (an offline W&B run's folder as well)
PATH_FIELDS = (*RunRecord.PATHS, "wandb_run")


def portable(data: dict) -> dict:
    """The record ``data`` with its absolute paths inside the folder it was written in made
    relative to it; every other field, and any path outside that folder, as it was."""
    written_in = RunRecord.written_in(data)
    if written_in is None:  # already relative (or no run folder named): nothing to move
        return dict(data)
    record = RunRecord.from_json(data)
    fields = [k for k in record.path_fields() if k in data]
    return {**data, **{k: relative_to_folder(data[k], written_in) for k in fields}}


def rewrite_folder(out_dir: Path) -> int:
    """Rewrite every record of ``out_dir`` in place; how many changed. ValueError, before
    anything is written, if a rewrite would change a field that is not a path."""
    changes = {}
    for path in sorted((Path(out_dir) / RECORDS).glob("[!.]*.json")):
        data = read_json(path)
        new = portable(data)
        others = set(data) | set(new)
        differ = [k for k in sorted(others - set(PATH_FIELDS)) if data.get(k) != new.get(k)]
        if differ:
            raise ValueError(f"{path}: the rewrite would change {differ}, not paths")
        if new != data:
            changes[path] = new
    for path, new in changes.items():
        atomic_write_json(path, new)
    return len(changes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="grid output folders")
    args = parser.parse_args(argv)
    for out_dir in args.folders:
        if not (out_dir / RECORDS).is_dir():
            print(f"portable_records: {str(out_dir)!r} has no {RECORDS}/ folder", file=sys.stderr)
            return 2
        total = len(list((out_dir / RECORDS).glob("[!.]*.json")))
        print(f"{out_dir}: {rewrite_folder(out_dir)} of {total} records rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
