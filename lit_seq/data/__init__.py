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
from lit_seq.data.binary_addition import BinaryAdditionData, binary_addition_targets
from lit_seq.data.binary_multiplication import (
    BinaryMultiplicationData,
    binary_multiplication_targets,
)
from lit_seq.data.bucket_sort import BucketSortData, bucket_sort_targets
from lit_seq.data.compute_sqrt import ComputeSqrtData, compute_sqrt_targets
from lit_seq.data.cycle_navigation import CycleNavigationData, cycle_navigation_labels
from lit_seq.data.duplicate_string import DuplicateStringData, duplicate_string_targets
from lit_seq.data.echo import EchoData, echo_targets
from lit_seq.data.even_pairs import EvenPairsData, even_pairs_labels
from lit_seq.data.fresh import FreshBatches, FreshSteps, fresh_loader
from lit_seq.data.missing_duplicate_string import (
    MissingDuplicateStringData,
    missing_duplicate_string_labels,
)
from lit_seq.data.modular_arithmetic import ModularArithmeticData, modular_arithmetic_labels
from lit_seq.data.modular_arithmetic_brackets import (
    ModularArithmeticBracketsData,
    modular_arithmetic_brackets_labels,
)
from lit_seq.data.odds_first import OddsFirstData, odds_first_targets
from lit_seq.data.parity_check import ParityCheckData, parity_labels
from lit_seq.data.parity_sum import ParitySumData, parity_sum_targets
from lit_seq.data.reverse_string import ReverseStringData, reverse_string_targets
from lit_seq.data.seq2seq import BOS, EOS, N_SPECIAL, OPS, PAD, Seq2SeqData, seq2seq_targets
from lit_seq.data.signal import SignalData, sine_waves
from lit_seq.data.solve_equation import SolveEquationData, solve_equation_labels
from lit_seq.data.stack_manipulation import StackManipulationData, stack_manipulation_targets
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
        # the rest of Delétang et al. 2023's Table 2, by level: regular, context-free,
        # context-sensitive
        EvenPairsData,
        CycleNavigationData,
        ReverseStringData,
        StackManipulationData,
        ModularArithmeticBracketsData,
        SolveEquationData,
        DuplicateStringData,
        OddsFirstData,
        BinaryAdditionData,
        MissingDuplicateStringData,
        BinaryMultiplicationData,
        ComputeSqrtData,
        BucketSortData,
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
    "BinaryAdditionData",
    "BinaryMultiplicationData",
    "BucketSortData",
    "ComputeSqrtData",
    "CycleNavigationData",
    "DuplicateStringData",
    "EchoData",
    "EvenPairsData",
    "FreshBatches",
    "FreshSteps",
    "GroupedTensorDicts",
    "MissingDuplicateStringData",
    "ModularArithmeticBracketsData",
    "ModularArithmeticData",
    "OddsFirstData",
    "ParityCheckData",
    "ParitySumData",
    "ReverseStringData",
    "Seq2SeqData",
    "SignalData",
    "SolveEquationData",
    "StackManipulationData",
    "SumModData",
    "SyntheticDataModule",
    "TensorDictDataset",
    "batch_loader",
    "binary_addition_targets",
    "binary_multiplication_targets",
    "bucket_sort_targets",
    "compute_sqrt_targets",
    "cycle_navigation_labels",
    "duplicate_string_targets",
    "echo_targets",
    "even_pairs_labels",
    "fresh_loader",
    "missing_duplicate_string_labels",
    "modular_arithmetic_brackets_labels",
    "modular_arithmetic_labels",
    "odds_first_targets",
    "parity_labels",
    "parity_sum_targets",
    "recall_sequences",
    "reverse_string_targets",
    "seq2seq_targets",
    "sine_waves",
    "solve_equation_labels",
    "stack_manipulation_targets",
    "sum_mod_targets",
]
