"""The GPU grid on a time-limited machine that reaches no package index and sends back only a
few files: a plain script over lit_seq's own commands (docs/performance.md, "A time-limited
GPU machine").

    python scripts/gpu_campaign.py run [--out DIR] [--budget-s 480] [--stages tests,speed,grid]
                                       [--workers 4] [--compile auto|on|off] [--grid G]
                                       [--into DIR] [--wheels .whl]
    python scripts/gpu_campaign.py import ARCHIVE [--into docs/results/chomsky_gpu]

``run`` (on the GPU machine) spends at most ``--budget-s`` seconds, each stage a command
whose output goes straight into its log under ``--out`` (default $OUT), so a call cut short
still brings back what it printed:

1. ``tests``: ``pytest -m gpu`` (at most :data:`TESTS_S`), into ``gpu_tests.log``;
2. ``speed``: ``python -m lit_seq.bench --sections pack_step,pack`` (populations
   against solo steps) until :data:`STAGE1_S` is spent, into ``speed.log`` and ``speed.json``;
3. ``grid``: ``python -m lit_seq.ablate ablations/chomsky_gpu.yaml --out docs/results/
   chomsky_gpu --pack on --wandb off --time-limit LEFT`` for the rest less :data:`MARGIN_S`,
   into ``chomsky_gpu.log``: it resumes from the records in that folder (the working tree's,
   which travels) and stops resumably at its limit; then the folder's fingerprint, grid
   file, records and logs (no checkpoints) are packed into ``chomsky_gpu.tar.gz``, one file
   where the folder would be hundreds.

``--wheels DIR`` (default ``.whl``, made by ``scripts/gpu_wheels.sh``): wheels the machine
lacks, installed into /tmp/site and put on the children's PYTHONPATH, with this checkout.

``import`` (back here) takes the archive's records into the folder where it has none or a
failed one, keeps an ``ok`` one it has, and takes the archive's grid files when the grid
only gained runs; an archive of another version of the grid is refused. Then
``python -m lit_seq.report docs/results/chomsky_gpu`` and a commit: the next call resumes
from there. Exit codes: 0 done (the grid stopped at its limit included), 1 a stage failed,
2 bad input.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRID = REPO / "ablations" / "chomsky_gpu.yaml"
INTO = REPO / "docs" / "results" / "chomsky_gpu"
STAGES = ("tests", "speed", "grid")
STAGE1_S = 180.0  # tests and speed rows together
TESTS_S = 100.0  # the GPU tests took 48 s on an H200 (2026-12-04), collection included
MARGIN_S = 30.0  # after the grid: its stop, the archive, this script's exit
MIN_GRID_S = 60.0  # less than this left: the grid waits for the next call
TIME_LIMIT_EXIT = 124  # lit_seq.ablate's exit code at --time-limit: stopped, resumable
FOLDER_FILES = ("fingerprint.json", "grid.yaml")  # a grid folder's (lit_seq.ablate.folder)


def stage(command: list[str], log: Path, limit_s: float, env: dict) -> int | None:
    """Run ``command`` with its output appended to ``log``; SIGKILL after ``limit_s``
    seconds (None then). The grid stops itself before, at its --time-limit."""
    with open(log, "a", buffering=1) as sink:
        sink.write(f"$ {' '.join(command)}\n")
        try:
            done = subprocess.run(
                command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, env=env, timeout=limit_s
            )
            return done.returncode
        except subprocess.TimeoutExpired:
            sink.write(f"[gpu_campaign] stopped at its limit of {limit_s:.0f} s\n")
            return None


def child_env(wheels: Path) -> dict:
    """This checkout (and the carried wheels, installed once) on the children's path."""
    paths = [str(REPO)]
    if wheels.is_dir() and any(wheels.glob("*.whl")):
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
        pip += ["--target", "/tmp/site", "--upgrade", *map(str, wheels.glob("*.whl"))]
        subprocess.run(pip, check=True)
        paths.append("/tmp/site")
    old = os.environ.get("PYTHONPATH")
    path = os.pathsep.join([*paths, *([old] if old else [])])
    return {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "WANDB_MODE": "disabled"}


def pack(folder: Path, archive: Path) -> int:
    """``folder``'s grid files, records and logs as the tar.gz ``archive``; its records."""
    records = sorted((folder / "records").glob("*.json"))
    files = [folder / n for n in FOLDER_FILES if (folder / n).exists()]
    files += records + sorted((folder / "logs").glob("*.log"))
    with tarfile.open(archive, "w:gz") as tar:
        for path in files:
            tar.add(path, arcname=str(path.relative_to(folder)))
    return len(records)


def run(args: argparse.Namespace) -> int:
    start, out = time.monotonic(), args.out
    out.mkdir(parents=True, exist_ok=True)
    env, python = child_env(args.wheels), sys.executable
    failed = []
    if "tests" in args.stages:
        pytest = [python, "-m", "pytest", "-m", "gpu", "-q", "-n", "0", "-p", "no:cacheprovider"]
        if stage(pytest, out / "gpu_tests.log", TESTS_S, env) not in (0, 5):  # 5: none ran
            failed.append("tests")
    left = STAGE1_S - (time.monotonic() - start)
    if "speed" in args.stages and left > 10:
        bench = [python, "-m", "lit_seq.bench", "--sections", "pack_step,pack"]
        if stage([*bench, "--out", str(out / "speed.json")], out / "speed.log", left, env) != 0:
            failed.append("speed")
    left = args.budget_s - (time.monotonic() - start) - MARGIN_S
    if "grid" in args.stages and left >= MIN_GRID_S:
        ablate = [python, "-m", "lit_seq.ablate", str(args.grid), "--out", str(args.into)]
        ablate += ["--pack", "on", "--wandb", "off", "--workers", str(args.workers)]
        ablate += [f"--compile={args.compile}", "--time-limit", f"{left:.0f}"]
        code = stage(ablate, out / "chomsky_gpu.log", left + MARGIN_S / 2, env)
        if args.into.exists():
            pack(args.into, out / "chomsky_gpu.tar.gz")
        if code not in (0, TIME_LIMIT_EXIT):
            failed.append("grid")
    print(f"gpu_campaign: {time.monotonic() - start:.0f} s; failed: {failed or 'none'} -> {out}")
    return 1 if failed else 0


def _ok(path: Path) -> bool:
    try:
        return json.loads(path.read_text()).get("status") == "ok"
    except (OSError, ValueError):
        return False


def _grown(small: dict, large: dict) -> bool:
    """Whether ``large``'s grid is ``small``'s with runs added (lit_seq.ablate's growth rule)."""
    old, new = small.get("run_digests"), large.get("run_digests")
    return old is not None and new is not None and all(new.get(k) == v for k, v in old.items())


def import_archive(archive: Path, into: Path) -> tuple[int, int]:
    """Take ``archive``'s records into ``into`` (see the module); (taken, kept)."""
    with tempfile.TemporaryDirectory() as scratch:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar.getmembers():  # what pack() writes, nothing else
                if (
                    not member.isfile()
                    or member.name.startswith("/")
                    or ".." in Path(member.name).parts
                ):
                    raise ValueError(f"{archive}: {member.name!r} is not a grid folder's file")
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(scratch, **safe)
        theirs = json.loads((Path(scratch) / FOLDER_FILES[0]).read_text())
        mine_path = into / FOLDER_FILES[0]
        mine = json.loads(mine_path.read_text()) if mine_path.exists() else None
        same = mine is None or mine.get("fingerprint") == theirs.get("fingerprint")
        if not (same or _grown(mine, theirs) or _grown(theirs, mine)):
            raise ValueError(f"{archive} holds another version of the grid in {into}")
        (into / "records").mkdir(parents=True, exist_ok=True)
        (into / "logs").mkdir(exist_ok=True)
        if mine is None or _grown(mine, theirs):
            for name in FOLDER_FILES:
                shutil.copy2(Path(scratch) / name, into / name)
        taken = kept = 0
        for record in sorted((Path(scratch) / "records").glob("*.json")):
            if _ok(into / "records" / record.name):
                kept += 1
                continue
            shutil.copy2(record, into / "records" / record.name)
            for log in (Path(scratch) / "logs").glob(f"{glob.escape(record.stem)}.*log"):
                shutil.copy2(log, into / "logs" / log.name)
            taken += 1
    return taken, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python scripts/gpu_campaign.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    go = commands.add_parser("run", help="one call on the GPU machine")
    go.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "campaign_out"))
    go.add_argument("--budget-s", type=float, default=480.0, help="the call's seconds")
    go.add_argument("--stages", default=",".join(STAGES), help="default tests,speed,grid")
    go.add_argument("--workers", type=int, default=4, help="grid workers (default 4)")
    go.add_argument("--compile", choices=("auto", "on", "off"), default="auto")
    go.add_argument("--grid", type=Path, default=GRID, help="default ablations/chomsky_gpu.yaml")
    go.add_argument("--into", type=Path, default=INTO, help="its folder (default: the committed)")
    go.add_argument("--wheels", type=Path, default=Path(".whl"), help="wheels to install")
    back = commands.add_parser("import", help="take a brought-back archive's records")
    back.add_argument("archive", type=Path)
    back.add_argument("--into", type=Path, default=INTO, help="default docs/results/chomsky_gpu")
    args = parser.parse_args(argv)
    for name in ("out", "into", "grid", "wheels", "archive"):  # the children run in the checkout
        if getattr(args, name, None) is not None:
            setattr(args, name, getattr(args, name).absolute())
    if args.command == "import":
        try:
            taken, kept = import_archive(args.archive, args.into)
        except (OSError, ValueError, tarfile.TarError) as err:
            print(f"gpu_campaign: error: {err}", file=sys.stderr)
            return 2
        print(
            f"{args.into}: {taken} records taken, {kept} ok ones kept; next: python -m "
            f"lit_seq.report {args.into}, then commit the folder"
        )
        return 0
    args.stages = tuple(s for s in args.stages.split(",") if s)
    if not set(args.stages) <= set(STAGES) or args.budget_s <= 0 or args.workers < 1:
        parser.error(f"--stages from {','.join(STAGES)}, --budget-s > 0, --workers >= 1")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
