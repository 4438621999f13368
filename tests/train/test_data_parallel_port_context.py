"""``mindspore.parallel._utils``' getters the zoo's train cells read, as MindSpore 2.0.0's
source defines them (parallel/_utils.py: 1 device and rank 0 in ``stand_alone`` mode, else
``device_num`` when set, else the group's size), what a train cell builds from them, and
``set_auto_parallel_context`` against MindSpore 2.0.0's recorded answers
(tests/fixtures/ms_data_parallel/context-2.0.0.json)."""

from __future__ import annotations

import ast
import json
import os

import pytest
import torch

import jisu
import jisu.nn as nn
from jisu.context import ParallelMode
from jisu.parallel import _auto_parallel_context
from jisu.parallel._utils import (
    _get_device_num,
    _get_global_rank,
    _get_gradients_mean,
    _get_parallel_mode,
)

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def _reset():
    jisu.reset_auto_parallel_context()
    _auto_parallel_context.auto_parallel_context().reset()
    yield
    jisu.reset_auto_parallel_context()
    _auto_parallel_context.auto_parallel_context().reset()


def test_stand_alone_is_one_device_at_rank_0_whatever_is_set(monkeypatch):
    monkeypatch.setattr(_auto_parallel_context, "world_size", lambda: 2)
    jisu.set_auto_parallel_context(device_num=4, global_rank=3)
    assert _get_parallel_mode() == ParallelMode.STAND_ALONE == "stand_alone"
    assert (_get_device_num(), _get_global_rank()) == (1, 0)


def test_data_parallel_reads_device_num_or_the_job(monkeypatch):
    jisu.set_auto_parallel_context(parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True)
    assert (_get_parallel_mode(), _get_gradients_mean()) == ("data_parallel", True)
    assert _get_device_num() == 1  # no job, device_num not set: the group of one
    monkeypatch.setattr(_auto_parallel_context, "world_size", lambda: 2)
    assert _get_device_num() == 2
    jisu.set_auto_parallel_context(device_num=2)
    assert _get_device_num() == 2
    jisu.set_auto_parallel_context(device_num=8)
    with pytest.warns(UserWarning, match=r"device_num=8, but the torchrun job has 2 processes"):
        assert _get_device_num() == 8  # MindSpore's divisor, with a warning (once)
    assert _get_device_num() == 8


def test_a_train_cell_reduces_in_data_parallel_mode_only():
    net = nn.Dense(3, 2)
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    assert step.reducer_flag is False and step.parallel_mode == "stand_alone"
    jisu.set_auto_parallel_context(
        parallel_mode=ParallelMode.DATA_PARALLEL, gradients_mean=True, device_num=1
    )
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    assert step.reducer_flag is True
    assert isinstance(step.grad_reducer, nn.DistributedGradReducer)
    assert (step.grad_reducer.mean, step.grad_reducer.degree) == (True, 1)
    grads = (torch.ones(2, 3), torch.ones(2))
    assert all(a is b for a, b in zip(step.grad_reducer(grads), grads))  # one process


def _recorded():
    path = os.path.join(os.path.dirname(HERE), "fixtures", "ms_data_parallel", "context-2.0.0.json")
    with open(path) as f:
        return json.load(f)


def _read(keys):
    return {k: jisu.get_auto_parallel_context(k) for k in keys}


def test_set_auto_parallel_context_reads_and_records_as_mindspore_2_0():
    """Defaults (gradients_mean False: summed), every setting the zoo passes (ResNet's
    all_reduce_fusion_config, full_batch, strategy files ...) read back, and reset."""
    want = _recorded()
    assert _read(want["defaults"]) == want["defaults"]
    for key, value in want["set"].items():
        jisu.set_auto_parallel_context(**{key: value})
    assert _read(want["set"]) == want["set"]
    jisu.reset_auto_parallel_context()
    assert _read(want["reset"]) == want["reset"]


def test_set_auto_parallel_context_refuses_what_mindspore_2_0_refuses():
    for case, error in _recorded()["errors"].items():
        key, _, text = case.partition("=")
        value = ast.literal_eval(text)
        with pytest.raises({"TypeError": TypeError, "ValueError": ValueError}[error]):
            jisu.set_auto_parallel_context(**{key: value})
        jisu.reset_auto_parallel_context()
