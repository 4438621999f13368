"""An optimizer's state under MindSpore's checkpoint names (jisu.train.optimizer_names).

Checked against MindSpore 2.10's own files (tests/fixtures/ms_optimizer_ckpt/, made by its
make_fixtures.py): a ``BatchNorm1d(4)`` + ``Dense(4, 3)`` network trained two steps inside
``TrainOneStepCell`` per optimizer, saved with ``save_checkpoint(train_net, f)``; the value of
every entry after a third step is recorded too. Round trips (entries + rest -> a fresh
optimizer -> the same ``state_dict()`` and the same training) are checked for every optimizer,
torch.optim's included.
"""

from __future__ import annotations

import io
import json
import os
import warnings

import numpy as np
import pytest
import torch

import jisu.nn as nn
from jisu.common.parameter import Parameter
from jisu.nn.cell import mindspore_named_tensors
from jisu.train.ms_checkpoint import read_ckpt
from jisu.train.optimizer_names import MARK, load_optimizer_entries, optimizer_entries

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_optimizer_ckpt")
with open(os.path.join(HERE, "mindspore.json")) as _f:
    RECORD = json.load(_f)
ARRAYS = dict(np.load(os.path.join(HERE, "mindspore.npz")))
NETWORK = ["dense.weight", "dense.bias", "bn.gamma", "bn.beta", "bn.moving_mean"]
NETWORK += ["bn.moving_variance"]


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(4, 3)
        self.bn = nn.BatchNorm1d(4)

    def construct(self, x):
        return self.dense(self.bn(x))


def network() -> Net:
    net = Net()
    tensors = dict(mindspore_named_tensors(net))
    with torch.no_grad():
        for name in ("dense.weight", "dense.bias", "bn.gamma", "bn.beta"):
            tensors[name].copy_(torch.from_numpy(ARRAYS[f"init/{name}"]))
    return net


def groups(net, lrs=(0.05, 0.02)):
    params = net.trainable_params()
    dense = [p for p in params if p.name.startswith("dense")]
    bn = [p for p in params if p.name.startswith("bn")]
    return [{"params": dense, "lr": lrs[0]}, {"params": bn, "lr": lrs[1]}]


def groups_ordered(net):
    params = net.trainable_params()
    dense = [p for p in params if p.name.startswith("dense")]
    bn = [p for p in params if p.name.startswith("bn")]
    return [
        {"params": bn, "weight_decay": 0.0},
        {"params": dense, "weight_decay": 0.01},
        {"order_params": params},
    ]


def momentum(p, **kw):
    return nn.Momentum(p, **{"learning_rate": 0.1, "momentum": 0.9, **kw})


def adam(p, **kw):
    return nn.Adam(p, **{"learning_rate": 0.01, **kw})


def prefixed(optimizer, prefix="optim_g."):
    optimizer.update_parameters_name(prefix)
    return optimizer


# the jisu.nn equivalent of each recorded MindSpore case (make_fixtures.py's CASES)
JISU = {
    "momentum": lambda n: momentum(n.trainable_params()),
    "momentum_decay_scale": lambda n: momentum(
        n.trainable_params(), weight_decay=0.01, loss_scale=2.0
    ),
    "momentum_nesterov": lambda n: momentum(n.trainable_params(), use_nesterov=True),
    "momentum_list_lr": lambda n: momentum(n.trainable_params(), learning_rate=[0.1, 0.05, 0.02]),
    "momentum_schedule": lambda n: momentum(
        n.trainable_params(), learning_rate=nn.ExponentialDecayLR(0.1, 0.9, 1)
    ),
    "momentum_group_lr": lambda n: nn.Momentum(groups(n), 0.1, 0.9),
    "momentum_group_list_lr": lambda n: nn.Momentum(
        [{**g, "lr": [g["lr"], g["lr"] / 2, g["lr"] / 4]} for g in groups(n)], 0.1, 0.9
    ),
    "momentum_group_order": lambda n: nn.Momentum(groups_ordered(n), 0.1, 0.9),
    "sgd": lambda n: nn.SGD(n.trainable_params(), 0.1, momentum=0.9, dampening=0.1),
    "sgd_plain": lambda n: nn.SGD(n.trainable_params(), 0.1),
    "adam": lambda n: adam(n.trainable_params()),
    "adam_amsgrad": lambda n: adam(n.trainable_params(), use_amsgrad=True),
    "adam_nesterov_decay": lambda n: adam(
        n.trainable_params(), use_nesterov=True, weight_decay=0.01
    ),
    "adam_list_lr": lambda n: adam(n.trainable_params(), learning_rate=[0.01, 0.02, 0.03]),
    "adam_offload": lambda n: adam(n.trainable_params(), use_offload=True),
    "adam_lazy": lambda n: adam(n.trainable_params(), use_lazy=True),
    "adam_prefixed": lambda n: prefixed(adam(n.trainable_params())),
    "adam_weight_decay": lambda n: nn.AdamWeightDecay(n.trainable_params(), 0.01, weight_decay=0.1),
    "lamb": lambda n: nn.Lamb(n.trainable_params(), 0.01, weight_decay=0.1),
    "lars": lambda n: nn.LARS(momentum(n.trainable_params())),
    "rmsprop": lambda n: nn.RMSProp(n.trainable_params(), 0.01),
    "rmsprop_centered": lambda n: nn.RMSProp(
        n.trainable_params(), 0.01, momentum=0.9, centered=True
    ),
    "adagrad": lambda n: nn.Adagrad(n.trainable_params(), learning_rate=0.1),
    "ftrl": lambda n: nn.FTRL(n.trainable_params(), learning_rate=0.1),
}
#: MindSpore 2.10's CPU Momentum kernel ignores use_nesterov (jisu follows the documented
#: formula): the names match, the values do not
VALUES_DIFFER = {"momentum_nesterov"}
TRAINED = [c for c, r in RECORD["cases"].items() if r["trained"] is True]


@pytest.fixture(autouse=True)
def _one_thread(one_intra_op_thread):
    """Tiny steps: one intra-op thread (see conftest)."""


def names_of(net) -> dict[int, str]:
    return {id(t): n for n, t in mindspore_named_tensors(net)}


def train_cell(net, opt):
    """One step as MindSpore's ``TrainOneStepCell(WithLossCell(net, MSELoss()), opt)`` takes
    it (the gradient of the mean squared error, then the optimizer), without the cell's
    per-call overhead."""
    net.set_train()

    def one_step(x, y):
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()

    return one_step


def step(cell, i):
    cell(torch.from_numpy(ARRAYS[f"x{i}"]), torch.from_numpy(ARRAYS[f"y{i}"]))


def trained(case, steps=2):
    """jisu's network and optimizer of ``case`` after ``steps`` of MindSpore's inputs."""
    net = network()
    opt = JISU[case](net)
    cell = train_cell(net, opt)
    for i in range(steps):
        step(cell, i)
    return net, opt, cell


def optimizer_part(entries, net):
    network = set(names_of(net).values())
    return [e for e in entries if e[0] not in network]


def test_the_fixture_records_every_case_and_mindspore_200_names_alike():
    assert set(RECORD["cases"]) == set(JISU)
    assert RECORD["version"].startswith("2.10")
    with open(os.path.join(HERE, "ms200.json")) as f:
        old = json.load(f)
    assert old["version"].startswith("2.0")
    for case, record in RECORD["cases"].items():
        assert old["cases"][case]["entries"] == record["entries"], case


@pytest.mark.parametrize("case", sorted(JISU))
def test_names_dtypes_shapes_and_order_are_mindsporess(case):
    record = RECORD["cases"][case]
    net, opt, _ = trained(case, 2 if record["trained"] is True else 0)
    entries, _ = optimizer_entries(opt, names_of(net))
    got = [[n, str(t.dtype).replace("torch.", ""), list(t.shape)] for n, t in entries]
    assert got == optimizer_part(record["entries"], net)
    if record["trained"] is not True:  # Lamb, LARS: their kernels are Ascend/GPU only
        for name, value in record["values"].items():
            if name not in NETWORK and "." not in name:
                assert torch.tensor(value).float().reshape(-1).tolist() == pytest.approx(
                    dict(entries)[name].float().reshape(-1).tolist()
                ), name


def ckpt(case):
    return read_ckpt(os.path.join(HERE, f"{case}.ckpt"))


@pytest.mark.parametrize("case", [c for c in TRAINED if c not in VALUES_DIFFER])
def test_values_after_two_steps_are_mindsporess(case):
    net, opt, _ = trained(case)
    entries, _ = optimizer_entries(opt, names_of(net))
    expected = ckpt(case)
    for name, tensor in entries:
        assert tensor.dtype == expected[name].dtype, name
        np.testing.assert_allclose(
            tensor.numpy(), expected[name].numpy(), rtol=1e-4, atol=1e-6, err_msg=name
        )


def load_into_jisu(case, opt_net=None):
    """A fresh jisu network and optimizer filled from MindSpore's two-step file."""
    net = network()
    opt = JISU[case](net)
    stored = ckpt(case)
    with torch.no_grad():
        for name, tensor in mindspore_named_tensors(net):
            tensor.copy_(stored[name])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_optimizer_entries(opt, stored, names_of(net), None)
    return net, opt


@pytest.mark.parametrize("case", [c for c in TRAINED if c not in VALUES_DIFFER])
def test_mindsporess_file_then_one_step_gives_mindsporess_next_step(case):
    net, opt = load_into_jisu(case)
    record = RECORD["cases"][case]
    step(train_cell(net, opt), 2)
    after = dict(mindspore_named_tensors(net))
    after.update(optimizer_entries(opt, names_of(net))[0])
    flat = ARRAYS[f"{case}/next"]
    at = 0
    for name, _, shape in record["entries"]:
        size = int(np.prod(shape))
        expected = flat[at : at + size].reshape(shape)
        at += size
        np.testing.assert_allclose(
            after[name].detach().double().numpy(), expected, rtol=2e-4, atol=1e-6, err_msg=name
        )
    assert at == flat.size


def test_loading_mindsporess_file_restores_the_moments_and_step():
    net, opt = load_into_jisu("adam")
    stored = ckpt("adam")
    for name, p in [(n, t) for n, t in mindspore_named_tensors(net) if t.requires_grad]:
        assert torch.equal(opt.state[p]["moment1"], stored[f"moment1.{name}"])
        assert torch.equal(opt.state[p]["moment2"], stored[f"moment2.{name}"])
    assert int(opt.global_step) == 2 and opt.state_dict()["step_calls"] == 2
    net, opt = load_into_jisu("sgd")
    assert all(float(opt.state[p]["started"]) == 1.0 for p in net.trainable_params())


def test_a_mindspore_file_into_torch_optim_sgd_and_adam():
    stored = ckpt("momentum")
    net = network()
    opt = torch.optim.SGD(net.trainable_params(), lr=0.5, momentum=0.5)
    load_optimizer_entries(opt, stored, names_of(net), None)
    params = opt.param_groups[0]["params"]
    for name, p in zip(["dense.weight", "dense.bias", "bn.gamma", "bn.beta"], params):
        assert torch.equal(opt.state[p]["momentum_buffer"], stored[f"moments.{name}"])
    group = opt.param_groups[0]
    assert group["lr"] == pytest.approx(0.1) and group["momentum"] == pytest.approx(0.9)
    stored = ckpt("adam_amsgrad")
    net = network()
    opt = torch.optim.Adam(net.trainable_params(), lr=0.01, amsgrad=True)
    load_optimizer_entries(opt, stored, names_of(net), None)
    state = opt.state[net.dense.weight]
    assert torch.equal(state["exp_avg"], stored["moment1.dense.weight"])
    assert torch.equal(state["max_exp_avg_sq"], stored["vhat.dense.weight"])
    assert float(state["step"]) == 2.0
    # and back: the names and beta powers MindSpore's Adam has
    entries = dict(optimizer_entries(opt, names_of(net))[0])
    for name in ("global_step", "beta1_power", "beta2_power", "moment2.bn.beta"):
        assert torch.allclose(entries[name], stored[name]), name


# ---------------------------------------------------------------- exact round trips
def torch_optimizers():
    return {
        "torch_sgd": lambda n: torch.optim.SGD(n.trainable_params(), lr=0.1, momentum=0.9),
        "torch_sgd_nesterov_groups": lambda n: torch.optim.SGD(
            groups(n), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3
        ),
        "torch_sgd_plain": lambda n: torch.optim.SGD(n.trainable_params(), lr=0.1),
        "torch_adam": lambda n: torch.optim.Adam(n.trainable_params(), lr=0.01),
        "torch_adamw_amsgrad": lambda n: torch.optim.AdamW(
            n.trainable_params(), lr=0.01, amsgrad=True
        ),
        "torch_rmsprop": lambda n: torch.optim.RMSprop(
            n.trainable_params(), lr=0.01, momentum=0.9, centered=True
        ),
        "torch_adagrad": lambda n: torch.optim.Adagrad(n.trainable_params(), lr=0.1),
        "torch_adadelta": lambda n: torch.optim.Adadelta(n.trainable_params()),
        "torch_rprop": lambda n: torch.optim.Rprop(n.trainable_params(), lr=0.01),
        "torch_nadam": lambda n: torch.optim.NAdam(n.trainable_params(), lr=0.01),
    }


#: the files jisu writes for MindSpore to read back (make_jisu_files.py), and the MindSpore
#: case each is loaded into (make_fixtures.py: torch_rmsprop into Momentum, whose slots it
#: lacks: its entries are names MindSpore's train cell does not have)
JISU_FILES = {
    **{c: JISU[c] for c in ("momentum", "sgd", "adam_amsgrad", "adam_weight_decay")},
    **{c: JISU[c] for c in ("rmsprop_centered", "ftrl", "adagrad", "momentum_list_lr")},
    **{c: torch_optimizers()[c] for c in ("torch_sgd", "torch_adam", "torch_rmsprop")},
}


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


# ---------------------------------------------------------------- refusals and warnings
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


def test_jisu_entries_of_any_torch_optimizer_load_without_rest():
    for case in ("torch_rmsprop", "torch_adadelta", "torch_adam", "torch_sgd"):
        net = network()
        opt = ROUND_TRIP[case](net)
        cell = train_cell(net, opt)
        step(cell, 0)
        step(cell, 1)
        entries, _ = optimizer_entries(opt, names_of(net))
        fresh = ROUND_TRIP[case](net)
        load_optimizer_entries(fresh, dict(entries), names_of(net), None)
        assert_same(opt.state_dict()["state"], fresh.state_dict()["state"], case)


# ---------------------------------------------------------------- MindSpore reads jisu's files
@pytest.mark.parametrize("case", sorted(JISU_FILES))
def test_mindspore_loads_jisus_file_and_continues_as_jisu_does(case):
    record = RECORD["jisu_files"][case]
    net = network()
    opt = JISU_FILES[case](net)
    cell = train_cell(net, opt)
    step(cell, 0)
    step(cell, 1)
    ours = [(n, t.detach()) for n, t in mindspore_named_tensors(net)]
    ours += optimizer_entries(opt, names_of(net))[0]
    # the file MindSpore read is what jisu writes (make_jisu_files.py)
    stored = read_ckpt(os.path.join(HERE, f"jisu_{case}.ckpt"))
    assert [n for n, _ in ours] == list(stored)
    for name, tensor in ours:
        assert tensor.dtype == stored[name].dtype, name
        torch.testing.assert_close(tensor, stored[name], rtol=1e-6, atol=1e-7, msg=name)
    # MindSpore loaded every entry into its train cell, but those its optimizer does not have
    if case == "torch_rmsprop":  # loaded into Momentum: jisu's names for RMSprop's state
        jisu_only = [n for n, _ in ours if n not in NETWORK and n != "learning_rate"]
        assert record["ckpt_not_load"] == sorted(jisu_only)
        assert "moments.dense.weight" in record["param_not_load"]
        return
    assert record["ckpt_not_load"] == []
    assert record["param_not_load"] == (["global_step"] if case == "torch_sgd" else [])
    # MindSpore's step from jisu's file is jisu's next step
    step(cell, 2)
    after = dict(mindspore_named_tensors(net))
    after.update(optimizer_entries(opt, names_of(net))[0])
    flat, at = ARRAYS[f"jisu_{case}/next"], 0
    for name in record["names"]:
        size = after[name].numel() if name in after else None
        if size is None:  # global_step of torch.optim.SGD, which counts no steps
            assert name == "global_step" and case == "torch_sgd"
            at += 1
            continue
        expected = flat[at : at + size].reshape(tuple(after[name].shape))
        at += size
        np.testing.assert_allclose(
            after[name].detach().double().numpy(), expected, rtol=2e-4, atol=1e-6, err_msg=name
        )
    assert at == flat.size


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
