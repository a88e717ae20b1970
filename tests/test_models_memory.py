"""Delétang et al.'s memory RNNs (stack_rnn, ndstack_rnn, tape_rnn): the docstrings' worked
examples of the stack and tape updates, the tape's jump by the input length through the
heads, causality, populations, compile, the options and every task kind.

Their numbers against the paper's own JAX code: tests/test_peer_memory_models.py."""

import math

import pytest
import torch
from torch.func import functional_call, vmap

from lit_seq.fit import cli_main
from lit_seq.models import (
    MEMORY_RNNS,
    AppendedOutputHead,
    SequenceClassifier,
    build_backbone,
)
from lit_seq.models.memory import push_pop, tape_index, tape_update
from lit_seq.models.ndstack_rnn import stack_step, top_read
from lit_seq.models.stacking import stacked_members
from lit_seq.population.stacked import stack_weights
from lit_seq.population.train import fit_population
from lit_seq.systems import SequenceClassification, Transduction
from tests.helpers import CONFIG_DIR, backbone_options, tiny_fit

B, T, D = 2, 7, 8
# small memories, so that T = 7 steps meet their edges: a full stack, a frozen ND stack, jumps
SMALL = dict(stack_cell_size=3, stack_size=4, memory_cell_size=3, memory_size=5)
SMALL["mlp_layers_size"] = [6]


def make(arch: str, input_size: int | None = None, **overrides) -> torch.nn.Module:
    chosen = dict(d_model=D, n_layers=1, dropout=0.0, nonlinearity="relu", **SMALL)
    options = backbone_options(**(chosen | overrides))
    given = dict(causal=True, max_len=32, input_size=input_size)
    return build_backbone(arch, options, **given).eval()


# -- the memories' updates: the docstrings' worked examples --------------------------------


def test_a_push_then_a_pop_leaves_the_top_as_it_was():
    stack = torch.tensor([1.0, 2.0, 3.0]).view(1, 1, 3, 1)  # top first
    push, pop = torch.tensor([[[1.0, 0, 0]]]), torch.tensor([[[0, 1.0, 0]]])
    pushed = push_pop(stack, push, torch.tensor([[[5.0]]]))
    assert pushed.flatten().tolist() == [5, 1, 2]  # the bottom cell fell off
    assert push_pop(pushed, pop, torch.tensor([[[7.0]]])).flatten().tolist() == [1, 2, 0]
    noop = torch.tensor([[[0, 0, 1.0]]])
    assert push_pop(stack, noop, torch.tensor([[[7.0]]])).flatten().tolist() == [1, 2, 3]
    # one cell: their read of cell 1 is clamped to cell 0, so a pop keeps it
    assert push_pop(stack[:, :, :1], pop, torch.tensor([[[7.0]]])).flatten().tolist() == [1]


def test_a_mixture_of_actions_mixes_the_three_stacks():
    stack = torch.tensor([1.0, 2.0, 3.0]).view(1, 1, 3, 1)
    mixed = push_pop(stack, torch.tensor([[[0.5, 0.25, 0.25]]]), torch.tensor([[[5.0]]]))
    expected = 0.5 * torch.tensor([5.0, 1, 2]) + 0.25 * torch.tensor([2.0, 3, 0])
    expected += 0.25 * torch.tensor([1.0, 2, 3])
    assert mixed.flatten().tolist() == pytest.approx(expected.tolist())


@pytest.mark.parametrize(
    ("move", "expected"),
    [
        (0, [9, 2, 3, 4, 5, 6]),  # stay
        (1, [2, 3, 4, 5, 6, 9]),  # left
        (2, [6, 9, 2, 3, 4, 5]),  # right
        (3, [3, 4, 5, 6, 9, 2]),  # jump left by L = 8, 2 mod 6
        (4, [5, 6, 9, 2, 3, 4]),  # jump right
    ],
)
def test_the_tapes_five_moves_write_then_move_circularly(move, expected):
    tape = torch.arange(1.0, 7.0).view(1, 6, 1)
    actions = torch.nn.functional.one_hot(torch.tensor([move]), 5).float()
    index = tape_index(torch.tensor([8]), 6)
    assert tape_update(tape, actions, torch.tensor([[9.0]]), index).flatten().tolist() == expected


def test_each_example_of_a_batch_jumps_by_its_own_length():
    tape = torch.arange(1.0, 7.0).view(1, 6, 1).repeat(2, 1, 1)
    jump_right = torch.tensor([[0, 0, 0, 0, 1.0]] * 2)
    index = tape_index(torch.tensor([1, 8]), 6)
    moved = tape_update(tape, jump_right, torch.tensor([[9.0], [9.0]]), index).squeeze(-1)
    assert moved.tolist() == [[6, 9, 2, 3, 4, 5], [5, 6, 9, 2, 3, 4]]


def _nd_actions(kind: str, target: tuple) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """push, pop, replace of one state and 2 symbols, all weight on ``kind`` at ``target``."""
    actions = {"push": (1, 2, 1, 2), "pop": (1, 2, 1), "replace": (1, 2, 1, 2)}
    actions = {name: torch.zeros(1, *shape) for name, shape in actions.items()}
    actions[kind][(0, *target)] = 1.0
    return actions["push"], actions["pop"], actions["replace"]


def test_the_nondeterministic_stack_push_push_pop_worked_example():
    S = 5
    columns = [torch.zeros(1, 2, S, 1, 2, 1)]
    alphas = [torch.tensor([[[1.0, 0.0]]])]  # the first node: state 0, symbol 0
    reads = []
    for kind, target in [
        ("push", (0, 0, 0, 1)),  # from the top (state 0, symbol 0) push symbol 1
        ("push", (0, 1, 0, 0)),  # from (0, 1) push symbol 0
        ("pop", (0, 0, 0)),  # pop the top (0, 0)
    ]:
        alpha = stack_step(columns, alphas, *_nd_actions(kind, target))
        reads.append(top_read(alpha, read_states=False).flatten().tolist())
    one = 1 / 1.001  # a read is divided by its sum + 0.001
    assert reads == [pytest.approx([0, one]), pytest.approx([one, 0]), pytest.approx([0, one])]
    assert top_read(alpha, read_states=True).shape == (1, 2)  # (Q Y,) with Q = 1


def test_the_nondeterministic_stack_freezes_from_step_stack_size_on():
    """Their writes past the end are dropped: from step S on the read is what step S - 1
    left, so a stack of S = 3 and one of 30 give the same outputs 0 .. S - 1 (steps 1 .. S
    read the reads 0 .. S - 1) and part after them. Their numbers in this regime:
    tests/test_peer_memory_models.py (``ndstack_rnn_long``)."""
    torch.manual_seed(0)
    short = make("ndstack_rnn", stack_size=3)
    long = make("ndstack_rnn", stack_size=30)
    long.load_state_dict(short.state_dict())
    x = torch.randn(B, T, D)
    y_short, y_long = short(x), long(x)
    torch.testing.assert_close(y_short[:, :3], y_long[:, :3], rtol=0, atol=0)
    assert not torch.allclose(y_short[:, 3:], y_long[:, 3:])


# -- the jump by the input length, given by the heads ---------------------------------------


def test_the_appended_output_head_gives_the_tape_the_input_length_not_the_whole_length():
    # their example: an input of 8 and its 8 empty positions on 6 cells jump by 8 (2 mod 6)
    torch.manual_seed(0)
    backbone = make("tape_rnn", memory_size=6, input_size=3)
    head = AppendedOutputHead(backbone, 2, 2, D, input_embedding=False, readout_relu=True)
    x = torch.nn.functional.one_hot(torch.randint(0, 2, (B, 8)), 2).float()
    seq = torch.cat([torch.nn.functional.pad(x, (0, 1)), head.empty_token.expand(B, 8, 3)], 1)

    def logits(length):
        h = backbone(seq, input_length=length)
        return head.head(head.act(h[:, 8:]))

    got = head(x, 8)
    torch.testing.assert_close(got, logits(8), rtol=0, atol=0)
    torch.testing.assert_close(got, logits(2), rtol=0, atol=0)  # 8 = 2 mod 6
    assert not torch.allclose(got, logits(16))  # the whole length: 4 mod 6, another model


def test_the_classifier_gives_each_padded_sequence_its_own_length():
    torch.manual_seed(0)
    backbone = make("tape_rnn", memory_size=6, input_size=3)
    clf = SequenceClassifier(backbone, 2, 2, D, readout="empty", input_embedding=False)
    x = torch.nn.functional.one_hot(torch.randint(0, 2, (B, 5)), 2).float()
    pad = torch.zeros(B, 5, dtype=torch.bool)
    pad[0, 3:] = True  # the first sequence is 3 long
    batched = clf(x, pad)
    torch.testing.assert_close(batched[0], clf(x[:1, :3])[0], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(batched[1], clf(x[1:])[0], rtol=1e-6, atol=1e-6)


# -- the backbones ---------------------------------------------------------------------------


@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_outputs_at_t_ignore_inputs_after_t(arch):
    torch.manual_seed(0)
    model = make(arch)
    x = torch.randn(B, T, D)
    t = 3
    x2 = x.clone()
    x2[:, t + 1 :] = torch.randn(B, T - t - 1, D)
    kwargs = {"input_length": 4} if arch == "tape_rnn" else {}
    y, y2 = model(x, **kwargs), model(x2, **kwargs)
    torch.testing.assert_close(y[:, : t + 1], y2[:, : t + 1], rtol=0, atol=0)
    assert not torch.allclose(y[:, t + 1 :], y2[:, t + 1 :])  # the test can fail


@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_trailing_padding_changes_no_real_position(arch):
    torch.manual_seed(0)
    model = make(arch)
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, -3:] = True
    longer = torch.cat([x, torch.randn(B, 4, D)], dim=1)
    longer_pad = torch.cat([pad, torch.ones(B, 4, dtype=torch.bool)], dim=1)
    real = ~pad  # the tape's jumps: each sequence's real length, padded or not
    torch.testing.assert_close(model(longer, longer_pad)[:, :T][real], model(x, pad)[real])


@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_two_layers_stack_as_an_rnns_do_and_dropout_acts_between_them(arch):
    torch.manual_seed(0)
    model = make(arch, n_layers=2, dropout=0.5)
    assert len(model.layers) == 2 and model.layers[1].controller.input_size == D
    x = torch.randn(B, T, D)
    y = model(x)
    assert y.shape == (B, T, D)
    torch.manual_seed(1)
    assert not torch.allclose(model.train()(x), y)  # dropout between the layers


@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_a_stacked_member_computes_its_solo_forward_in_float64(arch):
    """What a population does (``population.stacked``): K members' weights stacked, one
    vmapped ``functional_call``; each member's output and gradient are its solo run's."""
    torch.manual_seed(0)
    members = [make(arch).double() for _ in range(3)]
    stacked = {n: w.requires_grad_() for n, w in stack_weights(members).items()}
    x = torch.randn(3, B, T, D, dtype=torch.float64)

    def one(weights, xs):
        return functional_call(members[0], weights, (xs,))

    with stacked_members():
        out = vmap(one, randomness="error")(stacked, x)
    out.square().sum().backward()
    for k, member in enumerate(members):
        solo = member(x[k])
        torch.testing.assert_close(out[k], solo, rtol=0, atol=1e-12)
        solo.square().sum().backward()
        for name, param in member.named_parameters():
            torch.testing.assert_close(stacked[name].grad[k], param.grad, rtol=0, atol=1e-10)


@pytest.mark.integration  # tracing an unrolled loop: several seconds an arch
@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_the_forward_traces_whole_and_the_traced_forward_equals_eager(arch):
    # fullgraph: a graph break would fail here (what --compile needs of a backbone)
    torch.manual_seed(0)
    model = make(arch)
    x = torch.randn(B, T, D)
    torch._dynamo.reset()
    traced = torch.compile(model, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(traced(x), model(x), rtol=1e-5, atol=1e-5)


# -- through the systems ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"arch": "lstm", "stack_cell_size": 4},
            r"^stack_cell_size=4 only applies to arch='stack_rnn', not 'lstm'$",
        ),
        (
            {"arch": "tape_rnn", "stack_size": 5},
            r"^stack_size=5 only applies to arch='stack_rnn' or arch='ndstack_rnn', not 'tape_rnn'$",
        ),
        (
            {"arch": "stack_rnn", "read_states": True},
            r"^read_states=True only applies to arch='ndstack_rnn', not 'stack_rnn'$",
        ),
        (
            {"arch": "ndstack_rnn", "memory_size": 3},
            r"^memory_size=3 only applies to arch='tape_rnn', not 'ndstack_rnn'$",
        ),
        (
            {"arch": "rnn", "mlp_layers_size": [8]},
            r"^mlp_layers_size=\[8\] only applies to arch='tape_rnn', not 'rnn'$",
        ),
        (
            {"arch": "stack_rnn", "bidirectional": True},
            r"^bidirectional=True only applies to arch='rnn' or arch='lstm', not 'stack_rnn'$",
        ),
        ({"arch": "ndstack_rnn", "stack_states": 0}, r"^stack_states must be an integer >= 1"),
        ({"arch": "tape_rnn", "mlp_layers_size": [8, 0]}, r"^mlp_layers_size must be an integer"),
    ],
)
def test_an_option_the_arch_does_not_read_is_refused_in_one_line(overrides, message):
    with pytest.raises(ValueError, match=message):
        SequenceClassification(out_features=2, **overrides)


def test_each_memory_rnn_reads_its_options_from_the_system():
    stack = Transduction(in_features=2, out_features=2, arch="stack_rnn", d_model=8, n_stacks=2)
    core = stack.net.backbone.layers[0]
    assert (core.n, core.S, core.C) == (2, 30, 8) and core.actions.out_features == 6
    nd = Transduction(in_features=2, out_features=2, arch="ndstack_rnn", d_model=8, stack_states=3)
    assert nd.net.backbone.layers[0].actions.out_features == 6**2 + 3 * 6 + 6**2  # Q = 3, Y = 2
    tape = Transduction(
        in_features=2, out_features=2, arch="tape_rnn", d_model=8, mlp_layers_size=[], memory_size=7
    )
    core = tape.net.backbone.layers[0]
    assert core.M == 7 and [layer.out_features for layer in core.mlp] == [8]
    their = Transduction(in_features=2, out_features=2, arch="tape_rnn").net.backbone.layers[0]
    assert [layer.out_features for layer in their.mlp] == [64, 64, 8]  # None: their (64, 64)


def test_their_one_hot_input_and_haikus_initialisation_reach_every_layer():
    torch.manual_seed(0)
    system = Transduction(
        in_features=2, out_features=2, arch="tape_rnn", d_model=16, input_embedding=False,
        readout_relu=True, init="haiku", nonlinearity="relu",
    )  # fmt: skip
    core = system.net.backbone.layers[0]
    assert core.controller.input_to_hidden.in_features == 3 + 8  # V + 1 one-hot, the cell
    for layer in (core.controller.input_to_hidden, core.mlp[2], core.actions):
        assert torch.all(layer.bias == 0)  # haiku's zero biases, drawn into every nn.Linear
        assert layer.weight.abs().max() <= 2 / math.sqrt(layer.in_features)


@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_a_cls_readout_is_refused_as_the_first_position_sees_nothing_after_it(arch):
    with pytest.raises(ValueError, match="readout='cls' needs a backbone"):
        SequenceClassification(out_features=2, arch=arch, readout="cls")


KINDS = [
    "parity_check",
    "echo",
    "associative_recall",
    "sum_mod",
    "deletang/reverse_string",
    "deletang/parity_check",
]


@pytest.mark.integration
@pytest.mark.parametrize("task", KINDS)
@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_every_memory_rnn_trains_on_every_task_kind_and_its_record_names_it(tmp_path, arch, task):
    """Classifier (last and Delétang's empty readout), per-step binary and classes, causal
    per-step, and Delétang's transduction: their rnn.yaml with the arch swapped."""
    short = ["--model.d_model=16", "--data.init_args.length=6", "--range_eval.max_factor=2"]
    short += ["--range_eval.n=16", "--data.init_args.n_val=32", "--data.init_args.n_test=32"]
    extra = short if task.startswith("deletang") else ["--model.d_model=16"]
    result = tiny_fit(CONFIG_DIR / task / "rnn.yaml", tmp_path, f"--model.arch={arch}", *extra)
    assert result.arch == arch
    assert all(math.isfinite(v) for k, v in result.metrics.items() if k.endswith("/loss"))


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("arch", MEMORY_RNNS)
def test_a_population_member_trains_exactly_as_its_solo_run_in_float64(tmp_path, arch):
    """The whole fit (``population.train``), not only the forward: 2 members at 2 rates."""

    def args(run_dir, seed, lr):
        return [
            "--config",
            str(CONFIG_DIR / "echo" / "rnn.yaml"),
            f"--run_dir={run_dir}",
            f"--seed_everything={seed}",
            f"--model.arch={arch}",
            f"--model.lr={lr}",
            "--model.d_model=16",
            "--trainer.max_steps=8",
            "--trainer.val_check_interval=4",
            "--trainer.log_every_n_steps=1",
            "--trainer.precision=64-true",
            "--trainer.enable_progress_bar=false",
            "--data.init_args.n_val=32",
            "--data.init_args.n_test=32",
            "--wandb=off",
        ]

    lrs = [0.01, 0.003]
    outcomes = fit_population([args(tmp_path / f"m{k}", k, lrs[k]) for k in range(2)])
    for k, outcome in enumerate(outcomes):
        solo = cli_main(args(tmp_path / f"s{k}", k, lrs[k]))
        assert outcome.steps == solo.steps
        for key, value in solo.metrics.items():
            assert outcome.metrics[key] == pytest.approx(value, abs=1e-10), key
