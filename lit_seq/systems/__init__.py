"""LightningModules ("systems"): loss, metrics, optimizer and schedule around a network.

``SYSTEMS`` maps a data module's ``task_kind`` to the system that trains it; ``lit_seq.fit``
refuses a data module and a system whose kinds differ.
"""

from lit_seq.systems.base import SequenceSystem
from lit_seq.systems.binary import StepBinary
from lit_seq.systems.classification import SequenceClassification
from lit_seq.systems.length_score import deletang_score, length_accuracies
from lit_seq.systems.regression import StepRegression
from lit_seq.systems.seq2seq import Seq2Seq
from lit_seq.systems.step_classification import StepClassification
from lit_seq.systems.transduction import Transduction

SYSTEMS: dict[str, type[SequenceSystem]] = {
    cls.task_kind: cls
    for cls in (
        SequenceClassification,
        StepRegression,
        StepBinary,
        Seq2Seq,
        StepClassification,
        Transduction,
    )
}

__all__ = [
    "SYSTEMS",
    "Seq2Seq",
    "SequenceClassification",
    "SequenceSystem",
    "StepBinary",
    "StepClassification",
    "StepRegression",
    "Transduction",
    "deletang_score",
    "length_accuracies",
]
