"""The model zoo's other jisu.nn optimizers: ``Adagrad`` and ``FTRL`` against MindSpore 2.10's
recorded updates (tests/fixtures/nn_optim_zoo), ``Lamb`` and ``LARS`` against MindSpore's
documented formulas in float64 NumPy (their kernels run on Ascend/GPU only), and the
optimizer helpers the zoo imports (``opt_init_args_register``, ``target``,
``update_parameters_name``)."""

from __future__ import annotations

import inspect
import json
import os

import numpy as np
import pytest
import torch

from jisu import nn
from jisu.nn.optim.optimizer import opt_init_args_register

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nn_optim_zoo")
with open(os.path.join(FIXTURE, "mindspore.json")) as f:
    MS = json.load(f)
with open(os.path.join(FIXTURE, "ms200.json")) as f:
    MS200 = json.load(f)
INIT = {k: np.array(v) for k, v in MS["init"].items()}
GRADS = [{k: np.array(v) for k, v in g.items()} for g in MS["grads"]]


def _params() -> list[tuple[str, torch.nn.Parameter]]:
    named = [(k, torch.nn.Parameter(torch.tensor(v, dtype=torch.float32))) for k, v in INIT.items()]
    for k, p in named:
        p.name = k  # MindSpore's param.name (LARS's filter reads it)
    return named


def _run(opt, named, scale: float = 1.0) -> list[dict]:
    out = []
    for grads in GRADS:
        opt(tuple(torch.tensor(grads[k] * scale, dtype=torch.float32) for k, _ in named))
        out.append({k: p.detach().double().numpy() for k, p in named})
    return out


def test_the_fixture_was_recorded_by_mindspore() -> None:
    assert MS["mindspore"] == "2.10.0" and MS200["mindspore"] == "2.0.0"
    assert sorted(MS["cases"]) == ["adagrad", "adagrad_decay", "ftrl", "ftrl_l1l2"]


#: MindSpore's CPU ApplyFtrl (2.10 and 2.0.0 alike) computes (l1 - linear) / quadratic where
#: linear < -l1, against its documented (sign(linear) * l1 - linear) / quadratic (TensorFlow's,
#: FTRL-proximal's): jisu follows the formula; checked below
MINDSPORE_BUGS = {"ftrl_l1l2"}


@pytest.mark.parametrize("case", sorted(set(MS["cases"]) - MINDSPORE_BUGS))
def test_updates_match_mindspore(case: str) -> None:
    spec = MS["cases"][case]
    named = _params()
    opt = getattr(nn, spec["kind"])(named, **spec["kwargs"])
    got = _run(opt, named, spec["kwargs"].get("loss_scale", 1.0))
    for step, (mine, theirs) in enumerate(zip(got, spec["steps"])):
        for k in INIT:
            np.testing.assert_allclose(
                mine[k], theirs[k], rtol=2e-5, atol=1e-6, err_msg=f"{k}@{step}"
            )


def _lamb_reference(lr, b1, b2, eps, decay):
    w = {k: v.copy() for k, v in INIT.items()}
    m = {k: 0.0 for k in w}
    v = {k: 0.0 for k in w}
    out = []
    for t, grads in enumerate(GRADS, start=1):
        for k, g in grads.items():
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g * g
            r = (m[k] / (1 - b1**t)) / (np.sqrt(v[k] / (1 - b2**t)) + eps)
            if "gamma" not in k:
                r = r + decay * w[k]
            wn, rn = np.linalg.norm(w[k]), np.linalg.norm(r)
            w[k] = w[k] - lr * (wn / rn if wn > 0 and rn > 0 else 1.0) * r
        out.append({k: x.copy() for k, x in w.items()})
    return out


@pytest.mark.parametrize(("kwargs", "ref"), [
    ({"learning_rate": 0.05}, (0.05, 0.9, 0.999, 1e-6, 0.0)),
    ({"learning_rate": 0.02, "beta1": 0.8, "beta2": 0.99, "eps": 1e-4, "weight_decay": 0.1},
     (0.02, 0.8, 0.99, 1e-4, 0.1)),
])  # fmt: skip
def test_lamb_follows_mindspores_formula(kwargs, ref) -> None:
    named = _params()
    got = _run(nn.Lamb(named, **kwargs), named)
    for mine, want in zip(got, _lamb_reference(*ref)):
        for k in INIT:
            np.testing.assert_allclose(mine[k], want[k], rtol=1e-5, atol=1e-6)


def _lars_momentum_reference(lr, momentum, decay, coefficient, eps, use_clip):
    w = {k: v.copy() for k, v in INIT.items()}
    accum = {k: 0.0 for k in w}
    out = []
    for grads in GRADS:
        for k, g in grads.items():
            if "bias" not in k:  # LARS's default filter; the decay (not on gamma) moves here
                d = 0.0 if "gamma" in k else decay
                wn, gn = np.linalg.norm(w[k]), np.linalg.norm(g)
                local = coefficient * wn / (gn + d * wn + eps) if wn > 0 and gn > 0 else 1.0
                if use_clip:
                    local = min(local / lr, 1.0)
                g = local * (g + d * w[k])
            accum[k] = momentum * accum[k] + g
            w[k] = w[k] - lr * accum[k]
        out.append({k: x.copy() for k, x in w.items()})
    return out


@pytest.mark.parametrize("use_clip", [False, True])
def test_lars_follows_mindspores_formula(use_clip: bool) -> None:
    named = _params()
    inner = nn.Momentum(named, 0.1, 0.9, weight_decay=0.01)
    opt = nn.LARS(inner, coefficient=0.01, use_clip=use_clip)
    got = _run(opt, named)
    want = _lars_momentum_reference(0.1, 0.9, 0.01, 0.01, 1e-5, use_clip)
    for mine, ref in zip(got, want):
        for k in INIT:
            np.testing.assert_allclose(mine[k], ref[k], rtol=1e-5, atol=1e-6)
    assert int(opt.global_step) == len(GRADS)


def _ftrl_reference(acc0, lr, lr_power, l1, l2, decay):
    w = {k: v.copy() for k, v in INIT.items()}
    accum = {k: np.full_like(v, acc0) for k, v in w.items()}
    linear = {k: np.zeros_like(v) for k, v in w.items()}
    out = []
    for grads in GRADS:
        for k, g in grads.items():
            g = g + decay * w[k]  # every parameter decays (gamma too)
            new = accum[k] + g * g
            linear[k] += g - (new**-lr_power - accum[k] ** -lr_power) / lr * w[k]
            quadratic = new**-lr_power / lr + 2 * l2
            shrunk = (np.sign(linear[k]) * l1 - linear[k]) / quadratic
            w[k] = np.where(np.abs(linear[k]) > l1, shrunk, 0.0)
            accum[k] = new
        out.append({k: x.copy() for k, x in w.items()})
    return out


def test_ftrl_with_l1_follows_the_documented_formula() -> None:
    spec = MS["cases"]["ftrl_l1l2"]
    named = _params()
    got = _run(nn.FTRL(named, **spec["kwargs"]), named)
    want = _ftrl_reference(0.2, 0.05, -0.3, 0.05, 0.02, 0.01)
    for mine, ref in zip(got, want):
        for k in INIT:
            np.testing.assert_allclose(mine[k], ref[k], rtol=1e-5, atol=1e-6)
    # where the two agree (bn.gamma's linear stays positive at step 1), MindSpore's result too
    theirs = spec["steps"][0]["bn.gamma"]
    np.testing.assert_allclose(got[0]["bn.gamma"], theirs, rtol=1e-5, atol=1e-6)


def test_ftrl_refuses_dynamic_rates_and_decays_every_parameter() -> None:
    with pytest.raises(ValueError, match="per-step"):
        nn.FTRL(_params(), learning_rate=[0.1, 0.2])
    opt = nn.FTRL(_params(), learning_rate=0.1, weight_decay=0.1)
    assert opt.param_groups[0]["decay_flags"] == [True, True, True]


def test_opt_init_args_register_records_the_arguments() -> None:
    class Mine(nn.Momentum):
        @opt_init_args_register
        def __init__(self, params, learning_rate, momentum=0.9, weight_decay=0.0):
            super().__init__(params, learning_rate, momentum, weight_decay)

    named = _params()
    opt = Mine(named, torch.tensor(0.5), weight_decay=0.1)
    assert opt.init_params == {"params": named}
    assert opt.init_learning_rate == 0.5
    assert opt.init_args == {"momentum": 0.9, "weight_decay": 0.1}
    lars = nn.LARS(nn.Lamb(named, 0.1))
    assert lars.init_params == {"params": named} and lars.init_args["use_clip"] is False
    # MindSpore 2.10 and 2.0.0 printed ['self', 'args', 'kwargs'] for the decorated __init__'s
    # signature (its wrapper carries no __wrapped__; mindocr's create_optimizer relies on it)
    assert list(inspect.signature(Mine.__init__).parameters) == ["self", "args", "kwargs"]


def test_target_is_recorded() -> None:
    opt = nn.Adagrad(_params())
    opt.target = "CPU"
    assert opt.target == "CPU"
    with pytest.raises(ValueError, match="target"):
        opt.target = "TPU"


@pytest.mark.parametrize("names", [MS["names"], MS200["names"]], ids=["2.10", "2.0.0"])
def test_optimizer_update_parameters_name_prefixes_the_networks_names(names: dict) -> None:
    net = nn.SequentialCell()
    net.fc = nn.Dense(2, 3)
    net.bn = nn.BatchNorm1d(3)
    assert [p.name for p in net.trainable_params()] == names["before"]
    opt = nn.Adam(net.trainable_params(), 1e-3)
    opt.update_parameters_name("optim_g.")
    assert [p.name for p in opt.parameters] == names["optimizer_net"]


def test_thor_is_refused_by_name_and_sgd_has_mindspores_path() -> None:
    from jisu.nn.optim import thor
    from jisu.nn.optim.sgd import SGD

    assert SGD is nn.SGD and nn.thor is thor
    with pytest.raises(NotImplementedError, match="THOR"):
        thor(None, 0.1, 0.03, 0.9)


@pytest.mark.parametrize("names", [MS["names"], MS200["names"]], ids=["2.10", "2.0.0"])
def test_renamed_parameters_keep_their_names_in_the_network(names: dict) -> None:
    net = nn.SequentialCell()
    net.fc = nn.Dense(2, 3)
    net.bn = nn.BatchNorm1d(3)
    net.fc.update_parameters_name("netG.")
    assert [p.name for p in net.trainable_params()] == names["cell"]
    assert [n for n, _ in net.parameters_and_names()] == names["cell_all"]
    net2 = nn.SequentialCell()
    net2.fc = nn.Dense(2, 3)
    net2.bn = nn.BatchNorm1d(3)
    nn.Adam(net2.trainable_params(), 1e-3).update_parameters_name("optim_g.")
    assert [p.name for p in net2.trainable_params()] == names["optimizer_net"]
    assert list(net2.parameters_dict())[:2] == names["optimizer_net"][:2]
