"""The PE comparison's setup (ablations/pe_extrapolation.yaml): one start-token rule for every
causal task, associative recall's floor, and what the shipped grid sets."""

import pytest
import torch
import torch.nn.functional as F
from jsonargparse import ArgumentParser

from lit_seq.ablate.grid import cell_args
from lit_seq.ablate.spec import expand, load_spec
from lit_seq.data import AssociativeRecallData, EchoData, SumModData, sum_mod_targets
from lit_seq.fit import check_config
from lit_seq.fit.scoring import context_floors
from lit_seq.record import FitResult
from lit_seq.systems import StepClassification
from lit_seq.util.assets import GRID_DIR
from tests.helpers import REPO, tiny_fit

PE_GRID = GRID_DIR / "pe_extrapolation.yaml"


def _draw_both(task, length: int, **options) -> tuple[dict, dict]:
    """One draw of ``task`` with the start marker and one without, from the same seed."""
    draws = []
    for marker in (True, False):
        dm = task(start_marker=marker, n_train=8, n_val=4, n_test=4, **options)
        draws.append(dm.draw(2, length, torch.Generator().manual_seed(5)))
    return draws[0], draws[1]


# ---- the start marker on every causal task --------------------------------------------------


def test_sum_mod_start_marker_worked_example_targets_unchanged():
    marked, plain = _draw_both(SumModData, length=5, modulus=5)
    x = marked["x"]  # (2, 5, 7): one-hot value (5), t % 2, then the marker
    assert x.shape == (2, 5, 7) and plain["x"].shape == (2, 5, 6)
    assert x[..., -1].tolist() == [[1, 0, 0, 0, 0]] * 2  # position 0 only
    assert torch.equal(x[..., :-1], plain["x"])  # the task's own channels untouched
    for key in ("y", "mask"):
        assert torch.equal(marked[key], plain[key])
    values = x[..., :5].argmax(-1)
    assert torch.equal(marked["y"], sum_mod_targets(values, 5))
    # the docstring's layout: position 0 = one-hot of its value, parity 0, marker 1
    v0 = int(values[0, 0])
    assert x[0, 0].tolist() == [*F.one_hot(torch.tensor(v0), 5).tolist(), 0, 1]
    assert SumModData(start_marker=True).in_features == 7 and SumModData().in_features == 6


def test_associative_recall_start_marker_worked_example_targets_unchanged():
    marked, plain = _draw_both(AssociativeRecallData, length=16, n_pairs=3, vocab=40)
    x = marked["x"]  # (2, 16, 41): one-hot tokens (40), then the marker
    assert x.shape == (2, 16, 41)
    assert x[..., -1].tolist() == [[1] + [0] * 15] * 2  # position 0 only (the first key)
    assert torch.equal(x[..., :-1], plain["x"])
    for key in ("y", "mask"):
        assert torch.equal(marked[key], plain[key])
    assert AssociativeRecallData(start_marker=True).in_features == 65
    assert AssociativeRecallData(start_marker=True).out_features == 64  # still the vocabulary


@pytest.mark.parametrize("task", [SumModData, AssociativeRecallData], ids=lambda t: t.name)
def test_start_marker_is_documented_in_data_help(task):
    parser = ArgumentParser()
    parser.add_class_arguments(task)
    text = " ".join(parser.format_help().split())
    assert "--start_marker " in text and "add an input channel that is 1 at position 0" in text


def test_the_cli_links_the_wider_input_into_the_model():
    config = REPO / "configs" / "associative_recall" / "transformer.yaml"
    cli = check_config(["--config", str(config), "--data.start_marker=true"])
    assert cli.model.net.embed.in_features == 65


# ---- associative recall's floor -------------------------------------------------------------


def test_context_floor_worked_numbers():
    dm = AssociativeRecallData()  # N 32, 4 pairs: pairs = L // 8
    assert [dm.context_floor(n) for n in (32, 64, 128)] == [0.25, 0.125, 0.0625]
    other = AssociativeRecallData(length=20, n_pairs=3, vocab=40)  # pairs = max(1, 3 L // 20)
    assert other.context_floor(30) == 0.25 and other.context_floor(4) == 1.0
    assert SumModData().context_floor(20) is None and EchoData().context_floor(10) is None


def _in_context_guess_scores(dm, length: int, n: int, seed: int) -> dict[str, float]:
    """The system's own test metrics of answering each position with a value drawn uniformly
    from the pairs' values (written at 1, 3, .., 2 D - 1): no recall at all."""
    batch = dm.draw(n, length, torch.Generator().manual_seed(seed))
    tokens = batch["x"].argmax(-1)  # (B, L)
    pairs = dm.pairs_at(length)
    values = tokens[:, 1 : 2 * pairs : 2]  # (B, D)
    pick = torch.randint(0, pairs, tokens.shape, generator=torch.Generator().manual_seed(seed))
    guess = values.gather(1, pick)  # (B, L)
    system = StepClassification(in_features=dm.vocab, out_features=dm.vocab, d_model=8)
    metrics = system.test_metrics_for(length, dm.train_length)
    metrics.update(guess, batch["y"], mask=batch["mask"])
    scores = {name: float(value) for name, value in metrics.compute().items()}
    scores["queries"] = int(batch["mask"].sum())
    scores["queries_ood"] = int(batch["mask"][:, dm.train_length :].sum())
    return scores


@pytest.mark.parametrize("length", [32, 64, 128])
def test_a_random_in_context_value_scores_the_floor(length):
    dm = AssociativeRecallData(n_train=8, n_val=4, n_test=4)
    floor = dm.context_floor(length)
    scores = _in_context_guess_scores(dm, length, n=400, seed=length)
    # within 4 standard errors of the formula (binomial over the scored queries)
    for metric, count in (("acc", "queries"), ("acc_ood", "queries_ood")):
        if metric not in scores:  # acc_ood: only past the training length
            continue
        error = (floor * (1 - floor) / scores[count]) ** 0.5
        assert abs(scores[metric] - floor) < 4 * error, (metric, scores)
    assert floor > 1 / dm.vocab  # above chance, which the record also keeps


def test_records_keep_the_floor_per_length():
    dm = AssociativeRecallData()
    curve = {"acc": {"8": 1.0, "40": 0.5, "48": 0.4}, "acc_ood": {"40": 0.3, "48": 0.2}}
    floors = context_floors(dm, curve)
    assert floors == {
        "8": 1.0,
        "32": 0.25,
        "40": 0.2,
        "48": 0.166667,
        "64": 0.125,
        "128": 0.0625,
    }
    assert context_floors(SumModData(), curve) == {}  # the other tasks: nothing
    assert FitResult.from_json({}).context_floor == {}  # records made before it
    assert FitResult.from_json({"context_floor": floors}).context_floor == floors


@pytest.mark.integration
def test_a_fit_records_the_floor_beside_chance(tmp_path):
    config = REPO / "configs" / "associative_recall" / "transformer.yaml"
    result = tiny_fit(
        config,
        tmp_path / "run",
        "--data.gen_factors=[2]",
        "--range_eval.max_factor=2",
        "--range_eval.step=16",
    )
    assert result.chance == 1 / 64
    assert result.context_floor == {"16": 0.5, "32": 0.25, "48": 0.166667, "64": 0.125}
    assert FitResult.read(tmp_path / "run").context_floor == result.context_floor


# ---- the shipped grid -------------------------------------------------------------------------


def test_pe_grid_gives_every_block_the_start_marker_and_a_fixed_randomized_range():
    runs = expand(load_spec(PE_GRID))
    assert {r.block for r in runs} == {"echo", "sum_mod", "associative_recall"}
    for run in runs:
        assert "--data.init_args.start_marker=true" in run.overrides, run.run_id
        assert "--model.init_args.pos_range=512" in run.overrides, run.run_id
    # and they reach what a fit builds: one randomized cell of each block
    for block in ("echo", "sum_mod", "associative_recall"):
        run = next(r for r in runs if r.block == block and r.axes["pos_mode"] == "randomized")
        cli = check_config(cell_args(run))
        assert cli.datamodule.start_marker is True
        assert cli.model.net.backbone.pos.pos_range == 512
        assert max(cli.datamodule.test_lengths) * 4 <= 512  # room past every evaluated length
