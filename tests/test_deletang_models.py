"""Delétang et al. 2023's models and scoring as options, each against a reference computation:
post-LN blocks and sqrt(d) input scaling (``norm``, ``embed_scale``), haiku's LSTM forget
bias (``forget_bias``), haiku's ReLU VanillaRNN (``nonlinearity``), the one-hot input without an embedding (``input_embedding``), the
ReLU before the output layer (``readout_relu``), and scoring the final parameters
(``--score_weights last``)."""

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from lit_seq.ablate.grid import config_digest
from lit_seq.evaluate import find_run
from lit_seq.fit import check_config
from lit_seq.models import (
    AppendedOutputHead,
    EncoderBlock,
    RecurrentBackbone,
    SequenceClassifier,
    TransformerBackbone,
)
from lit_seq.models.unrolled import unrolled
from lit_seq.systems import SYSTEMS
from tests.helpers import CONFIG_DIR, tiny_fit
from tests.test_models_backbones import copy_into_torch_mha, copy_linear

B, T, D, H = 2, 5, 8, 2

# -- transformer: post-LN and the sqrt(d) input scale --------------------------------------


def test_post_ln_block_matches_torch_norm_first_false_layer():
    torch.manual_seed(0)
    ours = EncoderBlock(D, H, 16, dropout=0.0, norm="post").eval()
    ref = nn.TransformerEncoderLayer(
        D, H, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=False
    ).eval()
    copy_into_torch_mha(ours.attn, ref.self_attn)
    copy_linear(ours.ffn.fc1, ref.linear1)
    copy_linear(ours.ffn.fc2, ref.linear2)
    with torch.no_grad():  # LayerNorms away from their identity start, so the order shows
        for ln in (ours.ln1, ours.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    ref.norm1.load_state_dict(ours.ln1.state_dict())
    ref.norm2.load_state_dict(ours.ln2.state_dict())
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, -2:] = True
    out, _ = ours(x, key_padding_mask=pad)
    ref_out = ref(x, src_key_padding_mask=pad)
    torch.testing.assert_close(out[~pad], ref_out[~pad], atol=1e-5, rtol=1e-4)
    # and it is not the pre-LN block with the same weights
    pre = EncoderBlock(D, H, 16, dropout=0.0, norm="pre").eval()
    pre.load_state_dict(ours.state_dict())
    assert not torch.allclose(pre(x)[0], ours(x)[0], atol=1e-3)


def test_post_ln_backbone_scales_its_input_by_sqrt_d_and_adds_no_final_norm():
    torch.manual_seed(0)
    kwargs = dict(d_model=D, n_layers=2, n_heads=H, d_ff=16, dropout=0.0)
    scaled = TransformerBackbone(**kwargs, norm="post", embed_scale=True).eval()
    plain = TransformerBackbone(**kwargs, norm="post").eval()
    plain.load_state_dict(scaled.state_dict())  # same weights: no final LayerNorm in either
    assert isinstance(scaled.ln_f, nn.Identity)
    x = torch.randn(B, T, D)
    torch.testing.assert_close(scaled(x), plain(x * math.sqrt(D)))  # sinusoid added after
    # the reference: sinusoidal positions added to the scaled input, then the blocks in turn
    h = scaled.pos(x * math.sqrt(D))
    for block in scaled.blocks:
        h, _ = block(h)
    torch.testing.assert_close(scaled(x), h)


# -- LSTM: haiku's forget-gate bias ----------------------------------------------------------


def haiku_lstm(x, w_ih, w_hh, bias, forget_bias=1.0):
    """Haiku's LSTM (recurrent.py): gates i, g, f, o; ``f = sigmoid(f + 1)``; one bias.

    ``w_ih``, ``w_hh`` and ``bias`` come in torch's gate order i, f, g, o."""
    hidden = w_hh.shape[1]
    h = c = x.new_zeros(x.shape[0], hidden)
    outs = []
    for t in range(x.shape[1]):
        i, f, g, o = (x[:, t] @ w_ih.T + h @ w_hh.T + bias).split(hidden, dim=-1)
        c = torch.sigmoid(f + forget_bias) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs, dim=1)


def test_forget_bias_one_is_haikus_lstm_with_its_bias_starting_at_zero():
    torch.manual_seed(0)
    ours = RecurrentBackbone(d_model=D, cell="lstm", input_size=3, forget_bias=1.0).eval()
    torch.manual_seed(0)
    torch_default = RecurrentBackbone(d_model=D, cell="lstm", input_size=3).eval()
    # the same draw, plus 1 on the forget quarter (torch's gates i, f, g, o) of bias_ih only
    shift = torch.zeros(4 * D)
    shift[D : 2 * D] = 1.0
    rnn, base = ours.rnn, torch_default.rnn
    torch.testing.assert_close(rnn.bias_ih_l0, base.bias_ih_l0 + shift)
    torch.testing.assert_close(rnn.bias_hh_l0, base.bias_hh_l0)
    # haiku's step, its learned bias the torch default's (no +1 in it), adds the 1 itself
    x = torch.randn(B, T, 3)
    bias = base.bias_ih_l0 + base.bias_hh_l0
    expected = haiku_lstm(x, rnn.weight_ih_l0, rnn.weight_hh_l0, bias.detach())
    with torch.no_grad():
        torch.testing.assert_close(ours(x), expected, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(unrolled(rnn, x), expected, atol=1e-6, rtol=1e-5)  # vmap's


def test_forget_bias_is_refused_for_the_rnn_cell():
    with pytest.raises(
        ValueError, match=r"^forget_bias=1.0 only applies to cell='lstm', not 'rnn'"
    ):
        RecurrentBackbone(d_model=D, cell="rnn", forget_bias=1.0)


# -- RNN: haiku's VanillaRNN, a ReLU recurrence -----------------------------------------------


def test_relu_rnn_is_the_hand_computed_relu_recurrence_fused_and_unrolled():
    torch.manual_seed(0)
    ours = RecurrentBackbone(d_model=D, cell="rnn", input_size=3, nonlinearity="relu").eval()
    r = ours.rnn
    x = torch.randn(B, T, 3)
    h, states = torch.zeros(B, D), []
    for t in range(T):  # h_t = relu(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), h_0 = 0
        h = torch.relu(
            x[:, t] @ r.weight_ih_l0.T + r.bias_ih_l0 + h @ r.weight_hh_l0.T + r.bias_hh_l0
        )
        states.append(h)
    expected = torch.stack(states, dim=1).detach()
    assert (expected == 0).any() and (expected > 0).any()  # the ReLU cuts, and passes
    with torch.no_grad():
        torch.testing.assert_close(ours(x), expected, atol=1e-6, rtol=1e-5)


def test_unrolled_relu_rnn_equals_torch_nn_rnn_relu_in_float64():
    torch.manual_seed(0)
    rnn = nn.RNN(3, D, num_layers=2, nonlinearity="relu", batch_first=True).double()
    x = torch.randn(B, T, 3, dtype=torch.float64)
    with torch.no_grad():
        torch.testing.assert_close(unrolled(rnn, x), rnn(x)[0], atol=1e-12, rtol=1e-12)


# -- one-hot input without an embedding, and the ReLU before the readout ---------------------


class Recorder(nn.Module):
    """A backbone that keeps what it reads and returns it zero-padded to width D."""

    causal = True

    def forward(self, x, padding_mask=None):
        self.seen = x
        return nn.functional.pad(x, (0, D - x.shape[-1]))


def test_one_hot_input_is_read_one_symbol_wider_with_the_empty_symbol_last():
    # 2 symbols: input 0 1 and 2 output positions -> the tape 0 1 E E over 3 one-hot columns
    head = AppendedOutputHead(
        Recorder(), in_features=2, out_features=2, d_model=D, input_embedding=False
    )
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # (1, 2, 2)
    head(x, n_out=2)
    expected = [[[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]]]
    assert head.backbone.seen.tolist() == expected
    assert not any("embed" in name or "empty" in name for name, _ in head.named_parameters())
    # a classifier's "empty" readout takes the first padded slot: x1 E pad
    clf = SequenceClassifier(Recorder(), 2, 2, D, readout="empty", input_embedding=False)
    clf(x, padding_mask=torch.tensor([[False, True]]))
    assert clf.backbone.seen.tolist() == [[[1, 0, 0], [0, 0, 1], [0, 0, 0]]]


def test_one_hot_rnn_reads_the_column_of_its_input_weights_its_symbol_picks():
    torch.manual_seed(0)
    rnn = RecurrentBackbone(d_model=4, cell="rnn", input_size=3)
    head = AppendedOutputHead(rnn, in_features=2, out_features=2, d_model=4, input_embedding=False)
    x = torch.tensor([[[0.0, 1.0]]])  # symbol 1
    r = rnn.rnn
    with torch.no_grad():
        head(x, n_out=1)
        first = torch.tanh(r.weight_ih_l0[:, 1] + r.bias_ih_l0 + r.bias_hh_l0)  # h_0 = 0
        torch.testing.assert_close(rnn(nn.functional.pad(x, (0, 1)))[0, 0], first)


def test_readout_relu_drops_the_negative_outputs_before_the_output_layer():
    class Constant(nn.Module):
        causal = True

        def forward(self, x, padding_mask=None):
            return torch.tensor([-2.0, 3.0] + [0.0] * (D - 2)).expand(*x.shape[:2], D)

    head = AppendedOutputHead(Constant(), 2, 1, D, readout_relu=True)
    with torch.no_grad():
        head.head.weight.fill_(1.0)
        head.head.bias.fill_(0.5)
    assert head(torch.zeros(1, 2, 2), n_out=1).item() == 3.5  # relu(-2) + relu(3) + 0.5
    head.act = nn.Identity()  # without the ReLU: -2 + 3 + 0.5
    assert head(torch.zeros(1, 2, 2), n_out=1).item() == 1.5


# -- refused where nothing reads them ---------------------------------------------------------


@pytest.mark.parametrize(
    "system, options, message",
    [
        (
            "classification",
            dict(arch="rnn", norm="post"),
            "norm='post' only applies to arch='transformer', not 'rnn'",
        ),
        (
            "classification",
            dict(arch="lstm", embed_scale=True),
            "embed_scale=True only applies to arch='transformer', not 'lstm'",
        ),
        (
            "classification",
            dict(arch="rnn", forget_bias=1.0),
            "forget_bias=1.0 only applies to arch='lstm', not 'rnn'",
        ),
        # issue 38's set-away options of the built-ins, one per arch: refused, not ignored
        (
            "classification",
            dict(arch="lstm", n_heads=8),
            "n_heads=8 only applies to arch='transformer' or arch='linear_attention', not 'lstm'",
        ),
        (
            "classification",
            dict(arch="rnn", d_ff=256),
            "d_ff=256 only applies to arch='transformer' or arch='linear_rnn' or "
            "arch='linear_attention', not 'rnn'",
        ),
        (
            "classification",
            dict(arch="transformer", bidirectional=True),
            "bidirectional=True only applies to arch='rnn' or arch='lstm', not 'transformer'",
        ),
        (
            "classification",
            dict(arch="mamba", n_heads=8),
            "n_heads=8 only applies to arch='transformer' or arch='linear_attention', not 'mamba'",
        ),
        (
            "classification",
            dict(arch="linear_rnn", d_state=8),
            "d_state=8 only applies to arch='mamba', not 'linear_rnn'",
        ),
        (
            "classification",
            dict(arch="linear_attention", eigenvalues="signed"),
            "eigenvalues='signed' only applies to arch='linear_rnn', not 'linear_attention'",
        ),
        *[
            (
                "classification",
                dict(arch=arch, nonlinearity="relu"),
                f"nonlinearity='relu' only applies to arch='rnn' or arch='stack_rnn' or "
                f"arch='ndstack_rnn' or arch='tape_rnn', not '{arch}'",
            )
            for arch in ("lstm", "transformer")
        ],
        ("seq2seq", dict(arch="rnn", nonlinearity="relu"), "nonlinearity='relu' does not apply"),
        (
            "classification",
            dict(input_embedding=False),
            "input_embedding=False only applies to arch='rnn' or arch='lstm' or "
            "arch='stack_rnn' or arch='ndstack_rnn' or arch='tape_rnn', not 'transformer'",
        ),
        (
            "seq2seq",
            dict(arch="lstm", readout_relu=True),
            "readout_relu=True does not apply to seq2seq",
        ),
        ("seq2seq", dict(norm="post"), "norm='post' does not apply to seq2seq"),
    ],
)
def test_an_option_no_part_of_the_network_reads_is_refused_in_one_line(system, options, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")):
        SYSTEMS[system](in_features=3, out_features=2, **options)


def test_the_faithful_options_build_each_network():
    lstm = SYSTEMS["transduction"](
        in_features=2,
        out_features=2,
        arch="lstm",
        d_model=D,
        input_embedding=False,
        readout_relu=True,
        forget_bias=1.0,
    )
    assert lstm.net.backbone.rnn.input_size == 3  # the one-hot input, one symbol wider
    post = SYSTEMS["classification"](in_features=2, out_features=2, norm="post", embed_scale=True)
    rnn = SYSTEMS["transduction"](in_features=2, out_features=2, arch="rnn", nonlinearity="relu")
    assert rnn.net.backbone.rnn.mode == "RNN_RELU"
    assert post.net.backbone.blocks[0].post and post.net.backbone.scale == 8.0  # sqrt(64)


# -- scoring the final parameters or the best checkpoint -------------------------------------


@pytest.mark.integration
def test_score_weights_last_scores_the_final_parameters_and_the_record_says_so(tmp_path):
    config = CONFIG_DIR / "echo" / "rnn.yaml"
    # validations at steps 3 and 6 only: the best checkpoint is one of those, never step 8
    args = ["--trainer.max_steps=8", "--trainer.val_check_interval=3"]
    best = tiny_fit(config, tmp_path / "best", *args)
    last = tiny_fit(config, tmp_path / "last", *args, "--score_weights=last")
    assert (best.score_weights, last.score_weights) == ("best", "last")
    assert best.steps == last.steps == 8
    assert best.best_checkpoint.endswith(("best-step=3.ckpt", "best-step=6.ckpt"))
    assert best.metrics["test/loss"] != last.metrics["test/loss"]
    # last.ckpt was saved at the final step, and re-scoring a run folder takes what its
    # record scored
    assert torch.load(last.last_checkpoint, weights_only=True)["global_step"] == 8
    assert find_run(tmp_path / "last")[1].name == "last.ckpt"
    assert find_run(tmp_path / "best")[1].name == Path(best.best_checkpoint).name


def test_the_new_options_at_their_defaults_leave_a_grid_runs_digest_as_it_was():
    """A grid folder made before these options existed stays resumable (``config_digest``)."""
    config = check_config(["--config", str(CONFIG_DIR / "echo" / "lstm.yaml")]).config
    now = config_digest(config)
    before = config.clone()  # the config as parsed before the options existed
    del before["score_weights"]
    added = ("norm", "embed_scale", "forget_bias", "nonlinearity", "input_embedding")
    memory = ("stack_cell_size", "stack_size", "n_stacks", "stack_states", "stack_symbols")
    memory += ("read_states", "memory_cell_size", "memory_size", "mlp_layers_size")
    for key in (*added, *memory, "readout_relu"):
        del before.model.init_args[key]
    assert config_digest(before) == now
    changed = config.clone()
    changed.model.init_args["forget_bias"] = 1.0  # set: the run computes otherwise
    assert config_digest(changed) != now
    changed = config.clone()
    changed["score_weights"] = "last"
    assert config_digest(changed) != now
