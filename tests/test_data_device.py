"""The data module puts every split on the training device (no per-step host copies)."""

from types import SimpleNamespace

import torch

from lit_seq.data import EchoData


def test_splits_move_to_the_trainers_device():
    datamodule = EchoData(n_train=8, n_val=4, n_test=4)
    # 'meta' stands in for a GPU: any non-CPU root device must receive the tensors
    datamodule.trainer = SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device("meta")))
    datamodule.setup("fit")
    for split in [datamodule.train_set, datamodule.val_set, *datamodule.test_sets]:
        assert all(t.device.type == "meta" for t in split.tensors.values())


def test_splits_stay_on_cpu_without_a_trainer():
    datamodule = EchoData(n_train=8, n_val=4, n_test=4)
    datamodule.setup("fit")
    assert datamodule.train_set.tensors["x"].device.type == "cpu"
