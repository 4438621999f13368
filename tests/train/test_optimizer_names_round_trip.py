"""Exact round trips of an optimizer's state through MindSpore-named entries and the
remainder (jisu.train.optimizer_names): ``optimizer_entries`` then ``load_optimizer_entries``
into a fresh optimizer gives back ``state_dict()`` bit for bit and the uninterrupted run's
training, for jisu.nn's optimizers, torch.optim's, a model-zoo optimizer written the MindSpore
way and one jisu does not know; the entries alone (a file without jisu's remainder) restore
the state too. The refusals and warnings of a wrong or partial file.
"""

from __future__ import annotations

import io
import warnings

import pytest
import torch

import jisu.nn as nn
from jisu.common.parameter import Parameter
from jisu.nn.cell import mindspore_named_tensors
from jisu.train.optimizer_names import MARK, load_optimizer_entries, optimizer_entries
from tests.train.test_optimizer_names import (
    JISU,
    ckpt,
    momentum,
    names_of,
    network,
    step,
    torch_optimizers,
    train_cell,
    trained,
)


@pytest.fixture(autouse=True)
def _one_thread(one_intra_op_thread):
    """Tiny steps: one intra-op thread (see conftest)."""


class ZooAdam(nn.Optimizer):
    """A model-zoo optimizer written the MindSpore way (its own construct, cloned moments and
    named beta powers)."""

    def __init__(self, params, learning_rate=0.01):
        super().__init__(learning_rate, params)
        self.beta1_power = Parameter(torch.ones(()), name="beta1_power")
        self.moments1 = self.parameters.clone(prefix="adam_m", init="zeros")
        self.moments2 = self.parameters.clone(prefix="adam_v", init="zeros")

    def construct(self, gradients):
        self.beta1_power.mul_(0.9)
        for p, m, v, g in zip(self.parameters, self.moments1, self.moments2, gradients):
            m.mul_(0.9).add_(g, alpha=0.1)
            v.mul_(0.999).addcmul_(g, g, value=0.001)
            p.sub_(0.01 * m / (1 - self.beta1_power) / (v.sqrt() + 1e-8))
        return True


class Custom(nn.Optimizer):
    """A jisu.nn optimizer of the user's own (``_update``), with a state slot of its name."""

    def _update(self, group, params, grads, lr, keep):
        for p, buf, g in zip(params, self._state_buffers(params, "velocity"), grads):
            buf.mul_(0.5).add_(g)
            p.sub_(lr * buf)


class Opaque(torch.optim.SGD):
    """An optimizer jisu does not know (its own state_dict): all of it travels in rest."""

    def state_dict(self):
        return {"wrapped": super().state_dict(), "extra": [1, 2, 3]}

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict["wrapped"])


ROUND_TRIP = {
    **JISU,
    **torch_optimizers(),
    "zoo_adam": lambda n: ZooAdam(n.trainable_params()),
    "custom": lambda n: Custom(0.1, n.trainable_params()),
    "opaque": lambda n: Opaque(n.trainable_params(), lr=0.1, momentum=0.9),
}


def assert_same(a, b, where="state"):
    assert type(a) is type(b), where
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def written(entries, rest):
    """What a checkpoint gives back: the entries as fresh tensors, rest through torch.save and
    a weights-only load."""
    buf = io.BytesIO()
    torch.save(rest, buf)
    buf.seek(0)
    return {n: t.clone() for n, t in entries}, torch.load(buf, weights_only=True)


@pytest.mark.parametrize("case", sorted(ROUND_TRIP))
def test_exact_round_trip_then_identical_training(case):
    torch.manual_seed(0)
    make = ROUND_TRIP[case]
    net = network()
    opt = make(net)
    cell = train_cell(net, opt)
    for i in range(2):
        step(cell, i)
    entries, rest = optimizer_entries(opt, names_of(net))
    assert len({n for n, _ in entries}) == len(entries)
    saved_state = opt.state_dict()
    weights = {n: t.detach().clone() for n, t in mindspore_named_tensors(net)}
    file_entries, file_rest = written(entries, rest)
    # no tensor both an entry and in rest, beyond small ones
    big = [t for t in _tensors(file_rest) if t.numel() > 1]
    assert not big or case == "opaque", case
    # a fresh run: same weights, a fresh optimizer, the entries and rest loaded
    net2 = network()
    opt2 = make(net2)
    with torch.no_grad():
        for name, tensor in mindspore_named_tensors(net2):
            tensor.copy_(weights[name])
    load_optimizer_entries(opt2, file_entries, names_of(net2), file_rest)
    assert_same(saved_state, opt2.state_dict())
    cell2 = train_cell(net2, opt2)
    step(cell, 2)  # (the per-step rate lists have three steps)
    step(cell2, 2)
    for (name, a), (_, b) in zip(mindspore_named_tensors(net), mindspore_named_tensors(net2)):
        assert torch.equal(a, b), (case, name)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


def test_torch_and_custom_optimizers_names():
    net = network()
    makers = {k: ROUND_TRIP[k] for k in ("torch_sgd", "torch_adam", "torch_rmsprop", "custom")}
    makers["zoo"] = ROUND_TRIP["zoo_adam"]
    got = {}
    for key, make in makers.items():
        net = network()
        opt = make(net)
        cell = train_cell(net, opt)
        step(cell, 0)
        got[key] = [n for n, _ in optimizer_entries(opt, names_of(net))[0]]
    params = ["dense.weight", "dense.bias", "bn.gamma", "bn.beta"]
    assert got["torch_sgd"] == ["learning_rate", "momentum"] + [f"moments.{p}" for p in params]
    assert got["torch_adam"] == ["global_step", "learning_rate", "beta1_power", "beta2_power"] + [
        f"{s}.{p}" for s in ("moment1", "moment2") for p in params
    ]
    assert got["torch_rmsprop"][0] == "learning_rate"
    assert {n.split(".")[0] for n in got["torch_rmsprop"][1:]} == {
        "step",
        "square_avg",
        "momentum_buffer",
        "grad_avg",
    }
    assert got["custom"] == ["global_step", "learning_rate"] + [f"velocity.{p}" for p in params]
    assert got["zoo"] == ["global_step", "learning_rate", "beta1_power"] + [
        f"{s}.{p}" for s in ("adam_m", "adam_v") for p in params
    ]


def test_a_rest_of_another_optimizer_format_or_a_missing_entry_is_refused():
    net, opt, _ = trained("momentum")
    entries, rest = optimizer_entries(opt, names_of(net))
    fresh_net = network()
    fresh = JISU["momentum"](fresh_net)
    with pytest.raises(ValueError, match=r"saved state is of jisu\.nn\.optim\.momentum\.Momentum"):
        load_optimizer_entries(nn.Adam(fresh_net.trainable_params()), dict(entries), {}, rest)
    partial = dict(entries)
    del partial["moments.dense.weight"]
    with pytest.raises(ValueError, match=r"lacks 'moments\.dense\.weight'"):
        load_optimizer_entries(fresh, partial, names_of(fresh_net), rest)
    with pytest.raises(ValueError, match="format 99"):
        load_optimizer_entries(fresh, dict(entries), {}, {**rest, "format": 99})
    bad = {**dict(entries), "moments.dense.weight": torch.zeros(2)}
    with pytest.raises(ValueError, match=r"'moments.dense.weight' has shape \(2,\)"):
        load_optimizer_entries(fresh, bad, names_of(fresh_net), None)


def test_a_file_of_another_optimizer_warns_and_leaves_the_slots_fresh():
    net = network()
    opt = JISU["momentum"](net)
    with pytest.warns(UserWarning, match=r"no Momentum slots for 4 parameter\(s\)"):
        load_optimizer_entries(opt, ckpt("adam"), names_of(net), None)
    assert not opt.state
    # what MindSpore's load_param_into_net(optimizer) sets too: the shared names
    assert int(opt.global_step) == 2
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)


def test_a_rate_table_of_another_length_warns_and_the_optimizer_keeps_its_own():
    net = network()
    opt = momentum(net.trainable_params(), learning_rate=[0.3] * 5)
    with pytest.warns(UserWarning, match="has 3 per-step rates, the optimizer's 5"):
        load_optimizer_entries(opt, ckpt("momentum_list_lr"), names_of(net), None)
    assert opt._dynamic[0].table.tolist() == pytest.approx([0.3] * 5)
    opt = momentum(net.trainable_params(), learning_rate=[0.3] * 3)
    load_optimizer_entries(opt, ckpt("momentum_list_lr"), names_of(net), None)
    assert opt._dynamic[0].table.tolist() == pytest.approx([0.1, 0.05, 0.02])


def test_adam_beta_powers_that_disagree_with_global_step_warn():
    net = network()
    opt = JISU["adam"](net)
    entries = {**ckpt("adam"), "global_step": torch.tensor([5], dtype=torch.int32)}
    with pytest.warns(UserWarning, match="beta powers say step 2, its global_step 5"):
        load_optimizer_entries(opt, entries, names_of(net), None)
    assert int(opt.global_step) == 5
    del entries["global_step"]
    opt = JISU["adam"](net)
    load_optimizer_entries(opt, entries, names_of(net), None)
    assert int(opt.global_step) == 2


def test_a_parameter_without_a_name_keeps_its_state_in_rest():
    net, opt, _ = trained("adam")
    names = names_of(net)
    del names[id(net.dense.weight)]
    entries, rest = optimizer_entries(opt, names)
    assert not [n for n, _ in entries if n.endswith("dense.weight")]
    saved = opt.state_dict()
    fresh = JISU["adam"](network())
    load_optimizer_entries(fresh, *written(entries, rest)[:1], {}, written(entries, rest)[1])
    assert_same(saved, fresh.state_dict())
    assert isinstance(rest["state_dict"]["state"][0]["moment1"], torch.Tensor)
    assert rest["state_dict"]["state"][1]["moment1"] == (MARK, "moment1.dense.bias")


@pytest.mark.parametrize("case", sorted(set(ROUND_TRIP) - {"opaque"}))
def test_entries_alone_restore_the_state_and_training_continues_the_same(case):
    """Without rest (as from a MindSpore-written file), jisu's entries give back each
    parameter's state and the step: the next step is the uninterrupted run's."""
    make = ROUND_TRIP[case]
    net = network()
    opt = make(net)
    cell = train_cell(net, opt)
    step(cell, 0)
    step(cell, 1)
    entries = dict(optimizer_entries(opt, names_of(net))[0])
    net2 = network()
    opt2 = make(net2)
    with torch.no_grad():
        for (_, a), (_, b) in zip(mindspore_named_tensors(net), mindspore_named_tensors(net2)):
            b.copy_(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_optimizer_entries(opt2, entries, names_of(net2), None)
    saved, loaded = opt.state_dict(), opt2.state_dict()
    assert set(saved["state"]) == set(loaded["state"])
    for index, pstate in saved["state"].items():
        assert sorted(pstate) == sorted(loaded["state"][index]), index
        for key, value in pstate.items():
            assert_same(value, loaded["state"][index][key], f"{index}.{key}")
    for key in ("global_step", "step_calls", "mindspore_slots"):
        assert_same(saved.get(key), loaded.get(key), key)
    step(cell, 2)
    step(train_cell(net2, opt2), 2)
    for (name, a), (_, b) in zip(mindspore_named_tensors(net), mindspore_named_tensors(net2)):
        assert torch.equal(a, b), (case, name)


def test_a_zoo_optimizers_rate_and_slots_come_back_from_entries_alone():
    net = network()
    opt = ZooAdam(net.trainable_params(), learning_rate=0.03)
    cell = train_cell(net, opt)
    step(cell, 0)
    entries = dict(optimizer_entries(opt, names_of(net))[0])
    fresh = ZooAdam(net.trainable_params(), learning_rate=0.5)
    load_optimizer_entries(fresh, entries, names_of(net), None)
    assert float(fresh.learning_rate) == pytest.approx(0.03)  # what construct reads
    assert float(fresh.beta1_power.detach()) == pytest.approx(0.9)
    assert torch.equal(fresh.moments1[0], opt.moments1[0]) and int(fresh.global_step) == 1


def test_a_users_class_imported_under_another_module_name_still_loads():
    _, opt, _ = trained("adam")
    net2 = network()
    custom = Custom(0.1, net2.trainable_params())
    entries, rest = optimizer_entries(custom, names_of(net2))
    rest = {**rest, "type": "__main__.Custom"}  # saved by a script that defined it
    load_optimizer_entries(Custom(0.1, net2.trainable_params()), dict(entries), {}, rest)
    with pytest.raises(ValueError, match=r"saved state is of __main__\.Adam"):
        load_optimizer_entries(opt, dict(entries), {}, {**rest, "type": "__main__.Adam"})
