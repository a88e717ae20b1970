"""scripts/seed_luck_rescore.py: a grid's reported runs re-scored on one shared draw."""

import importlib.util

import pandas as pd
import pytest
import yaml

from tests.helpers import REPO, TINY_GRID, driver


def load_script():
    path = REPO / "scripts" / "seed_luck_rescore.py"
    spec = importlib.util.spec_from_file_location("seed_luck_rescore", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.integration
def test_a_shared_draw_equal_to_a_seed_reproduces_that_seeds_scores_and_resumes(tmp_path, capsys):
    spec = yaml.safe_load(TINY_GRID)
    spec["overrides"].update({"range_eval.max_factor": 2, "range_eval.step": 4})
    spec.update(name="luck", seeds=[0, 1], blocks=[{"axes": {"task": ["echo"]}}])
    spec["blocks"][0]["axes"]["arch"] = ["rnn", "lstm"]
    grid = tmp_path / "luck.yaml"
    grid.write_text(yaml.safe_dump(spec))
    out = tmp_path / "out"
    result = driver(grid, "--out", out, "--workers", "1", "--wandb", "off")
    assert result.returncode == 0, result.stderr[-2000:]

    script = load_script()
    assert script.main([str(out), "--data_seed", "0"]) == 0
    table = pd.read_csv(out / "seed_luck_rescore.csv")
    assert len(table) == 4 and set(table["score"]) == {"range_ood/acc_ood"}
    runs = pd.read_csv(out / "runs.csv").set_index("run_id")
    assert (table["own_draw"] == runs.loc[table["run_id"], "range_ood/acc_ood"].values).all()
    # data seed 0 is seed 0's own draw: its runs score exactly what they recorded
    own = table[table["seed"] == 0]
    assert (own["shared_draw"] == own["own_draw"]).all()
    printed = capsys.readouterr().out
    assert "own draws: wins" in printed and "one shared draw (seed 0)" in printed

    # a second call reads the runs' eval files back instead of scoring again
    files = sorted(out.glob("runs/*/eval-seed0.json"))
    stamps = [f.stat().st_mtime_ns for f in files]
    assert len(files) == 4
    assert script.main([str(out), "--data_seed", "0"]) == 0
    assert [f.stat().st_mtime_ns for f in files] == stamps
