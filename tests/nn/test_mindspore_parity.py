"""jisu.nn's dynamic learning rates and optimizers against MindSpore 2.10's recorded answers
(``tests/fixtures/dynamic_lr/make_fixtures.py`` recorded them; MindSpore is not needed here)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from jisu import nn

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "dynamic_lr", "mindspore.json")
with open(FIXTURE) as f:
    MS = json.load(f)

IMPLEMENTED = [o for o in MS["optimizers"] if hasattr(nn, o["name"])]
# MindSpore 2.10's CPU kernel ignores Momentum's use_nesterov; jisu keeps the documented rule
NESTEROV = [o for o in IMPLEMENTED if o["kwargs"].get("use_nesterov") and o["name"] == "Momentum"]
MATCHED = [o for o in IMPLEMENTED if o not in NESTEROV]


def test_the_fixture_was_recorded_by_mindspore_2_10():
    assert MS["mindspore"] == "2.10.0"
    assert {o["name"] for o in IMPLEMENTED} >= {"Momentum", "SGD"}


@pytest.mark.parametrize("case", MS["helpers"], ids=lambda c: c["name"])
def test_the_dynamic_lr_helpers_give_mindspores_lists(case):
    # same formulas, same float64 arithmetic: equal to the last bit
    assert getattr(nn, case["name"])(**case["kwargs"]) == case["values"]


@pytest.mark.parametrize("case", MS["bad_helpers"], ids=lambda c: c["name"])
def test_bad_helper_arguments_raise_mindspores_error_type(case):
    error = {"TypeError": TypeError, "ValueError": ValueError}[case["error"]]
    with pytest.raises(error, match=case["name"]):
        getattr(nn, case["name"])(**case["kwargs"])


@pytest.mark.parametrize("case", MS["schedules"], ids=lambda c: c["name"])
def test_the_schedules_give_mindspores_float32_rates(case):
    schedule = getattr(nn, case["name"])(**case["kwargs"])
    got = [float(schedule(torch.tensor(step))) for step in range(16)]
    np.testing.assert_allclose(got, case["values"], rtol=2e-7, atol=1e-9)


@pytest.mark.parametrize("case", MS["bad_schedules"], ids=lambda c: c["name"])
def test_bad_schedule_arguments_raise_mindspores_error_type(case):
    error = {"TypeError": TypeError, "ValueError": ValueError}[case["error"]]
    with pytest.raises(error, match=case["name"]):
        getattr(nn, case["name"])(**case["kwargs"])


def _lr(spec):
    if spec["kind"] == "static":
        return spec["value"]
    if spec["kind"] == "list":
        return list(spec["values"])
    return getattr(nn, spec["class"])(**spec["args"])


def _params():
    return [torch.nn.Parameter(torch.tensor(w, dtype=torch.float32)) for w in MS["initial"]]


def _optimizer(case, params):
    if case["groups"] is None:  # named: MindSpore's names decide which parameters decay
        arg = list(zip(MS["names"], params))
    else:
        arg = []
        for group in case["groups"]:
            entry = {"params": [params[i] for i in group["indices"]]}
            entry.update(
                {k: (_lr(v) if k == "lr" else v) for k, v in group.items() if k != "indices"}
            )
            arg.append(entry)
    return getattr(nn, case["name"])(arg, learning_rate=_lr(case["lr"]), **case["kwargs"])


def _label(case):
    return f"{case['name']}-{case['lr']['kind']}-{'-'.join(sorted(case['kwargs']))}"


@pytest.mark.parametrize("case", MATCHED, ids=_label)
def test_the_optimizers_update_the_weights_as_mindspore(case):
    params = _params()
    opt = _optimizer(case, params)
    for step, (grads, expected) in enumerate(zip(MS["grads"], case["weights"])):
        for p, g in zip(params, grads):
            p.grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
        for p, want in zip(params, expected):
            np.testing.assert_allclose(
                p.detach().numpy(), want, rtol=1e-5, atol=1e-6, err_msg=f"step {step + 1}"
            )
    assert int(opt.global_step) == len(MS["grads"])


def test_a_step_past_a_per_step_list_fails_as_in_mindspore():
    past = MS["past_the_list"]
    assert past["error"] == "RuntimeError" and past["steps_done"] == past["entries"]
    params = _params()
    opt = nn.Momentum(params, learning_rate=[0.1, 0.2], momentum=0.9)
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()
    opt.step()
    before = [p.detach().clone() for p in params]
    with pytest.raises(
        RuntimeError, match="Momentum: learning_rate has 2 per-step values and this is step 3"
    ):
        opt.step()
    for p, b in zip(params, before):  # nothing applied
        assert torch.equal(p.detach(), b)


def test_momentum_nesterov_follows_mindspores_documented_formula_not_its_cpu_kernel():
    (case,) = NESTEROV
    plain = next(
        o
        for o in MATCHED
        if o["name"] == "Momentum"
        and o["kwargs"] == {"momentum": 0.9}
        and o["lr"]["kind"] == "static"
    )
    for got, same in zip(case["weights"], plain["weights"]):  # MindSpore's CPU kernel
        for a, b in zip(got, same):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    lr, m = case["lr"]["value"], case["kwargs"]["momentum"]
    weights = [np.array(w, dtype=np.float64) for w in MS["initial"]]
    accums = [np.zeros_like(w) for w in weights]
    params = _params()
    opt = _optimizer(case, params)
    for grads in MS["grads"]:
        for i, g in enumerate(grads):  # p -= lr * g + lr * m * accum, accum = m * accum + g
            accums[i] = m * accums[i] + np.array(g)
            weights[i] = weights[i] - lr * np.array(g) - lr * m * accums[i]
            params[i].grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
        for p, want in zip(params, weights):
            np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6)
