"""An optimizer's state under MindSpore's checkpoint names (jisu.train.optimizer_names).

Checked against MindSpore 2.10's own files (tests/fixtures/ms_optimizer_ckpt/, made by its
make_fixtures.py): a ``BatchNorm1d(4)`` + ``Dense(4, 3)`` network trained two steps inside
``TrainOneStepCell`` per optimizer, saved with ``save_checkpoint(train_net, f)``; the value of
every entry after a third step is recorded too: jisu's entries have the file's names, order,
dtypes, shapes and values, and MindSpore's file loaded into jisu's optimizer takes MindSpore's
third step. The other way, MindSpore 2.10 loaded jisu's files (make_jisu_files.py) with
``load_param_into_net`` and took the third step jisu takes. Exact round trips are in
test_optimizer_names_round_trip.py.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest
import torch

import jisu.nn as nn
from jisu.nn.cell import mindspore_named_tensors
from jisu.train.ms_checkpoint import read_ckpt
from jisu.train.optimizer_names import load_optimizer_entries, optimizer_entries

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
