"""jisu.nn's Adam, AdamWeightDecay and RMSProp beyond the MindSpore-recorded updates
(``test_mindspore_parity.py`` checks those): their documented formulas in float64 NumPy for
the cases MindSpore's fixture lacks, the overflow skip, state round trips and argument checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from jisu import nn

RNG = np.random.default_rng(3)
W0 = RNG.normal(size=(3, 2))
GRADS = [RNG.normal(size=(3, 2)) for _ in range(4)]
GRADS_SCALED = [g * 128.0 for g in GRADS]


def _run(opt_factory, steps=GRADS, names=None):
    p = torch.nn.Parameter(torch.tensor(W0, dtype=torch.float32))
    opt = opt_factory([(names, p)] if names else [p])
    for g in steps:
        p.grad = torch.tensor(g, dtype=torch.float32)
        opt.step()
    return p.detach().numpy(), opt


def _adam_reference(lr, b1, b2, eps, decay=0.0, nesterov=False, amsgrad=False):
    w, m, v, vhat = W0.copy(), 0.0, 0.0, 0.0
    for t, g in enumerate(GRADS, start=1):
        g = g + decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vhat = np.maximum(vhat, v)
        lr_t = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        num = b1 * m + (1 - b1) * g if nesterov else m
        w = w - lr_t * num / (np.sqrt(vhat if amsgrad else v) + eps)
    return w


def test_adam_follows_mindspores_formula_with_a_loss_scale():
    got, _ = _run(lambda p: nn.Adam(p, learning_rate=0.05, loss_scale=128.0), GRADS_SCALED)
    np.testing.assert_allclose(got, _adam_reference(0.05, 0.9, 0.999, 1e-8), rtol=1e-5, atol=1e-6)


def test_adam_amsgrad_with_weight_decay_follows_the_formula():
    got, _ = _run(lambda p: nn.Adam(p, 0.02, use_amsgrad=True, weight_decay=0.1), names="w")
    want = _adam_reference(0.02, 0.9, 0.999, 1e-8, decay=0.1, amsgrad=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_adam_weight_decay_decays_the_weights_not_the_gradients():
    lr, b1, b2, eps, decay = 0.01, 0.9, 0.999, 1e-6, 0.5
    got, opt = _run(lambda p: nn.AdamWeightDecay(p, lr, weight_decay=decay), names="fc.weight")
    w, m, v = W0.copy(), 0.0, 0.0
    for g in GRADS:  # no bias correction; the decay outside the moments
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (np.sqrt(v) + eps) + decay * w)
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    (p,) = opt.param_groups[0]["params"]
    np.testing.assert_allclose(opt.state[p]["moment1"].numpy(), m, rtol=1e-5, atol=1e-7)
    assert opt.param_groups[0]["weight_decay"] == decay


def test_adam_weight_decay_spares_gamma_and_beta():
    got, _ = _run(lambda p: nn.AdamWeightDecay(p, 0.01, weight_decay=0.5), names="bn.gamma")
    plain, _ = _run(lambda p: nn.AdamWeightDecay(p, 0.01), names="bn.gamma")
    np.testing.assert_allclose(got, plain, rtol=1e-6)


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_follows_mindspores_formula(centered):
    lr, decay, momentum, eps = 0.01, 0.8, 0.5, 1e-6
    got, _ = _run(
        lambda p: nn.RMSProp(p, lr, decay, momentum, eps, centered=centered, loss_scale=4.0),
        [g * 4.0 for g in GRADS],
    )
    w, ms, mg, mom = W0.copy(), np.ones_like(W0), 0.0, 0.0  # mean square starts at ones
    for g in GRADS:
        ms = decay * ms + (1 - decay) * g * g
        mg = decay * mg + (1 - decay) * g
        mom = momentum * mom + lr * g / np.sqrt(ms - (mg * mg if centered else 0.0) + eps)
        w = w - mom
    np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


OPTIMIZERS = [
    lambda p: nn.Adam(p, 0.01),
    lambda p: nn.Adam(p, [0.01, 0.02, 0.03, 0.04], use_amsgrad=True),
    lambda p: nn.AdamWeightDecay(p, 0.01, weight_decay=0.1),
    lambda p: nn.RMSProp(p, 0.01, momentum=0.9, centered=True),
]


@pytest.mark.parametrize("factory", OPTIMIZERS, ids=["adam", "amsgrad", "adamw", "rmsprop"])
def test_an_overflow_step_changes_nothing_and_does_not_count(factory):
    want, _ = _run(factory, GRADS[:2])
    p = torch.nn.Parameter(torch.tensor(W0, dtype=torch.float32))
    opt = factory([p])
    p.grad = torch.tensor(GRADS[0], dtype=torch.float32)
    opt.step()
    state = {k: v.clone() for k, v in opt.state[p].items()}
    before = p.detach().clone()
    opt.found_inf = torch.ones(())
    p.grad = torch.full_like(p, float("inf"))
    opt.step()
    opt.found_inf = None
    assert torch.equal(p.detach(), before)
    for k, v in opt.state[p].items():
        assert torch.equal(v, state[k]), k
    assert int(opt.global_step) == 1
    p.grad = torch.tensor(GRADS[1], dtype=torch.float32)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("factory", OPTIMIZERS, ids=["adam", "amsgrad", "adamw", "rmsprop"])
def test_a_resumed_optimizer_continues_the_same_updates(factory):
    want, _ = _run(factory)
    got, opt = _run(factory, GRADS[:2])
    p = torch.nn.Parameter(torch.tensor(got))
    resumed = factory([p])
    resumed.load_state_dict(opt.state_dict())
    for g in GRADS[2:]:
        p.grad = torch.tensor(g, dtype=torch.float32)
        resumed.step()
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-7)


def test_the_defaults_are_mindspores():
    p = [torch.nn.Parameter(torch.zeros(2))]
    adam = nn.Adam(p)
    assert (adam.beta1, adam.beta2, adam.eps, adam.param_groups[0]["lr"]) == (
        0.9,
        0.999,
        1e-8,
        1e-3,
    )
    adamw = nn.AdamWeightDecay(p)
    assert (adamw.eps, adamw.param_groups[0]["weight_decay"]) == (1e-6, 0.0)
    rms = nn.RMSProp(p)
    assert (rms.param_groups[0]["lr"], rms.decay, rms.momentum, rms.epsilon) == (
        0.1,
        0.9,
        0.0,
        1e-10,
    )
    assert rms.centered is False


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda p: nn.Adam(p, beta1=1.0), ValueError, r"Adam: beta1 must be in \(0.0, 1.0\)"),
        (lambda p: nn.Adam(p, beta2=1), TypeError, "Adam: beta2 must be a float"),
        (lambda p: nn.Adam(p, eps=0.0), ValueError, "Adam: eps must be > 0.0"),
        (lambda p: nn.Adam(p, use_nesterov=1), TypeError, "use_nesterov must be a bool"),
        (lambda p: nn.Adam(p, use_lazy=True, use_offload=True), ValueError, "cannot both"),
        (lambda p: nn.Adam(p, use_amsgrad=True, use_lazy=True), ValueError, "use_amsgrad"),
        (lambda p: nn.Adam(p, lazy=True), KeyError, "unknown keyword"),
        (lambda p: nn.AdamWeightDecay(p, beta1=0.0), ValueError, "AdamWeightDecay: beta1"),
        (lambda p: nn.RMSProp(p, decay=-0.1), ValueError, "RMSProp: decay must be >= 0.0"),
        (lambda p: nn.RMSProp(p, epsilon=0.0), ValueError, "RMSProp: epsilon must be > 0.0"),
        (lambda p: nn.RMSProp(p, momentum=1), TypeError, "RMSProp: momentum must be a float"),
        (lambda p: nn.RMSProp(p, centered=None), TypeError, "centered must be a bool"),
    ],
)
def test_bad_arguments_raise_mindspores_error_types(make, error, match):
    with pytest.raises(error, match=match):
        make([torch.nn.Parameter(torch.zeros(2))])
