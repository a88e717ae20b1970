"""The run-score plot: every run a point, per cell, with chance and N marked."""

import matplotlib
from matplotlib.collections import PathCollection

from lit_seq.record import RunRecord
from lit_seq.results.strip import strip_figure, write_strip_plots
from lit_seq.results.tables import runs_table

matplotlib.use("Agg")


def _runs(solved: dict[str, int]):
    """Per arch, 5 seeds of parity_check (N = 40, chance 0.5); the first ``solved[arch]``
    solve it past N (range_ood/acc 1.0), the rest sit at chance."""
    records = []
    for arch, k in solved.items():
        for seed in range(5):
            score = 1.0 if seed < k else 0.5 + 0.01 * seed
            records.append(
                RunRecord(
                    run_id=f"{arch}__seed={seed}",
                    block=arch,
                    cell=arch,
                    task="parity_check",
                    arch=arch,
                    seed=seed,
                    index=len(records),
                    main_metric="acc",
                    status="ok",
                    train_length=40,
                    chance=0.5,
                    curve={"acc": {"60": score, "80": score}},
                    metrics={"test/acc": 1.0, "range_ood/acc": score},
                )
            )
    return runs_table(records)


def test_every_run_is_one_point_in_its_cells_column():
    runs = _runs({"rnn": 4, "lstm": 0})
    fig = strip_figure(runs, "parity_check")
    [ax] = fig.axes
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]  # not the means
    points = [tuple(p) for c in scatters for p in c.get_offsets()]
    assert len(points) == len(runs) == 10
    # rnn: column 0, 4 seeds at 1.0 and one at chance; lstm: column 1, all near chance
    assert sorted(y for x, y in points if x < 0.5) == [0.54, 1.0, 1.0, 1.0, 1.0]
    assert all(0.5 <= y < 0.55 for x, y in points if x > 0.5)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["rnn", "lstm"]
    assert ax.get_title() == (
        "parity_check: every run's range_ood/acc\n"
        "trained at N = 40; lengths 60-80 every 20, chance 0.5"
    )
    [chance] = [line for line in ax.lines if line.get_label() == "chance 0.5"]
    assert list(chance.get_ydata()) == [0.5, 0.5]


def test_the_report_writes_one_plot_per_task(tmp_path):
    paths = write_strip_plots(tmp_path, _runs({"rnn": 1}))
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == ["plots/seeds_parity_check.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
