"""The shared LightningModule anatomy of every lit_seq system.

A *system* (Lightning's "systems vs models" split) receives a plain ``nn.Module`` network
and owns what training needs around it. The subclasses differ only in the network they
build, their loss and their metrics; this base class owns the backbone options, the
optimizer and schedule, and the logging keys ``train/loss``, ``lr``, ``val/<metric>``,
``test/<metric>`` and ``test_len{L}/<metric>``.
"""

import inspect
from typing import ClassVar, Literal

import lightning as L
import torch
from torch import Tensor, nn
from torchmetrics import MetricCollection

from lit_seq.models import (
    BACKBONES,
    EIGENVALUES,
    NONLINEARITIES,
    NORMS,
    OPTIONS,
    POS_MODES,
    BackboneFactory,
    BackboneOptions,
    PluginBackbone,
    build_backbone,
    count_parameters,
    position_limit,
)
from lit_seq.models.dropout import dropout_stream
from lit_seq.models.haiku_init import INITS, haiku_init
from lit_seq.models.one_hot import one_hot_width
from lit_seq.models.positional import SINCOS_LAYOUTS
from lit_seq.models.transformer import FFN_ACTIVATIONS
from lit_seq.systems.arch_options import READ_BY, check_arch_options
from lit_seq.systems.compiled import compile_loss, compiles, new_step
from lit_seq.systems.divergence import DIVERGED_FACTOR, divergence  # noqa: F401 (re-exported)
from lit_seq.systems.max_len import resolve_max_len
from lit_seq.systems.metrics import StepAccuracy
from lit_seq.systems.optimizers import OPTIMIZERS, build_optimizer, check_optimizer_options
from lit_seq.systems.schedules import SCHEDULES
from lit_seq.util.checks import check_choice, check_float, check_int

# The choice fields, typed by the registries: --help lists the values, and the parser (and
# --print_config) refuses any other one before anything is built.
Arch = Literal[tuple(BACKBONES)]
PosMode = Literal[POS_MODES]
Norm = Literal[NORMS]
Optimizer = Literal[tuple(OPTIMIZERS)]
Schedule = Literal[SCHEDULES]
Eigenvalues = Literal[EIGENVALUES]
Nonlinearity = Literal[NONLINEARITIES]
FfnActivation = Literal[tuple(FFN_ACTIVATIONS)]
SincosLayout = Literal[SINCOS_LAYOUTS]
Init = Literal[INITS]


class SequenceSystem(L.LightningModule):
    """Base of the systems (one per task kind, ``SYSTEMS``); never instantiated directly.

    Subclasses set ``self.net`` and implement :meth:`loss`, :meth:`build_metrics` and
    :meth:`evaluate`. ``task_kind`` says which tasks it trains (``fit`` refuses
    any other pairing); ``main_metric`` names the metric that result tables lead with.
    """

    task_kind: ClassVar[str] = ""  # the data modules it trains: their ``task_kind``
    main_metric: ClassVar[str] = "acc"
    # one prediction per position: longer test sets also score positions past training alone
    per_step: ClassVar[bool] = False
    # the ``init`` values it draws: a subclass calling ``init_network`` once its net is built
    # takes every one (``INITS``)
    inits: ClassVar[tuple[str, ...]] = ("torch",)

    def __init__(
        self,
        in_features: int = 1,
        out_features: int = 1,
        max_len: int | None = None,
        data_max_len: int | None = None,
        arch: Arch = "transformer",
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        d_ff: int | None = None,
        dropout: float = 0.1,
        pos_mode: PosMode = "sinusoidal",
        pos_range: int | None = None,
        residual: bool = True,
        bidirectional: bool = False,
        norm: Norm = "pre",
        embed_scale: bool = False,
        attention_bias: bool = True,
        inner_dropout: bool = True,
        ffn_activation: FfnActivation = "gelu",
        pos_from_end: bool = False,
        sincos_layout: SincosLayout = "interleaved",
        forget_bias: float = 0.0,
        nonlinearity: Nonlinearity = "tanh",
        single_bias: bool = False,
        input_embedding: bool = True,
        readout_relu: bool = False,
        embedding_bias: bool = True,
        init: Init = "torch",
        optimizer: Optimizer = "adamw",
        lr: float = 1e-3,
        weight_decay: float = 0.0,
        schedule: Schedule = "noam",
        warmup_steps: int = 100,
        backbone: BackboneFactory | None = None,
        d_state: int = 16,
        eigenvalues: Eigenvalues = "positive",
        stack_cell_size: int = 8,
        stack_size: int = 30,
        n_stacks: int = 1,
        stack_states: int = 2,
        stack_symbols: int = 2,
        read_states: bool = False,
        memory_cell_size: int = 8,
        memory_size: int = 40,
        mlp_layers_size: list[int] | None = None,
    ) -> None:
        """
        Args:
            in_features: Input features per step, or the vocabulary size for token tasks.
                Linked from the data module; no need to set it.
            out_features: Classes, outputs per step, or vocabulary size. Linked from the data.
            max_len: Longest sequence the model reads: the size of a ``learnable`` table and
                the range ``randomized`` draws positions from (both fixed once trained; the
                other encodings read any length). Default: the data's longest sequence
                (``data_max_len``); a value given is kept, and refused if shorter than that.
            data_max_len: The data's longest sequence (its longest test set, with any
                appended output). Linked from the data; no need to set it.
            arch: Backbone: ``transformer``, ``rnn``, ``lstm``, or a mixer (not for
                seq2seq): ``mamba`` (selective state space), ``linear_rnn`` (diagonal linear
                recurrence) or ``linear_attention``. mamba and linear_rnn are causal on
                every task; linear_attention reads every position on a non-causal one.
                Delétang et al. 2023's memory-augmented RNNs (causal, not for seq2seq):
                ``stack_rnn`` (Joulin & Mikolov's stack), ``ndstack_rnn`` (DuSell & Chiang's
                nondeterministic stack), ``tape_rnn`` (a tape that jumps by the input length).
            d_model: Width of the embeddings and of the backbone's hidden state.
            n_layers: Number of transformer blocks or stacked recurrent layers.
            n_heads: Attention heads (transformer, linear_attention); must divide ``d_model``.
            d_ff: Feed-forward width (transformer, linear_rnn, linear_attention); ``None``
                means ``4 * d_model``.
            dropout: Dropout probability inside the backbone.
            pos_mode: Positional encoding (transformer only): ``sinusoidal``, ``learnable``,
                ``none``, ``rotary``, ``alibi``, ``relative`` or ``randomized``.
            pos_range: ``randomized`` draws its positions from [0, pos_range) (transformer
                only); ``None``: from [0, max_len), a range that follows the test lengths,
                so adding a test length changes training. Ruoss et al. fix it (2048); it
                must cover max_len. The other encodings ignore it.
            residual: Keep the residual connections (transformer only); ``False`` is the
                no-residual ablation.
            bidirectional: Read the sequence both ways (rnn/lstm, non-causal tasks only).
            norm: Where the transformer's LayerNorms sit (transformer only): ``pre`` (before
                each sub-layer, one more after the last block) or ``post`` (after each
                residual sum: Vaswani et al. 2017, Delétang et al. 2023).
            embed_scale: Multiply the transformer's input by sqrt(d_model) before the
                positions are added (transformer only; Delétang et al. 2023).
            attention_bias: The attention's query, key, value and output projections have a
                bias (transformer only); ``false``: none, as Delétang et al. 2023's.
            inner_dropout: Dropout also on the attention weights and on the FFN's hidden
                layer (transformer only); ``false``: only on the input (after the positions)
                and on each sub-layer's output before its residual sum, Delétang et al.
                2023's three sites.
            ffn_activation: The FFN's nonlinearity (transformer only): ``gelu`` or ``relu``
                (Delétang et al. 2023's).
            pos_from_end: Count the sinusoidal positions from the end: a length-T input's
                tokens sit at T, T-1, ..., 1, so the last one is always at 1 (transformer;
                Delétang et al. 2023's table). The encodings other than ``sinusoidal``
                ignore it, as they ignore ``pos_range``.
            sincos_layout: Where the sinusoidal table's sines and cosines sit (transformer;
                the other encodings ignore it): ``interleaved`` (sin, cos of each frequency
                side by side) or ``concatenated`` (every sine, then every cosine: Delétang
                et al. 2023's; the same network up to a fixed order of its d dimensions).
            forget_bias: Added to the LSTM forget gate's bias at initialisation (lstm only);
                1.0 is haiku's LSTM, Delétang et al. 2023's.
            nonlinearity: The RNN's activation (rnn, and the controller of stack_rnn,
                ndstack_rnn, tape_rnn): ``tanh`` or ``relu``, h_t = relu(W x_t + U h_{t-1} +
                b): haiku's VanillaRNN, Delétang et al. 2023's (their three memory RNNs' too).
            single_bias: Train one LSTM bias per gate, as haiku's LSTM (lstm only): torch's
                ``bias_hh`` is frozen, holding ``forget_bias`` on the forget gate (0
                elsewhere), and ``bias_ih`` is trained; ``false``: both trained, so Adam
                moves a gate's effective bias twice as far a step.
            input_embedding: ``false``: no embedding layer; the recurrent backbone reads the
                one-hot input itself, one symbol wider for the empty token (rnn, lstm and
                the memory RNNs only; Delétang et al. 2023's recurrent models).
            readout_relu: A ReLU between the backbone's output and the output layer
                (Delétang et al. 2023's RNN/LSTM).
            embedding_bias: The input embedding has a bias (with ``input_embedding``);
                ``false``: none, as Delétang et al. 2023's one-hot ``hk.Linear``.
            init: How the network's weights are drawn: ``torch`` (torch's layers' own) or
                ``haiku`` (haiku's for the same layers, Delétang et al. 2023's: every linear
                weight a normal of std 1/sqrt(fan_in) cut at 2 std, biases 0, the LSTM's
                fan-in input + hidden, LayerNorms 1 and 0, embeddings a cut normal of std
                0.02; ``lit_seq.models.haiku_init``). ``haiku``: classification and
                transduction systems only.
            optimizer: ``adam`` or ``adamw``.
            lr: Peak learning rate (the schedules scale it by a factor <= 1).
            weight_decay: Weight decay of the optimizer.
            schedule: ``noam`` (warm-up, then 1/sqrt(step)), ``cosine`` (warm-up, then
                cosine to zero) or ``constant``.
            warmup_steps: Warm-up length of the ``noam`` and ``cosine`` schedules.
            backbone: Your own backbone instead of ``arch`` (docs/plugins.md): an
                ``nn.Module`` class mapping (B, T, d) -> (B, T, d) that takes ``causal``,
                as ``class_path`` + ``init_args`` (its own options) or an import path. It is
                given the options above that its ``__init__`` names; one it does not name
                must keep its default.
            d_state: State size of each inner channel (``mamba`` only; the paper's 16).
            eigenvalues: Range of the transitions (``linear_rnn`` only): ``positive``, in
                (0, 1), or ``signed``, in (-1, 1), which Grazzi et al. (2025) find parity needs.
            stack_cell_size: Width of a stack cell (``stack_rnn`` only; 8, the cell width
                Delétang et al.'s example.py gives their tape).
            stack_size: Cells of each stack (``stack_rnn``), positions the nondeterministic
                stack holds before it freezes, as theirs (``ndstack_rnn``); their default 30.
            n_stacks: Stacks read and written side by side (``stack_rnn`` only; theirs 1).
            stack_states: States of the nondeterministic stack (``ndstack_rnn`` only; 2).
            stack_symbols: Symbols of the nondeterministic stack (``ndstack_rnn`` only; 2).
            read_states: The controller reads the stack tops' states and symbols, not the
                symbols alone (``ndstack_rnn`` only; theirs false).
            memory_cell_size: Width of a tape cell (``tape_rnn`` only; their example.py's 8).
            memory_size: Cells of the tape, whose jumps move by the input length
                (``tape_rnn`` only; their example.py's 40).
            mlp_layers_size: Hidden widths of the MLP that writes the tape (``tape_rnn``
                only); ``None`` means their default [64, 64]; ``[]``: one linear layer.
        """
        super().__init__()
        check_choice("arch", arch, BACKBONES)
        check_optimizer_options(optimizer, lr, weight_decay, schedule, warmup_steps)
        for name, value in (("d_model", d_model), ("n_layers", n_layers), ("n_heads", n_heads)):
            check_int(name, value, 1)
        if d_ff is not None:
            check_int("d_ff", d_ff, 1, allowed=">= 1 (or null for 4 * d_model)")
        check_float("dropout", dropout, 0.0, maximum=1.0, high_open=True)
        if pos_range is not None:
            check_int("pos_range", pos_range, 1, allowed=">= 1 (or null for max_len)")
        max_len = resolve_max_len(max_len, data_max_len)
        if init not in self.inits:
            raise ValueError(
                f"init={init!r} is not one of {list(self.inits)} for {type(self).__name__} "
                f"(the systems of Delétang's tasks, classification and transduction, take "
                f"{list(INITS)})"
            )
        # an ablation of something the backbone does not have would be a silent no-op
        check_int("d_state", d_state, 1)
        check_choice("eigenvalues", eigenvalues, EIGENVALUES)
        memory = dict(stack_cell_size=stack_cell_size, stack_size=stack_size, n_stacks=n_stacks)
        memory.update(stack_states=stack_states, stack_symbols=stack_symbols)
        memory.update(memory_cell_size=memory_cell_size, memory_size=memory_size)
        for name, value in memory.items():
            check_int(name, value, 1)
        for width in mlp_layers_size or ():
            check_int("mlp_layers_size", width, 1, allowed=">= 1 in every entry")
        # collects the subclass's arguments too: it walks up the chain of __init__ frames
        self.save_hyperparameters()
        hp = self.hparams
        # what some arch or head never reads
        checked = (*READ_BY, "readout_relu", "embedding_bias")
        check_arch_options(arch, self.task_kind, {k: hp[k] for k in checked}, _DEFAULTS)
        # what keys this run's dropout masks (with the step): set by a population for its
        # members, else at the first step the seed torch was seeded with (the run's)
        self.dropout_seed: int | None = None
        # the length the network is built for, whether given or the data's: what builders,
        # checkpoints (so a reload builds the same table) and records read
        hp["max_len"] = max_len
        # what every network builder takes, as one typed value (make_backbone, Seq2Seq)
        self.backbone_options = BackboneOptions(**{name: hp[name] for name in OPTIONS})
        # under LightningCLI the hyperparameters hold the config's own (plain) form of the
        # backbone; keep that form, also when a caller passed a class, for the checkpoints
        self.plugin = self._plugin(self.hparams.get("backbone"), arch)
        if self.plugin is not None:
            self.hparams["backbone"] = self.plugin.spec()
        self.val_metrics = self.build_metrics().clone(prefix="val/")
        # one metric collection per test set, created in setup() once the data is known
        self.test_metrics = nn.ModuleDict()
        # positions the network adds to a sequence (a cls / empty token): make_backbone's
        self._extra_positions = 0
        # the fit's --compile (``systems.compiled``): how the step runs, not what it computes,
        # so not a hyperparameter; the training loss it gives is set as the fit starts
        self.compile_choice = "off"
        self._train_loss = None

    def _plugin(self, backbone: object, arch: str) -> PluginBackbone | None:
        """The plug-in ``backbone`` names, checked against the other options; None if none."""
        if backbone is None:
            return None
        plugin = PluginBackbone.parse(backbone)
        if self.task_kind == "seq2seq":  # it builds no backbone
            raise ValueError(
                f"backbone={plugin.path!r}: seq2seq takes an encoder-decoder arch only"
            )
        if arch != _DEFAULTS["arch"]:
            raise ValueError(
                f"arch={arch!r} and backbone={plugin.path!r}: give one (a plug-in backbone "
                "replaces arch)"
            )
        plugin.check_options(self.backbone_options, _DEFAULTS)
        return plugin

    # -- what subclasses provide ---------------------------------------------------------

    def build_metrics(self) -> MetricCollection:
        raise NotImplementedError

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        """Training loss of one batch."""
        raise NotImplementedError

    def evaluate(self, batch: dict[str, Tensor], metrics: MetricCollection) -> Tensor:
        """Update ``metrics`` with one evaluation batch and return its loss."""
        raise NotImplementedError

    # -- helpers for subclasses ----------------------------------------------------------

    def make_backbone(self, causal: bool, extra_positions: int = 0) -> nn.Module:
        """The configured backbone; ``extra_positions`` are tokens the network prepends."""
        hp = self.hparams
        self._extra_positions = extra_positions
        max_len = hp.max_len + extra_positions
        if self.plugin is not None:
            return self.plugin.build(self.backbone_options, causal=causal, max_len=max_len)
        # without an embedding the recurrence reads the one-hot input (models/one_hot.py)
        width = None if hp.input_embedding else one_hot_width(hp.in_features)
        options = self.backbone_options
        return build_backbone(hp.arch, options, causal=causal, max_len=max_len, input_size=width)

    def init_network(self) -> None:
        """Draw ``self.net``'s weights again as ``init`` says, once a subclass has built it
        (one that does sets ``inits``): ``torch`` keeps torch's draw as it is; ``haiku``
        draws haiku's (``lit_seq.models.haiku_init``) from the same global stream."""
        if self.hparams.init == "haiku":
            haiku_init(self.net)

    @property
    def head_options(self) -> dict:
        """What every head takes of the options above: its input map (and its bias) and its
        readout ReLU."""
        names = ("input_embedding", "readout_relu", "embedding_bias")
        return {name: self.hparams[name] for name in names}

    @property
    def arch_name(self) -> str:
        """What records, tables, the header and W&B call the backbone: ``arch``, or a plug-in
        backbone's ``arch`` attribute (else its class name)."""
        return self.plugin.name if self.plugin is not None else self.hparams.arch

    @property
    def length_limit(self) -> int | None:
        """The longest sequence (in ``max_len``'s units) the network reads; None: any length.

        ``max_len`` for a learnable table, and for randomized positions unless ``pos_range``
        (then ``pos_range``): ``position_limit``, less the positions the network adds; and
        ``max_len`` for a plug-in backbone (it is handed ``max_len`` and may size a table by
        it); None for the other encodings and the recurrent backbones.
        """
        if self.plugin is not None:
            return self.hparams.max_len
        limit = position_limit(self.net)
        return None if limit is None else limit - self._extra_positions

    @property
    def chance_level(self) -> float | None:
        """The main metric of guessing (uniform over the classes); None when not defined."""
        return None

    @property
    def num_parameters(self) -> int:
        return count_parameters(self.net)

    # -- Lightning hooks, in Lightning's order -------------------------------------------

    def test_metrics_for(self, length: int, train_length: int) -> MetricCollection:
        """The metrics of a test set of sequence ``length`` (unprefixed).

        A per-step system adds ``acc_ood`` to a set longer than ``train_length``: accuracy
        on positions >= ``train_length`` only, the positions no training sequence had (its
        ``acc`` also counts the first ``train_length`` positions, which a model that fails
        past them still gets right).
        """
        metrics = self.build_metrics()
        if self.per_step and length > train_length:
            metrics.add_metrics({"acc_ood": StepAccuracy(from_position=train_length)})
        return metrics

    def setup(self, stage: str) -> None:
        self.prepare_tests(getattr(self.trainer, "datamodule", None))

    def prepare_tests(self, datamodule) -> None:
        """One metric collection per test set of ``datamodule`` (what a population's members
        get without a Trainer of their own)."""
        prefixes = getattr(datamodule, "test_prefixes", ["test"])
        lengths = getattr(datamodule, "test_lengths", [0] * len(prefixes))
        train_length = getattr(datamodule, "train_length", 0)
        for prefix, length in zip(prefixes, lengths, strict=True):
            if prefix not in self.test_metrics:
                metrics = self.test_metrics_for(length, train_length)
                self.test_metrics[prefix] = metrics.clone(prefix=f"{prefix}/")

    def on_fit_start(self) -> None:
        self._train_loss = self.loss  # on the device the fit trains on, compiled for it or not
        if compiles(self.compile_choice, self.device):
            self._train_loss = compile_loss(self.loss, self.device)

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> Tensor:
        new_step(self.device)  # CUDA graphs: the last step's outputs are free to reuse
        # dropout masks of (seed, step), as a population member draws them (models/dropout.py)
        if self.dropout_seed is None:  # a solo fit: the seed torch was seeded with (the run's)
            self.dropout_seed = torch.initial_seed()
        with dropout_stream(self.dropout_seed, self.global_step, self.device):
            loss = (self._train_loss or self.loss)(batch)  # no host sync inside
        # each self.log costs ~1 ms of Lightning bookkeeping: log only on the steps loggers
        # write, and on the last one (the progress bar ends on the final loss)
        if self._written_this_step():
            self.log("train/loss", loss, prog_bar=True)
            self.log("lr", self.optimizers().param_groups[0]["lr"])
        return loss

    def _written_this_step(self) -> bool:
        """Whether the loggers write this step's values, or it is the last step."""
        step = self.global_step + 1  # the step being taken; global_step counts finished ones
        trainer = self.trainer
        return step % trainer.log_every_n_steps == 0 or step == trainer.max_steps

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        loss = self.evaluate(batch, self.val_metrics)
        self.log("val/loss", loss, prog_bar=True)
        if batch_idx == 0:  # see test_step
            self.log_dict(self.val_metrics)

    def test_step(self, batch: dict[str, Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        prefix = list(self.test_metrics.keys())[dataloader_idx]
        metrics = self.test_metrics[prefix]
        loss = self.evaluate(batch, metrics)
        self.log(f"{prefix}/loss", loss, add_dataloader_idx=False)
        # a logged Metric is computed at the loop's end over every batch fed to it: log it
        # once (re-logging it cost ~1 ms a metric a batch: measured, echo / rnn's test)
        if batch_idx == 0:
            self.log_dict(metrics, add_dataloader_idx=False)

    def build_optimizer(self, total_steps: int, clips: bool = False):
        """(optimizer, per-step LambdaLR) for ``total_steps``, gradients clipped or not: what
        ``configure_optimizers`` hands Lightning and a Trainer-free loop (the benchmark's)."""
        return build_optimizer(self, self.hparams, total_steps, self.device, clips)

    def configure_optimizers(self):
        total = int(self.trainer.estimated_stepping_batches) if self._trainer else 1
        clips = bool(self._trainer and self.trainer.gradient_clip_val)
        optimizer, scheduler = self.build_optimizer(total, clips)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }


# the defaults of the options above: an option a plug-in backbone never reads must keep its own
_DEFAULTS = {
    name: p.default
    for name, p in inspect.signature(SequenceSystem.__init__).parameters.items()
    if p.default is not p.empty
}
