"""Synthetic sequence tasks as LightningDataModules, one task per file.

`TASKS` maps each DataModule's `name` (used in configs, grids and records) to its class.
"""

from lit_seq.data.associative_recall import AssociativeRecallData, recall_sequences
from lit_seq.data.base import (
    GroupedTensorDicts,
    SyntheticDataModule,
    TensorDictDataset,
    batch_loader,
)
from lit_seq.data.echo import EchoData, echo_targets
from lit_seq.data.modular_arithmetic import ModularArithmeticData, modular_arithmetic_labels
from lit_seq.data.parity_check import ParityCheckData, parity_labels
from lit_seq.data.parity_sum import ParitySumData, parity_sum_targets
from lit_seq.data.seq2seq import BOS, EOS, N_SPECIAL, OPS, PAD, Seq2SeqData, seq2seq_targets
from lit_seq.data.signal import SignalData, sine_waves
from lit_seq.data.sum_mod import SumModData, sum_mod_targets

TASKS: dict[str, type[SyntheticDataModule]] = {
    cls.name: cls
    for cls in (
        SignalData,
        ParitySumData,
        EchoData,
        Seq2SeqData,
        ParityCheckData,
        ModularArithmeticData,
        SumModData,
        AssociativeRecallData,
    )
}

__all__ = [
    "BOS",
    "EOS",
    "N_SPECIAL",
    "OPS",
    "PAD",
    "TASKS",
    "AssociativeRecallData",
    "EchoData",
    "GroupedTensorDicts",
    "ModularArithmeticData",
    "ParityCheckData",
    "ParitySumData",
    "Seq2SeqData",
    "SignalData",
    "SumModData",
    "SyntheticDataModule",
    "TensorDictDataset",
    "batch_loader",
    "echo_targets",
    "modular_arithmetic_labels",
    "parity_labels",
    "parity_sum_targets",
    "recall_sequences",
    "seq2seq_targets",
    "sine_waves",
    "sum_mod_targets",
]
