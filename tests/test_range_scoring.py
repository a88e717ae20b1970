"""The range evaluation's scoring: one pooled forward pass per length, the same numbers.

The recorded curves are those of b71a7e2 (each sub-batch of 16 its own forward pass, with
``torch.no_grad`` and ATen's ``nn.RNN``), for a tiny seeded relu RNN as the Delétang
configs build it; the new path (a length's draw in one pass under inference mode, the
in-place CPU recurrence, the sub-batch means taken from the pooled outputs) must give them.
"""

import pytest
import torch

from lit_seq.data import ReverseStringData, StackManipulationData
from lit_seq.fit.scoring import RangeEval, length_curve, past_training_means
from lit_seq.systems import Transduction
from lit_seq.systems.length_score import forward_rows, score, score_length
from lit_seq.util.assets import CONFIG_DIR
from tests.helpers import tiny_fit

RECORDED = {  # task -> sub_batch -> (range_ood, the acc curve at 5..12), at b71a7e2
    "reverse_string": {
        16: ({"range_ood/acc": 0.424176, "range_ood/exact": 0.0},
             [0.39375, 0.429688, 0.410714, 0.416016, 0.434028, 0.43125, 0.441761, 0.436198]),
    },
    "stack_manipulation": {
        16: ({"range_ood/acc": 0.307052, "range_ood/exact": 0.017578},
             [0.211634, 0.217308, 0.301645, 0.345186, 0.32695, 0.31783, 0.366652, 0.369212]),
        0: ({"range_ood/acc": 0.307909, "range_ood/exact": 0.017578},
            [0.211806, 0.217532, 0.302139, 0.345499, 0.329741, 0.319829, 0.367311, 0.369416]),
    },
}  # fmt: skip
TASKS = {
    "reverse_string": (ReverseStringData, 2, 2),
    "stack_manipulation": (StackManipulationData, 5, 3),
}


def tiny(task: str) -> tuple[Transduction, object]:
    """A seeded, untrained relu RNN (configs/deletang's options) and its task at N = 4."""
    data_class, in_features, out_features = TASKS[task]
    torch.manual_seed(0)
    system = Transduction(
        in_features=in_features, out_features=out_features, max_len=64, arch="rnn", d_model=16,
        n_layers=1, nonlinearity="relu", input_embedding=False, readout_relu=True, init="haiku",
    )  # fmt: skip
    return system, data_class(length=4)


@pytest.mark.parametrize("task,sub_batch", [(t, k) for t in RECORDED for k in RECORDED[t]])
def test_the_curve_and_its_score_are_the_recorded_ones(task, sub_batch):
    system, data = tiny(task)
    curve = length_curve(system, data, RangeEval(max_factor=3, n=64, sub_batch=sub_batch))
    ood, accs = RECORDED[task][sub_batch]
    assert past_training_means(curve, 4) == pytest.approx(ood, abs=2e-6)
    assert [curve["acc"][str(n)] for n in range(5, 13)] == pytest.approx(accs, abs=2e-6)


def test_pooled_and_sub_batch_means_agree_where_every_sequence_scores_alike():
    """reverse_string scores every one of a length's L positions: the mean of equal
    sub-batches' accuracies is the pooled accuracy."""
    system, data = tiny("reverse_string")
    for length in (5, 9):
        metrics = system.build_metrics
        pooled = score_length(system, data, length, metrics(), n=64, batch_size=64)
        means = score_length(system, data, length, metrics(), n=64, batch_size=64, sub_batch=16)
        assert means == pytest.approx(pooled, rel=1e-6, abs=1e-7)


def test_one_pass_gives_each_sub_batch_its_own_passes_numbers():
    """stack_manipulation's scored positions vary, so the sub-batch mean differs from the
    pooled one; taken from one pass over all 64 it is that of 4 passes of 16."""
    system, data = tiny("stack_manipulation")
    tensors = data.draw(64, 7, torch.Generator().manual_seed(0), split="test")
    assert forward_rows(tensors, system.device, 16) == 64  # one pass
    kwargs = dict(n=64, batch_size=16, sub_batch=16)
    one = score_length(system, data, 7, system.build_metrics(), **kwargs)
    own = score_length(system, data, 7, system.build_metrics(), rows=16, **kwargs)
    pooled = score_length(system, data, 7, system.build_metrics(), n=64, batch_size=64)
    assert one == pytest.approx(own, rel=1e-6) and one["acc"] != pytest.approx(pooled["acc"])


def test_scoring_runs_under_inference_mode_and_leaves_the_mode():
    system, data = tiny("reverse_string")
    seen = []
    system.net.register_forward_hook(lambda *_: seen.append(torch.is_inference_mode_enabled()))
    system.train()
    tensors = data.draw(8, 5, torch.Generator().manual_seed(0))
    score(system, tensors, system.build_metrics(), batch_size=4)
    assert seen == [True, True] and system.training
    assert torch.is_grad_enabled()


def test_a_fits_test_sets_and_range_evaluation_run_under_inference_mode(tmp_path, monkeypatch):
    """Every batch the test loop and the range evaluation score is under inference mode, so
    a recurrence scores through the in-place pass; training's batches record gradients and
    the validation inside fit runs under no_grad (Lightning's choice), as before."""
    seen: dict[str, set] = {}

    def stage(system) -> str:
        trainer = system._trainer
        if trainer is not None and (trainer.validating or trainer.sanity_checking):
            return "val"
        return "test" if trainer is not None and trainer.testing else "range"

    def spy(real, name=None):
        def wrapped(self, *args):
            seen.setdefault(name or stage(self), set()).add(torch.is_inference_mode_enabled())
            return real(self, *args)

        return wrapped

    monkeypatch.setattr(Transduction, "evaluate", spy(Transduction.evaluate))
    monkeypatch.setattr(Transduction, "loss", spy(Transduction.loss, "loss"))
    small = ("--model.d_model=16", "--data.length=4", "--data.batch_size=8", "--data.n_val=8")
    small += ("--data.n_test=8", "--data.gen_factors=[2]", "--range_eval.max_factor=2")
    record = tiny_fit(CONFIG_DIR / "deletang/reverse_string/rnn.yaml", tmp_path, *small,
                      "--range_eval.n=16", "--range_eval.sub_batch=8")  # fmt: skip
    assert seen == {"loss": {False}, "val": {False}, "test": {True}, "range": {True}}
    assert record.range_ood_longest == 8
