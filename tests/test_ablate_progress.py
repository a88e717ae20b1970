"""The one line the grid prints per finished run."""

from lit_seq.ablate.progress import describe
from lit_seq.record import RunRecord


def test_a_run_line_shows_acc_ood_past_the_training_length_and_the_target():
    record = RunRecord(
        run_id="r",
        status="ok",
        main_metric="acc",
        wall_seconds=2.0,
        target_reached=True,
        target_step=100,
        metrics={"test/acc": 1.0, "test_len20/acc": 0.75, "test_len20/acc_ood": 0.5},
    )
    assert describe(record) == "r  acc: test 1.000, len20 ood 0.500  (2.0 s)  target at 100"
    record.main_metric = "exact"  # seq2seq: exact at every length, and acc_ood beside it
    record.metrics = {"test/exact": 1.0, "test_len20/exact": 0.1, "test_len20/acc_ood": 0.4}
    record.target_reached = None
    assert describe(record) == "r  exact: test 1.000, len20 0.100, len20 ood 0.400  (2.0 s)"
    failed = RunRecord(run_id="r", error="boom")
    assert describe(failed) == "r  boom"
