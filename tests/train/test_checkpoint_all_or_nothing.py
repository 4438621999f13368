"""Checkpoint loads that do not fit: all or nothing, and errors that say what is wrong.

- a checkpoint of another optimizer (or another network) loaded into a Model, or with
  ``net=``/``optimizer=``, or by ``load_param_into_net``: an error naming the file and the
  mismatch, and the network, optimizer, loss scale, schedule and position as they were;
- a position further into an epoch than the data set's epoch: an error naming both numbers
  when ``train`` starts, before any step;
- an empty file: said to be empty, not blamed on a filter (MindSpore 2.10 blames
  ``filter_prefix`` even without one; its message is kept for a filter that removed all).
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

import jisu
from jisu.dataset.record.validate import MalformedFileError
from jisu.train import LambdaCallback
from tests.train.test_model import data, model

#: MindSpore 2.10's load_checkpoint message when the filters leave nothing (recorded from
#: mindspore 2.10: load_checkpoint(one_entry_file, filter_prefix=its_name))
MS_EMPTY_AFTER_FILTER = (
    "The loaded parameter dict is empty after filter or specify, please check whether "
    "'filter_prefix' or 'specify_prefix' are set correctly."
)


def _snapshot(m):
    state = m.state_dict()
    return copy.deepcopy({k: v for k, v in state.items() if k != "rng_state"})


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _adam_model(out=3):
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, out))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    return jisu.Model(net, nn.CrossEntropyLoss(), opt)


def test_a_checkpoint_of_another_optimizer_changes_nothing(tmp_path):
    sgd = model()
    sgd.train(1, data()[0])
    path = str(tmp_path / "sgd.ckpt")
    jisu.save_checkpoint(sgd, path)
    adam = _adam_model()
    adam.train(1, data()[0])
    before = _snapshot(adam)
    with pytest.raises(ValueError) as info:
        jisu.load_checkpoint(path, model=adam)
    message = str(info.value)
    assert path in message and "nothing was loaded" in message
    assert "SGD" in message and "Adam" in message
    assert _same(before, _snapshot(adam))
    # with net= and optimizer=: the net is not loaded either
    net_before = copy.deepcopy(adam.network.state_dict())
    with pytest.raises(ValueError, match="SGD"):
        jisu.load_checkpoint(path, adam.network, optimizer=adam.optimizer)
    assert _same(net_before, adam.network.state_dict())
    assert _same(before, _snapshot(adam))


def test_a_failure_after_the_optimizer_was_loaded_puts_it_back(tmp_path, monkeypatch):
    saved = model()
    saved.train(1, data()[0])
    path = str(tmp_path / "m.ckpt")
    jisu.save_checkpoint(saved, path)
    target = model(lr=0.5)
    target.train(2, data(seed=3)[0])
    before = _snapshot(target)

    def fails(state):
        raise RuntimeError("the schedule's state does not fit")

    monkeypatch.setattr(target, "load_state_dict", fails)
    with pytest.raises(RuntimeError, match="schedule's state does not fit") as info:
        jisu.load_checkpoint(path, model=target)
    assert path in str(info.value) and "nothing was loaded" in str(info.value)
    monkeypatch.undo()
    assert _same(before, _snapshot(target))
    assert target._checkpoint_path is None
    jisu.load_checkpoint(path, model=target)  # and it loads when nothing fails
    assert _same(_snapshot(saved)["network"], _snapshot(target)["network"])
    assert target._checkpoint_path == str(tmp_path / "m.ckpt")


def test_a_checkpoint_of_another_network_changes_nothing(tmp_path):
    small = model()
    path = str(tmp_path / "small.ckpt")
    jisu.save_checkpoint(small, path)
    other = _adam_model(out=4)  # the same first layer, another last one
    before = _snapshot(other)
    with pytest.raises(RuntimeError, match=r"'2.weight' has shape \(4, 16\)") as info:
        jisu.load_checkpoint(path, model=other)
    assert path in str(info.value)
    assert _same(before, _snapshot(other))  # the first layer was not copied either
    with pytest.raises(RuntimeError, match="has shape"):
        jisu.load_checkpoint(path, other.network)
    assert _same(before["network"], other.network.state_dict())


def test_load_param_into_net_is_all_or_nothing():
    src = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    params = {k: v.detach().clone() for k, v in src.state_dict().items()}
    params["2.bias"] = params["2.bias"].double()
    dst = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    before = copy.deepcopy(dst.state_dict())
    with pytest.raises(RuntimeError, match="strict_load=True refuses"):
        jisu.load_param_into_net(dst, params, strict_load=True)
    assert _same(before, dst.state_dict())
    params["2.bias"] = torch.zeros(5)
    with pytest.raises(RuntimeError, match=r"'2\.bias' has shape"):
        jisu.load_param_into_net(dst, params)
    assert _same(before, dst.state_dict())
    params["2.bias"] = torch.zeros(3, dtype=torch.float64)  # converted without strict_load
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jisu.load_param_into_net(dst, params) == ([], [])
    assert _same({k: v.float() for k, v in params.items()}, dst.state_dict())


def test_a_position_beyond_the_data_sets_epoch_is_refused_before_any_step(tmp_path):
    path = str(tmp_path / "mid.ckpt")

    def save_at_32(rc):
        params = rc.original_args()
        if params.cur_step_num == 32:
            jisu.save_checkpoint(params.model, path)

    m = model()
    m.train(1, data(n=160, batch=4)[0], callbacks=[LambdaCallback(on_train_step_end=save_at_32)])
    fresh = model()
    jisu.load_checkpoint(path, model=fresh)
    weights = copy.deepcopy(fresh.network.state_dict())
    steps = []
    record = LambdaCallback(on_train_step_end=lambda rc: steps.append(1))
    small = data(n=16, batch=4)[0]  # 4 steps per epoch
    with pytest.raises(ValueError) as info:
        fresh.train(2, small, callbacks=[record])
    message = str(info.value)
    assert "32 steps into an epoch" in message and "4 steps per epoch" in message
    assert steps == [] and _same(weights, fresh.network.state_dict())
    # the position stays pending: the right data set resumes from it
    fresh.train(2, data(n=160, batch=4)[0], callbacks=[record])
    assert len(steps) == 40 - 32 + 40


def test_an_empty_file_is_said_to_be_empty(tmp_path):
    path = tmp_path / "empty.ckpt"
    path.write_bytes(b"")
    for kwargs in ({}, {"filter_prefix": "x"}, {"specify_prefix": "x"}):
        with pytest.raises(MalformedFileError, match="is empty") as info:
            jisu.load_checkpoint(str(path), **kwargs)
        assert "filter" not in str(info.value) and str(path) in str(info.value)
    path.write_bytes(b"\x10\x01")  # one unknown field: no entry
    with pytest.raises(MalformedFileError, match="holds no entry"):
        jisu.load_checkpoint(str(path))


def test_a_filter_that_removes_everything_says_mindspores_message(tmp_path):
    path = str(tmp_path / "one.ckpt")
    jisu.save_checkpoint({"a": torch.ones(2)}, path)
    with pytest.raises(ValueError) as info:
        jisu.load_checkpoint(path, filter_prefix="a")
    message = str(info.value)
    assert message.startswith(MS_EMPTY_AFTER_FILTER)
    assert path in message and "filter_prefix='a'" in message


def test_a_nested_network_dict_is_checked_before_any_copy():
    dst = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    before = copy.deepcopy(dst.state_dict())
    state = {k: torch.zeros_like(v) for k, v in before.items()}
    state["2.weight"] = torch.zeros(4, 16)
    with pytest.raises(RuntimeError, match=r"'2\.weight' has shape \(3, 16\)"):
        jisu.load_param_into_net(dst, {"network": state})
    assert _same(before, dst.state_dict())
    del state["2.weight"]
    with pytest.raises(RuntimeError, match=r"strict_load=True.*missing \['2\.weight'\]"):
        jisu.load_param_into_net(dst, {"network": state}, strict_load=True)
    assert _same(before, dst.state_dict())


def test_a_file_of_the_earlier_format_that_does_not_fit_changes_nothing(tmp_path):
    from tests.train.test_checkpoint_safety import checkpoint_bytes

    path = tmp_path / "old.ckpt"
    path.write_bytes(checkpoint_bytes("earlier"))  # Linear(4, 2) and a one-group SGD
    torch.manual_seed(5)
    net = nn.Linear(4, 2)
    groups = [{"params": [net.weight]}, {"params": [net.bias]}]  # two groups: does not fit
    m = jisu.Model(net, nn.MSELoss(), torch.optim.SGD(groups, lr=0.1, momentum=0.9))
    before = _snapshot(m)
    with pytest.raises(ValueError, match="parameter groups") as info:
        jisu.load_checkpoint(str(path), model=m)
    assert str(path) in str(info.value) and "nothing was loaded" in str(info.value)
    assert _same(before, _snapshot(m))
