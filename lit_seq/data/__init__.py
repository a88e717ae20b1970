"""Synthetic sequence tasks as LightningDataModules, one task per file.

`TASKS` maps each DataModule's `name` (used in configs, grids and records) to its class.
"""

from lit_seq.data.base import SyntheticDataModule, TensorDictDataset, batch_loader
from lit_seq.data.echo import EchoData, echo_targets
from lit_seq.data.parity_sum import ParitySumData, parity_sum_targets
from lit_seq.data.seq2seq import BOS, EOS, N_SPECIAL, OPS, PAD, Seq2SeqData, seq2seq_targets
from lit_seq.data.signal import SignalData, sine_waves

TASKS: dict[str, type[SyntheticDataModule]] = {
    cls.name: cls for cls in (SignalData, ParitySumData, EchoData, Seq2SeqData)
}

__all__ = [
    "BOS",
    "EOS",
    "N_SPECIAL",
    "OPS",
    "PAD",
    "TASKS",
    "EchoData",
    "ParitySumData",
    "Seq2SeqData",
    "SignalData",
    "SyntheticDataModule",
    "TensorDictDataset",
    "batch_loader",
    "echo_targets",
    "parity_sum_targets",
    "seq2seq_targets",
    "sine_waves",
]
