"""What moved between two publications of one Table 2 grid, row by row.

    python -m lit_seq.results.moves OLD_DIR NEW_DIR

reads each folder's ``paper.csv`` (``lit_seq.report DIR --paper deletang2023`` writes it)
and prints one Markdown row per (task, arch): the paper's number, each publication's mean
score with its interval, its seeds that solve the row, and both verdict columns (by the
maximum over runs, in every seed), with ``moved`` naming the verdicts that changed. Made for
issue 42's republish: the `chomsky` grid with our models (``docs/results/chomsky``) against
the same grid with Delétang et al.'s (``docs/results/chomsky_faithful``), so a page can say
which rows moved and which did not. A row only one side has is listed with the other side
blank, so nothing drops out unseen; while the new grid runs, a verdict it has no run for yet
(the every-seed one before its reported seeds) reads "not yet run" and is not counted as moved.

Worked example: old even_pairs/rnn mean 52.9, verdict inconclusive; new mean 100.0,
verdict agree -> one row, moved "verdict, verdict_every_seed" when both columns changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from lit_seq.results.markdown import markdown_table

KEY = ["task", "arch"]
VERDICTS = ["verdict", "verdict_every_seed"]
SIDE = ["mean", "ci_low", "ci_high", "solved_seeds", "n", *VERDICTS]


def read_paper(folder: Path) -> pd.DataFrame:
    """``folder/paper.csv``; FileNotFoundError (one line) naming what writes it."""
    path = Path(folder) / "paper.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} does not exist; write it with python -m lit_seq.report {folder} "
            "--paper deletang2023"
        )
    return pd.read_csv(path)


def verdict_moves(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, arch) of either table, in the old table's order then the new's:
    ``paper`` (Table 2's number, or "solved (text)" / "unsolved (text)" where the page had
    only the text), ``old_*`` and ``new_*`` of :data:`SIDE`, and ``moved``: the verdict
    columns that differ, comma-separated, blank when none did, or "only in old" / "only in
    new" for a row one side lacks."""
    sides = []
    for name, table in (("old", old), ("new", new)):
        paper = table["paper"].astype(object).where(table["paper"].notna(), None)
        text = (
            table["paper_solved"]
            .map({True: "solved (text)", False: "unsolved (text)"})
            .fillna("not confirmed")
        )
        sides.append(
            table[[*KEY, *SIDE]]
            .rename(columns={c: f"{name}_{c}" for c in SIDE})
            .assign(paper=paper.fillna(text))
        )
    joined = sides[0].merge(sides[1], on=KEY, how="outer", suffixes=("", "_new"), indicator=True)
    joined["paper"] = joined["paper"].fillna(joined.pop("paper_new"))
    order: dict[tuple, int] = {}
    for key in [*zip(old.task, old.arch, strict=True), *zip(new.task, new.arch, strict=True)]:
        order.setdefault(key, len(order))
    joined = joined.iloc[
        sorted(range(len(joined)), key=lambda i: order[tuple(joined.loc[i, KEY])])
    ].reset_index(drop=True)
    lonely = {"left_only": "only in old", "right_only": "only in new"}
    joined["moved"] = [lonely.get(row["_merge"]) or _moved(row) for _, row in joined.iterrows()]
    return joined.drop(columns="_merge")


def _moved(row: pd.Series) -> str:
    """The verdicts both sides have and that differ; one only the old side has (the new grid
    has not run the row's reported seeds yet) is named as such, not counted as moved."""
    moved = []
    for v in VERDICTS:
        old, new = row[f"old_{v}"], row[f"new_{v}"]
        if pd.isna(old) or pd.isna(new):
            if pd.notna(old):
                moved.append(f"{v} not yet in new")
        elif old != new:
            moved.append(v)
    return ", ".join(moved)


def _side(row: pd.Series, side: str) -> str:
    if pd.isna(row[f"{side}_mean"]):
        return ""
    interval = (
        f"{row[f'{side}_mean']:.1f} [{row[f'{side}_ci_low']:.1f}, {row[f'{side}_ci_high']:.1f}]"
    )
    return f"{interval}, {row[f'{side}_solved_seeds']:.0f}/{row[f'{side}_n']:.0f} solve"


def _verdicts(row: pd.Series, side: str) -> str:
    """The side's verdicts as "agree / disagree"; blank for a side without the row, "not yet
    run" for a verdict the side lacks (the every-seed one before any reported seed ran)."""
    values = [row[f"{side}_{v}"] for v in VERDICTS]
    if all(pd.isna(v) for v in values):
        return ""
    return " / ".join("not yet run" if pd.isna(v) else str(v) for v in values)


def moves_markdown(moves: pd.DataFrame) -> str:
    """The table :func:`verdict_moves` returns, as Markdown."""
    header = ["task", "arch", "paper", "old: mean [95% CI], seeds solving", "old verdicts"]
    header += ["new: mean [95% CI], seeds solving", "new verdicts", "moved"]
    rows = []
    for _, row in moves.iterrows():
        verdicts = {s: _verdicts(row, s) for s in ("old", "new")}
        rows.append(
            [row["task"], row["arch"], row["paper"], _side(row, "old"), verdicts["old"]]
            + [_side(row, "new"), verdicts["new"], row["moved"]]
        )
    return markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m lit_seq.results.moves OLD_DIR NEW_DIR", file=sys.stderr)
        return 2
    try:
        old, new = (read_paper(Path(a)) for a in args)
    except FileNotFoundError as error:
        print(f"lit_seq.results.moves: error: {error}", file=sys.stderr)
        return 2
    print(moves_markdown(verdict_moves(old, new)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
