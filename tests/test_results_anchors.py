"""A page's anchors: each published claim tested as a comparison row, with its verdict."""

import pandas as pd
import pytest

from lit_seq.record import RunRecord
from lit_seq.results.anchors import anchor_verdict, anchors_markdown, anchors_table, read_anchors
from lit_seq.results.comparisons import comparisons_table
from lit_seq.results.fits import FitRule
from lit_seq.results.tables import aggregate_table, runs_table

# per cell: (test/acc at N on seed s, range_ood/acc on seed s)
CELLS = {
    "positive": (lambda s: 0.55 + 0.01 * s, lambda s: 0.50 + 0.01 * s),  # never fits N
    "signed": (lambda s: 1.0, lambda s: 0.90 + 0.01 * s),  # fits N in every seed
    "fixed": (lambda s: 1.0, lambda s: 0.90 + 0.01 * s),  # as signed, seed for seed
}


def _tables():
    records = []
    for eigenvalues, (at_n, ood) in CELLS.items():
        for seed in range(6):
            axes = {"eigenvalues": eigenvalues}
            cell = f"b__task=parity_check__eigenvalues={eigenvalues}"
            records.append(
                RunRecord(
                    run_id=f"{cell}__seed={seed}",
                    block="b",
                    cell=cell,
                    task="parity_check",
                    arch="linear_rnn",
                    axes=axes,
                    axis_order=list(axes),
                    seed=seed,
                    main_metric="acc",
                    status="ok",
                    metrics={"test/acc": at_n(seed), "range_ood/acc": ood(seed)},
                    index=len(records),
                )
            )
    runs = runs_table(records)
    return runs, aggregate_table(runs)


def _anchor(a: str, b: str, metric: str, expect: str) -> dict:
    return {
        "anchor": "Grazzi et al. 2025",
        "setting": "LRU, parity",
        "claim": "signed transitions learn parity",
        "a": a,
        "b": b,
        "metric": metric,
        "expect": expect,
    }


def _write(tmp_path, entries) -> str:
    import yaml

    path = tmp_path / "anchors.yaml"
    path.write_text(yaml.safe_dump(entries))
    return path


def _table(tmp_path, entries):
    runs, aggregate = _tables()
    claims = read_anchors(_write(tmp_path, entries), aggregate)
    comparisons = comparisons_table(runs, aggregate, claims)
    return anchors_table(comparisons, claims, FitRule(), aggregate)


def test_claimed_direction_with_the_higher_side_fitting_n_agrees(tmp_path):
    table = _table(tmp_path, [_anchor("positive", "signed", "range_ood/acc", "higher")])
    (row,) = table.to_dict("records")
    assert (row["verdict"], row["reason"]) == ("agrees", "b is higher")
    assert row["difference"] == pytest.approx(0.40)
    assert (row["fits_a"], row["fits_b"]) == ("0/6", "6/6")
    assert row["id"] == "C1"


def test_opposite_direction_disagrees_and_a_higher_side_that_never_fits_is_inconclusive(tmp_path):
    entries = [
        _anchor("positive", "signed", "range_ood/acc", "lower"),  # we find b higher: disagrees
        _anchor("signed", "positive", "range_ood/acc", "higher"),  # a higher, fits: disagrees
    ]
    verdicts = list(_table(tmp_path, entries)["verdict"])
    assert verdicts == ["disagrees", "disagrees"]
    # the side found higher fits N in no seed: ranked against nothing
    row = pd.Series({"verdict": "b is higher", "fits_a": "6/6", "fits_b": "0/6", "metric": "m"})
    assert anchor_verdict(row, "higher", "test/acc") == (
        "inconclusive",
        "b is higher, but b fits N in no seed",
    )


def test_no_difference_is_inconclusive_unless_both_sides_fit_n_on_the_fit_metric(tmp_path):
    entries = [
        _anchor("signed", "fixed", "range_ood/acc", "higher"),
        _anchor("signed", "fixed", "test/acc", "higher"),
    ]
    table = _table(tmp_path, entries)
    assert list(table["verdict"]) == ["inconclusive", "disagrees"]
    assert table["reason"].iloc[1] == "no difference detected; both sides fit N in every seed"
    text = anchors_markdown(table, FitRule())
    assert "(0 agrees, 1 disagrees, 1 inconclusive)" in text
    assert "[C1](comparisons.md#c1)" in text


@pytest.mark.parametrize(
    "entry, message",
    [
        ({**_anchor("positive", "signed", "range_ood/acc", "up")}, "expect is 'up'; allowed"),
        ({"a": "positive", "b": "signed"}, "keys must be exactly"),
        (_anchor("positive", "complex", "range_ood/acc", "higher"), "entry 1: b: "),
    ],
)
def test_bad_entries_are_refused_in_one_line(tmp_path, entry, message):
    _, aggregate = _tables()
    with pytest.raises(ValueError, match=message) as err:
        read_anchors(_write(tmp_path, [entry]), aggregate)
    assert "\n" not in str(err.value)


def test_the_mixers_page_anchors_name_cells_of_its_grid():
    from tests.helpers import REPO, report_cells

    cells = report_cells("mixers.yaml")
    aggregate = pd.DataFrame({"cell": cells, "task": "t", "main_metric": "acc"})
    anchors = read_anchors(REPO / "docs/results/mixers_anchors.yaml", aggregate)
    assert len(anchors) == 8
    assert {a["anchor"].split(" et al.")[0] for a in anchors} == {"Arora", "Grazzi", "Merrill"}


def test_the_budget_checks_repeat_the_mixers_pages_claims_on_their_own_cells():
    """mixers_budget, mixers_recall_10k and mixers_modular_6k re-run cells of the mixers grid
    past its budget: their anchors are the mixers page's claims on those cells, word for word
    (a setting the page gives "as above" spelt out; mixers_recall_10k's also on ``fits_n``),
    and name cells of their own grids."""
    import yaml

    from tests.helpers import REPO, report_cells

    page = yaml.safe_load((REPO / "docs/results/mixers_anchors.yaml").read_text())
    zoology = [a for a in page if a["anchor"].startswith("Arora")]
    modular = [a for a in page if a["a"] == "modular_mixers mamba"]
    # mixers_recall_10k scores its first two claims twice, on the mean and on the success
    # rate; its d32 mamba is a block of its own
    solving = [{**a, "metric": "fits_n"} for a in zoology[:2]]
    wide = {**zoology[2], "b": "recall_n32_wide mamba d_model=32"}
    checks = {
        "mixers_budget": zoology,
        "mixers_recall_10k": zoology[:2] + solving + [wide],
        "mixers_modular_6k": modular,
    }
    for grid, claims in checks.items():
        path = REPO / f"docs/results/{grid}_anchors.yaml"
        mine = yaml.safe_load(path.read_text())
        assert len(mine) == len(claims) > 0
        for own, claim in zip(mine, claims, strict=True):
            assert {**own, "setting": ""} == {**claim, "setting": ""}
            assert (
                own["setting"] == claim["setting"]
                or "as above" in own["setting"] + claim["setting"]
            )
        assert not mine[0]["setting"].startswith("as above")  # a file's first is spelt out
        cells = report_cells(f"{grid}.yaml")
        aggregate = pd.DataFrame({"cell": cells, "task": "t", "main_metric": "acc"})
        assert len(read_anchors(path, aggregate)) == len(claims)


def _bimodal_and_steady():
    """The runs table of Zoology's shape at 10 seeds: attention solves recall in 8 seeds and stays on the floor
    in 2; the SSM learns most of it in every seed and solves it in none. Their means are
    about equal (0.854 and 0.859)."""
    from tests.helpers import arch_record

    scores = {
        "transformer": [1.0] * 8 + [0.27, 0.27],
        "mamba": [0.86 + 0.01 * (s % 3 - 1) for s in range(10)],
    }
    records = [
        arch_record("recall", "associative_recall", arch, seed, {"test/acc": score}, 10 * i + seed)
        for i, (arch, values) in enumerate(scores.items())
        for seed, score in enumerate(values)
    ]
    return runs_table(records)


def test_a_claim_about_solving_is_decided_on_fits_n_where_the_mean_cannot(tmp_path):
    runs = _bimodal_and_steady()
    aggregate = aggregate_table(runs)
    entries = [
        {**_anchor("mamba", "transformer", metric, "higher"), "claim": "attention solves it"}
        for metric in ("test/acc", "fits_n")
    ]
    claims = read_anchors(_write(tmp_path, entries), aggregate)
    comparisons = comparisons_table(runs, aggregate, claims)
    assert comparisons["p"].iloc[1] == pytest.approx(2 / 2**8)  # exact sign-flip over 8 seeds
    table = anchors_table(comparisons, claims, FitRule(), aggregate)
    by_mean, by_fit = table.to_dict("records")
    assert by_mean["verdict"] == "inconclusive"  # the means: 0.859 and 0.854
    assert by_mean["difference"] == pytest.approx(0.854 - 0.859)
    # fits_n: 8 seeds where only b fits N, none the other way; b - a = 0.8 - 0.0
    assert (by_fit["verdict"], by_fit["reason"]) == ("agrees", "b is higher")
    assert by_fit["difference"] == pytest.approx(0.8)
    assert (by_fit["fits_a"], by_fit["fits_b"]) == ("0/10", "8/10")


def test_fits_n_is_read_at_the_pages_own_rule():
    from lit_seq.results.fits import metric_values

    runs = _bimodal_and_steady()
    assert set(metric_values(runs, "recall__arch=mamba", "fits_n").values()) == {0.0}
    lenient = FitRule(threshold=0.855)  # mamba: seeds at 0.85 fail it, 0.86 and 0.87 pass
    values = metric_values(runs, "recall__arch=mamba", "fits_n", "acc", lenient)
    assert [values[s] for s in range(4)] == [0.0, 1.0, 1.0, 0.0]
    assert metric_values(runs, "recall__arch=mamba", "test/acc")[1] == pytest.approx(0.86)
