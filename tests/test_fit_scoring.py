"""``lit_seq.fit.scoring``: scores outside Lightning's loops (the test sets of the tested weights,
the validation set, a length range) equal what the test loop recorded."""

import pytest
import torch

from lit_seq.fit import build_cli, run
from lit_seq.fit.scoring import RangeEval, position_spans, score
from lit_seq.util.assets import CONFIG_DIR
from tests.helpers import REPO, TINY, tiny_fit

ECHO_RNN = REPO / "configs" / "echo" / "rnn.yaml"


def test_range_lengths_step_up_to_the_cap():
    assert RangeEval(max_factor=2, step=5).lengths(10, 40) == [5, 10, 15, 20]
    assert RangeEval(max_factor=8, step=10).lengths(10, 40) == [10, 20, 30, 40]  # max_len
    assert RangeEval().lengths(10, 40) == []  # off
    # from the task's shortest valid length (e.g. associative recall: 4)
    assert RangeEval(max_factor=1, step=3).lengths(10, 40, shortest=4) == [6, 9]


class RightButAtTwo:
    """A per-step system right at every position but 2 (of 4); position 3 of the second of
    its three sequences is not scored."""

    device = torch.device("cpu")

    def step_hits(self, batch):
        hits = torch.ones_like(batch["x"], dtype=torch.bool)
        hits[:, 2] = False
        return hits, batch["mask"]


def test_position_spans_count_scored_positions_per_span_over_batches():
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1, 3] = False
    tensors = {"x": torch.zeros(3, 4), "mask": mask}
    # span 2: [0, 2) 6 of 6 right; [2, 4) 2 right (position 3) of 5 scored
    for batch_size in (1, 2, 3):
        assert position_spans(RightButAtTwo(), tensors, 2, batch_size) == [1.0, 0.4]
    assert position_spans(RightButAtTwo(), tensors, 3, 2) == [6 / 9, 1.0]
    tensors["mask"][:, 2:] = False
    assert position_spans(RightButAtTwo(), tensors, 2, 2) == [1.0, None]  # nothing counted


@pytest.mark.integration
def test_scores_equal_the_test_loop_and_the_curve_is_recorded(tmp_path):
    cli = build_cli(
        [
            "--config", str(ECHO_RNN), f"--run_dir={tmp_path}", *TINY,
            "--trainer.limit_test_batches=1.0",
            "--range_eval.max_factor=4", "--range_eval.step=10", "--range_eval.n=64",
        ]
    )  # fmt: skip
    result = run(cli)
    system, data = cli.model, cli.datamodule
    test = score(system, data.test_sets[0].tensors, system.test_metrics_for(10, 10), 64)
    assert test["acc"] == pytest.approx(result.metrics["test/acc"], abs=1e-6)
    long = score(system, data.test_sets[2].tensors, system.test_metrics_for(40, 10), 64)
    assert long["acc_ood"] == pytest.approx(result.metrics["test_len40/acc_ood"], abs=1e-6)
    assert set(result.val_metrics) == {"val/acc", "val/exact"}
    assert sorted(result.curve["acc"], key=int) == ["10", "20", "30", "40"]
    assert sorted(result.curve["acc_ood"], key=int) == ["20", "30", "40"]  # past training only
    # Delétang's score: the curve's mean over the lengths past training, in the metrics
    past = [result.curve["acc"][k] for k in ("20", "30", "40")]
    assert result.metrics["range_ood/acc"] == pytest.approx(sum(past) / 3, abs=1e-6)
    assert result.train_length == 10 and result.chance == 0.5


@pytest.mark.integration
@pytest.mark.parametrize(
    "config", sorted(CONFIG_DIR.glob("*/transformer.yaml")), ids=lambda p: p.parent.name
)
def test_every_task_draws_a_length_curve(config, tmp_path):
    result = tiny_fit(config, tmp_path, "--range_eval.max_factor=1", "--range_eval.n=4")
    lengths = sorted(int(k) for k in result.curve[result.main_metric])
    assert lengths and lengths[-1] == result.train_length
