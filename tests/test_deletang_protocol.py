"""Delétang et al. 2023's protocol: fresh batches every step, the answer read at appended
empty positions, their score, and the configs of their sizes and rates."""

import pytest
import torch
import torch.nn.functional as F
import yaml
from torch import Tensor, nn

from lit_seq.data import (
    TASKS,
    FreshSteps,
    ParityCheckData,
    ReverseStringData,
    StackManipulationData,
    reverse_string_targets,
    stack_manipulation_targets,
)
from lit_seq.fit import check_config
from lit_seq.fit.header import training_data
from lit_seq.fit.scoring import RangeEval, length_curve, longest_past_training, past_training_means
from lit_seq.models import MEMORY_RNNS, Readout
from lit_seq.population.stacked import member_losses, stack_weights
from lit_seq.systems import SequenceClassification, Transduction, deletang_score
from lit_seq.util.assets import CONFIG_DIR
from tests.helpers import tiny_fit

DELETANG = CONFIG_DIR / "deletang"
DELETANG_CONFIGS = sorted(DELETANG.glob("*/*.yaml"))
PAPER_TASKS = {"parity_check", "modular_arithmetic", "even_pairs", "cycle_navigation"} | {
    "reverse_string",
    "stack_manipulation",
    "modular_arithmetic_brackets",
    "solve_equation",
    "duplicate_string",
    "odds_first",
    "binary_addition",
    "missing_duplicate_string",
    "binary_multiplication",
    "compute_sqrt",
    "bucket_sort",
}
# a paper-size config shrunk to seconds: width 16, one layer, batch 8, N = 8, test sets of 16
# sequences at 8 and 16, and their score over 9..24 on 16 sequences a length in sub-batches
# of 8
SMALL = (
    "--model.d_model=16",
    "--model.n_layers=1",
    "--data.length=8",
    "--data.batch_size=8",
    "--data.n_train=32",
    "--data.n_val=16",
    "--data.n_test=16",
    "--data.gen_factors=[2]",
    "--range_eval.max_factor=3",
    "--range_eval.n=16",
    "--range_eval.sub_batch=8",
)
SMALL_TRANSFORMER = ("--model.n_heads=2", "--model.d_ff=32")

# ---- fresh sampling ------------------------------------------------------------------------


def fresh(seed: int = 0, **kwargs) -> StackManipulationData:
    kwargs = {"length": 6, "curriculum": True, "n_train": 20, "batch_size": 4, **kwargs}
    dm = StackManipulationData(sampling="fresh", n_val=4, n_test=4, seed=seed, **kwargs)
    dm.setup()
    return dm


def same(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x)
        for x, y in zip(a, b, strict=True)
    )


def test_fresh_batches_are_a_pure_function_of_seed_and_step():
    first, again, other = (list(fresh(seed).train_dataloader()) for seed in (3, 3, 4))
    assert len(first) == 5  # n_train 20 / batch_size 4: an epoch is 5 steps
    assert same(first, again)
    assert not same(first, other)
    # the lengths follow the step alone: every seed meets the same length at a step
    assert [b["x"].shape[1] for b in first] == [b["x"].shape[1] for b in other]
    batches = fresh(3).train_set
    assert same([batches[7]], [batches[7]])  # batch 7, rebuilt from its number


def test_fresh_batches_are_new_every_step_and_every_epoch():
    loader = fresh().train_dataloader()
    epoch0, epoch1 = list(loader), list(loader)
    assert not same(epoch0, epoch1)  # epoch 1 is steps 5..9, not a replay of 0..4
    assert same(epoch1, [fresh().train_set[step] for step in range(5, 10)])
    rows = torch.cat([b["x"].flatten(1) for b in epoch0 + epoch1 if b["x"].shape[1] == 6])
    assert len(rows) == 0 or len(torch.unique(rows, dim=0)) > len(rows) // 2


def test_fresh_lengths_are_uniform_over_the_curriculum():
    batches = fresh(length=5).train_set
    lengths = [batches.length_at(step) for step in range(1000)]
    assert set(lengths) == {1, 2, 3, 4, 5}
    assert all(150 < lengths.count(n) < 250 for n in range(1, 6))  # 200 expected each
    # without the curriculum every batch has the training length
    assert {b["x"].shape[1] for b in fresh(curriculum=False).train_dataloader()} == {6}
    assert all(b["x"].shape[0] == 4 for b in fresh().train_dataloader())


def test_the_fit_header_says_what_the_training_data_are():
    """A fresh run draws a new batch every step over 1..N: the header must not call it a
    fixed set of n_train sequences at length N."""
    assert training_data(fresh()) == "a fresh batch of 4 every step, lengths 1..6"
    assert training_data(fresh(curriculum=False)) == "a fresh batch of 4 every step, length 6"
    fixed = StackManipulationData(length=6, curriculum=True, n_train=20, batch_size=4)
    assert training_data(fixed) == "20 training sequences of lengths 1..6"


def test_fresh_loader_resumes_mid_epoch_to_the_same_batches():
    loader = fresh().train_dataloader()
    list(loader)  # epoch 0
    loader.sampler.set_epoch(1)
    it = iter(loader)
    for _ in range(2):
        next(it)
    state = loader.state_dict()
    rest = list(it)
    assert state == {"epoch": 1, "batches": 2} and len(rest) == 3
    resumed = fresh().train_dataloader()  # a new process: the same seed, the checkpoint
    resumed.load_state_dict(state)
    assert same(list(resumed), rest)
    after = fresh().train_dataloader()  # a finished epoch resumes at the next one
    after.load_state_dict({"epoch": 1, "batches": 5})
    assert same(list(after), [fresh().train_set[step] for step in range(10, 15)])


def test_fresh_steps_count_on_across_epochs():
    steps = FreshSteps(per_epoch=3)
    assert list(steps) == [0, 1, 2] and list(steps) == [3, 4, 5]
    steps.set_epoch(4)
    assert list(steps) == [12, 13, 14] and len(steps) == 3


def test_fresh_sampling_leaves_the_global_rng_alone_and_refuses_other_modes():
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    list(fresh().train_dataloader())
    assert torch.equal(torch.get_rng_state(), state)
    with pytest.raises(ValueError, match=r"sampling='stream' is not one of \['fixed', 'fresh'\]"):
        ParityCheckData(sampling="stream")


@pytest.mark.integration
def test_a_fresh_fit_resumed_mid_epoch_ends_as_an_unbroken_one(tmp_path):
    # 32 / 8 = 4 fresh batches an epoch, so the checkpoint at step 6 is mid-epoch; their
    # constant rate makes the first 6 steps the same whatever max_steps is
    config = DELETANG / "parity_check" / "lstm.yaml"
    args = (*SMALL, "--trainer.deterministic=true")
    straight = tiny_fit(config, tmp_path / "straight", *args, "--trainer.max_steps=9")
    tiny_fit(config, tmp_path / "broken", *args)  # 6 steps, checkpoints at 3 and 6
    (tmp_path / "broken" / "metrics.json").unlink()  # as if it died after its checkpoint
    resumed = tiny_fit(
        config, tmp_path / "broken", *args, "--ckpt_path=last", "--trainer.max_steps=9"
    )
    assert resumed.steps == straight.steps == 9
    assert resumed.metrics == straight.metrics  # exactly equal floats


# ---- the answer read at appended empty positions ------------------------------------------


class GarbageBefore(nn.Module):
    """A backbone's stand-in: the real backbone's outputs at the last ``keep`` positions,
    random values (from ``seed``) at every position before them."""

    def __init__(self, backbone: nn.Module, keep: int, seed: int) -> None:
        super().__init__()
        self.backbone, self.keep, self.seed = backbone, keep, seed

    def forward(self, h: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        out = self.backbone(h, padding_mask)  # (B, T, d)
        g = torch.Generator().manual_seed(self.seed)
        garbage = 100 * torch.randn(out.shape, generator=g)
        before = torch.arange(out.shape[1]) < out.shape[1] - self.keep  # (T,)
        return torch.where(before[None, :, None], garbage, out)


def transduction(arch: str = "lstm", **kwargs) -> Transduction:
    return Transduction(
        in_features=5, out_features=3, max_len=32, arch=arch, d_model=8, n_layers=1, **kwargs
    )


def stack_batch(n: int = 6, length: int = 5) -> dict[str, Tensor]:
    return StackManipulationData().draw(n, length, torch.Generator().manual_seed(0))


def scores(system, batch: dict[str, Tensor]) -> tuple[float, float, dict[str, float]]:
    """(training loss, evaluation loss, metrics) of ``system`` on ``batch``."""
    metrics = system.build_metrics()
    with torch.no_grad():
        loss = system.evaluate(batch, metrics)
        values = {k: float(v) for k, v in metrics.compute().items()}
        return float(system.loss(batch)), float(loss), values


@pytest.mark.parametrize("arch", ["lstm", "transformer"])
def test_transduction_trains_and_scores_on_the_appended_positions_only(arch):
    torch.manual_seed(0)
    heads = {"n_heads": 2} if arch == "transformer" else {}  # an lstm refuses n_heads
    model = transduction(arch, dropout=0.0, **heads).eval()
    batch = stack_batch()
    n_out = batch["y"].shape[1]
    real = model.net.backbone
    model.net.backbone = GarbageBefore(real, keep=n_out, seed=1)
    first = scores(model, batch)
    model.net.backbone = GarbageBefore(real, keep=n_out, seed=2)  # other garbage, same answer
    assert scores(model, batch) == first
    model.net.backbone = GarbageBefore(real, keep=n_out - 1, seed=2)  # garbage reaches one
    assert scores(model, batch)[0] != first[0]


def test_transduction_loss_is_the_mean_over_every_appended_position():
    model = transduction().eval()
    batch = stack_batch()
    logits = model(batch["x"], batch["y"].shape[1])  # (B, T_out, C)
    assert logits.shape == (6, 6, 3)
    expected = F.cross_entropy(logits.reshape(-1, 3), batch["y"].reshape(-1))
    torch.testing.assert_close(model.loss(batch), expected)  # padding after END included
    # acc counts the scored positions only: changing a target past END changes nothing
    metrics = model.build_metrics()
    model.evaluate(batch, metrics)
    outside = {**batch, "y": torch.where(batch["mask"], batch["y"], (batch["y"] + 1) % 3)}
    metrics_outside = model.build_metrics()
    model.evaluate(outside, metrics_outside)
    assert float(metrics["acc"].compute()) == float(metrics_outside["acc"].compute())


@pytest.mark.parametrize("arch", ["rnn", "transformer"])
def test_the_empty_readout_trains_and_scores_on_the_appended_token_only(arch):
    def classifier(readout: str) -> SequenceClassification:
        torch.manual_seed(0)
        return SequenceClassification(
            in_features=2, out_features=2, max_len=16, arch=arch, d_model=8, n_layers=1,
            n_heads=2 if arch == "transformer" else 4, dropout=0.0, readout=readout,
            label_smoothing=0.0,
        ).eval()  # fmt: skip

    batch = ParityCheckData().draw(8, 7, torch.Generator().manual_seed(0))
    for readout, unchanged in (("empty", True), ("mean", False)):  # mean reads the garbage
        model = classifier(readout)
        real = model.net.backbone
        model.net.backbone = GarbageBefore(real, keep=1, seed=1)
        first = scores(model, batch)
        model.net.backbone = GarbageBefore(real, keep=1, seed=2)
        assert (scores(model, batch) == first) is unchanged


def test_the_empty_token_follows_the_real_tokens_of_a_padded_sequence():
    readout = Readout("empty", d_model=1)
    x = torch.tensor([[[1.0], [3.0], [5.0]]])  # (1, 3, 1), the last step padded
    x, mask = readout.prepare(x, torch.tensor([[False, False, True]]))
    token = float(readout.empty_token.detach())
    assert x[0, :, 0].tolist() == [1.0, 3.0, token, 0.0]
    assert mask.tolist() == [[False, False, False, True]]
    assert readout.pool(x, mask).tolist() == [[token]]
    unpadded, none = readout.prepare(torch.ones(2, 3, 1))
    assert none is None and unpadded[:, 3, 0].tolist() == [token, token]


FAITHFUL = {  # Delétang et al.'s own models (configs/deletang)
    "rnn": dict(nonlinearity="relu", input_embedding=False, readout_relu=True),
    "lstm": dict(input_embedding=False, readout_relu=True, forget_bias=1.0),
    "transformer": dict(norm="post", embed_scale=True),
}


@pytest.mark.parametrize(
    "arch, faithful",
    [("rnn", False), ("transformer", False), ("rnn", True), ("lstm", True), ("transformer", True)],
)
def test_the_losses_vmap_over_a_population(arch, faithful):
    """No boolean indexing, no data-dependent shapes: K members' losses are one vmap."""
    torch.manual_seed(0)
    options = dict(arch=arch, dropout=0.0, **(FAITHFUL[arch] if faithful else {}))
    if arch == "transformer":  # the recurrent ones refuse n_heads
        options["n_heads"] = 2
    members = [transduction(**options) for _ in range(2)]
    batch = stack_batch()
    stacked = {k: torch.stack([v, v]) for k, v in batch.items()}
    losses = member_losses(members[0], stack_weights(members), stacked)
    torch.testing.assert_close(losses, torch.stack([m.loss(batch) for m in members]))
    classifiers = [
        SequenceClassification(
            in_features=2, out_features=2, max_len=16, d_model=8, n_layers=1,
            readout="empty", **options,
        )
        for _ in range(2)
    ]  # fmt: skip
    parity = ParityCheckData().draw(4, 5, torch.Generator().manual_seed(0))
    stacked = {k: torch.stack([v, v]) for k, v in parity.items()}
    losses = member_losses(classifiers[0], stack_weights(classifiers), stacked)
    torch.testing.assert_close(losses, torch.stack([m.loss(parity) for m in classifiers]))


# ---- their score ---------------------------------------------------------------------------


class Oracle(nn.Module):
    """A network that knows the task: logits of ``answer(tokens)`` at the appended positions;
    ``wrong_after_end`` makes every unscored position (after END) wrong."""

    def __init__(self, answer, wrong_after_end: bool = False) -> None:
        super().__init__()
        self.answer, self.wrong_after_end = answer, wrong_after_end
        self.unused = nn.Parameter(torch.zeros(1))

    def forward(self, x: Tensor, n_out: int) -> Tensor:
        target, mask = self.answer(x.argmax(-1))
        if self.wrong_after_end:
            target = torch.where(mask, target, (target + 1) % 3)
        assert target.shape[1] == n_out
        return 10.0 * F.one_hot(target, 3).float()


def test_the_score_averages_every_length_past_training():
    data = StackManipulationData(length=4)
    model = transduction()
    model.net = Oracle(stack_manipulation_targets, wrong_after_end=True)
    score, curve = deletang_score(model, data, longest=9, n=64, sub_batch=16)
    assert sorted(curve) == [5, 6, 7, 8, 9] and score == 1.0  # unscored positions ignored
    model.net = Oracle(lambda t: (reverse_string_targets(t), torch.ones_like(t, dtype=bool)))
    _, curve = deletang_score(model, ReverseStringData(length=4), longest=6, n=32)
    assert curve == {5: 1.0, 6: 1.0}


class ParityOracle(nn.Module):
    """Parity logits, right on every sequence of length 3 and on every other one of length 4."""

    def forward(self, x: Tensor) -> Tensor:
        label = x.argmax(-1).sum(dim=1) % 2  # (B,)
        if x.shape[1] == 4:
            label = torch.where(torch.arange(len(label)) % 2 == 1, 1 - label, label)
        return 10.0 * F.one_hot(label, 2).float()


def parity_oracle_system() -> SequenceClassification:
    model = SequenceClassification(in_features=2, out_features=2, arch="rnn", d_model=8)
    model.net = ParityOracle()
    return model


def test_the_score_worked_example():
    # N = 2, M = 4: accuracies {3: 1.0, 4: 0.5} -> score 0.75
    score, curve = deletang_score(parity_oracle_system(), ParityCheckData(length=2), longest=4)
    assert curve == {3: 1.0, 4: 0.5} and score == 0.75


def test_the_record_holds_their_score_as_range_ood_worked_example():
    """What a fit records after testing when its config has ``range_eval`` (the deletang
    configs: every length, 512 sequences, sub-batches of 64): the same example, N = 2,
    range_eval.max_factor 2 -> lengths 1..4, M = 4, range_ood/acc = mean(1.0, 0.5) = 0.75."""
    config = RangeEval(max_factor=2, step=1, n=512, sub_batch=64)
    curve = length_curve(parity_oracle_system(), ParityCheckData(length=2), config)
    assert curve["acc"] == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 0.5}
    assert past_training_means(curve, train_length=2)["range_ood/acc"] == 0.75
    assert longest_past_training(curve, train_length=2) == 4  # the record's range_ood_longest
    assert longest_past_training({}, train_length=2) is None  # no range evaluation


def test_range_ood_is_their_score_where_the_scored_positions_vary():
    """One mechanism: a fit's range_ood/acc is deletang_score on the same sequences, also
    where sub-batches hold different numbers of scored symbols (stack_manipulation), which
    their sub-batch means weigh otherwise than one pooled accuracy would."""
    torch.manual_seed(0)
    model, data = transduction(), StackManipulationData(length=4)
    config = RangeEval(max_factor=2, step=1, n=64, sub_batch=16)
    recorded = past_training_means(length_curve(model, data, config), train_length=4)
    score, curve = deletang_score(model, data, longest=8, n=64, sub_batch=16)
    assert 0.0 < score < 1.0 and len(set(curve.values())) > 1
    assert recorded["range_ood/acc"] == pytest.approx(score, abs=1e-6)
    pooled = RangeEval(max_factor=2, step=1, n=64)  # sub_batch 0: one pooled accuracy
    pooled_means = past_training_means(length_curve(model, data, pooled), train_length=4)
    assert pooled_means["range_ood/acc"] != recorded["range_ood/acc"]


def test_the_range_counts_the_appended_outputs_against_max_len():
    # reverse_string at N = 40 with test sets at 80 and 160: max_len = 160 + 160 = 320, so
    # range_eval.max_factor 5 (M = 200 asked) reaches 160; a parity classifier reaches 200
    data = ReverseStringData(length=40, gen_factors=[2, 4])
    assert data.max_len == 320
    lengths = RangeEval(max_factor=5, step=8).lengths(40, data.max_len, 1, data.output_length)
    assert lengths == list(range(8, 161, 8))
    assert RangeEval(max_factor=5, step=8).lengths(40, 320)[-1] == 200
    # stack_manipulation appends L + 1: at max_len 12 the lengths stop at 5 (5 + 6 = 11)
    stack = StackManipulationData(length=4)
    assert RangeEval(max_factor=3).lengths(4, 12, 1, stack.output_length) == [1, 2, 3, 4, 5]


def test_the_score_is_the_mean_of_the_per_length_accuracies():
    torch.manual_seed(0)
    model = Transduction(in_features=2, out_features=2, max_len=64, arch="rnn", d_model=8)
    score, curve = deletang_score(model, ReverseStringData(length=3), longest=8, n=64)
    assert sorted(curve) == [4, 5, 6, 7, 8]
    assert score == pytest.approx(sum(curve.values()) / 5)
    assert all(0.0 <= v <= 1.0 for v in curve.values()) and len(set(curve.values())) > 1
    with pytest.raises(ValueError, match="longest=3 must be > the training length 3"):
        deletang_score(model, ReverseStringData(length=3), longest=3)


# ---- configs in their sizes and rates ------------------------------------------------------


def test_every_paper_task_has_a_deletang_config_per_arch():
    shipped = {(p.parent.name, p.stem) for p in DELETANG_CONFIGS}
    archs = ("rnn", "lstm", "transformer", *MEMORY_RNNS)  # Table 2's six
    assert shipped == {(t, a) for t in PAPER_TASKS for a in archs}
    assert set(TASKS) >= PAPER_TASKS


@pytest.mark.parametrize("config", DELETANG_CONFIGS, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_deletang_configs_build_their_networks_and_protocol(config):
    assert config.read_text().splitlines()[0] == (
        f"# python -m lit_seq.fit --config configs/deletang/{config.parent.name}/{config.stem}.yaml"
    )
    built = check_config(["--config", str(config)])
    data, hp = built.datamodule, built.model.hparams
    assert (data.name, hp.arch) == (config.parent.name, config.stem)
    assert (data.sampling, data.curriculum, data.train_length, data.batch_size) == (
        "fresh",
        True,
        40,
        128,
    )
    assert (hp.optimizer, hp.schedule, hp.weight_decay) == ("adam", "constant", 0.0)
    assert hp.lr in (1e-4, 3e-4, 5e-4)
    assert yaml.safe_load(config.read_text())["trainer"]["gradient_clip_val"] == 1.0
    if hp.arch == "transformer":
        assert (hp.d_model, hp.n_layers, hp.n_heads, hp.d_ff, hp.dropout) == (64, 5, 8, 256, 0.1)
        assert (hp.norm, hp.embed_scale) == ("post", True)  # their post-LN, sqrt(d) inputs
    else:
        assert (hp.d_model, hp.n_layers) == (256, 1)
        # their RNN / LSTM: the one-hot input itself, a ReLU before the readout, haiku's LSTM
        assert (hp.input_embedding, hp.readout_relu) == (False, True)
        assert hp.forget_bias == (1.0 if hp.arch == "lstm" else 0.0)
        # hk.VanillaRNN: their RNN and the memory models' controller
        assert hp.nonlinearity == ("tanh" if hp.arch == "lstm" else "relu")
        assert hp.init == "haiku"
    if hp.arch in ("stack_rnn", "ndstack_rnn"):
        assert hp.stack_size == 30  # their cores' default
    if hp.arch == "stack_rnn":
        assert (hp.stack_cell_size, hp.n_stacks) == (8, 1)
    if hp.arch == "ndstack_rnn":
        assert (hp.stack_states, hp.stack_symbols) == (2, 2)
    if hp.arch == "tape_rnn":  # their example.py's tape
        assert (hp.memory_cell_size, hp.memory_size, hp.mlp_layers_size) == (8, 40, None)
    assert built.config.score_weights == "last"  # their score is of the final parameters
    if data.task_kind == "classification":
        assert hp.readout == "empty" and hp.label_smoothing == 0.0
    else:
        assert isinstance(built.model, Transduction)
    # their score after testing: every length 41..160 (the longest test set), 512 each
    range_eval = RangeEval(**built.config.range_eval.as_dict())
    assert (range_eval.step, range_eval.n, range_eval.sub_batch) == (1, 512, 64)
    assert range_eval.lengths(40, built.model.length_limit, 1, data.output_length)[-1] == 160


@pytest.mark.integration
@pytest.mark.parametrize(
    ("config", "system", "extra", "longest"),
    [
        ("parity_check/transformer", SequenceClassification, (), 24),
        # a learnable table of max_len = 16 + 17 positions (the longest test set and its
        # appended outputs): the range stops at 16, where input and outputs fill it
        ("stack_manipulation/transformer", Transduction, ("--model.pos_mode=learnable",), 16),
    ],
    ids=["classification", "transduction"],
)
def test_a_deletang_config_of_each_system_trains_and_records_their_score(
    config, system, extra, longest, tmp_path
):
    """One config per system (the empty readout; the appended outputs), shrunk: it trains,
    tests and records their score over 9..M as ``range_ood/acc`` and M."""
    small = (*SMALL, *SMALL_TRANSFORMER, *extra)
    record = tiny_fit(DELETANG / f"{config}.yaml", tmp_path / "run", *small)
    assert (record.steps, record.task, record.system) == (6, config.split("/")[0], system.__name__)
    assert 0.0 <= record.metrics["test_len16/acc"] <= 1.0
    assert sorted(map(int, record.curve["acc"])) == list(range(1, longest + 1))
    past = [v for n, v in record.curve["acc"].items() if int(n) > 8]
    assert record.range_ood_longest == longest
    assert record.metrics["range_ood/acc"] == pytest.approx(sum(past) / (longest - 8), abs=1e-6)
