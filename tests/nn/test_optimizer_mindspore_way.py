"""A MindSpore optimizer written the MindSpore way (its own ``construct(gradients)`` over
``self.parameters.clone`` moments, ``hyper_map``, ``ops.assign``; as the model zoo's
optimizers are) runs on jisu's ``nn.Optimizer`` and gives the updates of jisu's own ``Momentum``
and of a NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import jisu
from jisu import nn, ops
from jisu.nn.optim.optimizer import opt_init_args_register

_momentum_opt = ops.MultitypeFuncGraph("momentum_opt")


@_momentum_opt.register("Tensor", "Tensor", "Tensor", "Tensor", "Tensor")
def _momentum_update(momentum, lr, gradient, weight, moment):
    new_moment = momentum * moment + gradient
    ops.assign(moment, new_moment)
    return ops.depend(True, ops.assign(weight, weight - lr * new_moment))


class MSMomentum(nn.Optimizer):
    """Momentum the way MindSpore's documentation writes a custom optimizer."""

    @opt_init_args_register
    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0):
        super().__init__(learning_rate, params, weight_decay, loss_scale)
        self.momentum = jisu.Tensor(momentum, jisu.float32)
        self.moments = self.parameters.clone(prefix="moments", init="zeros")

    def construct(self, gradients):
        gradients = self.decay_weight(gradients)
        gradients = self.scale_grad(gradients)
        lr = self.get_lr()
        if self.is_group_lr:
            return self.hyper_map(
                ops.partial(_momentum_opt, self.momentum), lr, gradients, self.parameters,
                self.moments,
            )  # fmt: skip
        return self.hyper_map(
            ops.partial(_momentum_opt, self.momentum, lr), gradients, self.parameters, self.moments
        )


class MSAdamW(nn.Optimizer):
    """AdamW with bias correction, counting its own steps (as mindcv's AdamW does)."""

    def __init__(
        self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0
    ):
        super().__init__(learning_rate, params, weight_decay)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.moments1 = self.parameters.clone(prefix="adam_m", init="zeros")
        self.moments2 = self.parameters.clone(prefix="adam_v", init="zeros")
        self.beta1_power = jisu.Parameter(jisu.Tensor([1.0], jisu.float32), name="beta1_power")
        self.beta2_power = jisu.Parameter(jisu.Tensor([1.0], jisu.float32), name="beta2_power")

    def get_lr(self):
        lr = self.learning_rate
        if self.dynamic_lr:
            lr = self.learning_rate(self.global_step).reshape(())
        if self._is_dynamic_lr_or_weight_decay():
            self.assignadd(self.global_step, self.global_step_increase_tensor)
        return lr

    def construct(self, gradients):
        lr = self.get_lr()
        self.beta1_power = self.beta1_power * self.beta1
        self.beta2_power = self.beta2_power * self.beta2
        for param, m, v, g, flag in zip(
            self.parameters, self.moments1, self.moments2, gradients, self.decay_flags
        ):
            ops.assign(m, self.beta1 * m + (1 - self.beta1) * g)
            ops.assign(v, self.beta2 * v + (1 - self.beta2) * g * g)
            update = (m / (1 - self.beta1_power)) / (
                self.eps + ops.sqrt(v / (1 - self.beta2_power))
            )
            if flag:
                update = update + self.weight_decay * param
            ops.assign(param, param - lr * update)
        return True


RNG = np.random.default_rng(11)
INIT = {"fc.weight": RNG.normal(size=(3, 2)), "bn.gamma": RNG.normal(size=(2,))}
GRADS = [{k: RNG.normal(size=v.shape) for k, v in INIT.items()} for _ in range(4)]


def _params():
    out = []
    for k, v in INIT.items():
        p = torch.nn.Parameter(torch.tensor(v, dtype=torch.float32))
        p.name = k
        out.append(p)
    return out


def _run(opt, params, scale=1.0):
    for grads in GRADS:
        for p in params:
            p.grad = torch.tensor(grads[p.name] * scale, dtype=torch.float32)
        opt.step()
    return [p.detach().numpy() for p in params]


def test_a_mindspore_way_momentum_matches_jisus_momentum() -> None:
    mine, theirs = _params(), _params()
    got = _run(MSMomentum(mine, 0.1, 0.9, weight_decay=0.01, loss_scale=8.0), mine, 8.0)
    want = _run(nn.Momentum(theirs, 0.1, 0.9, weight_decay=0.01, loss_scale=8.0), theirs, 8.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_group_rates_reach_construct_per_parameter() -> None:
    mine, theirs = _params(), _params()
    groups = [{"params": mine[:1], "lr": 0.05}, {"params": mine[1:], "weight_decay": 0.1}]
    opt = MSMomentum(groups, 0.2, 0.5)
    assert opt.is_group and opt.is_group_lr and len(opt.get_lr()) == 2
    got = _run(opt, mine)
    ref_groups = [{"params": theirs[:1], "lr": 0.05}, {"params": theirs[1:], "weight_decay": 0.1}]
    want = _run(nn.Momentum(ref_groups, 0.2, 0.5), theirs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert int(opt.global_step) == len(GRADS)


def test_a_construct_that_counts_its_steps_with_a_per_step_rate() -> None:
    rates = [0.1, 0.05, 0.02, 0.01]
    params = _params()
    opt = MSAdamW(params, rates, weight_decay=0.1)
    got = _run(opt, params)
    assert int(opt.global_step) == len(GRADS)  # counted by its assignadd, not twice
    w = {k: v.copy() for k, v in INIT.items()}
    m = {k: 0.0 for k in w}
    v = {k: 0.0 for k in w}
    for t, (grads, lr) in enumerate(zip(GRADS, rates), start=1):
        for k, g in grads.items():
            m[k] = 0.9 * m[k] + 0.1 * g
            v[k] = 0.999 * v[k] + 0.001 * g * g
            update = (m[k] / (1 - 0.9**t)) / (1e-8 + np.sqrt(v[k] / (1 - 0.999**t)))
            if "gamma" not in k:
                update = update + 0.1 * w[k]
            w[k] = w[k] - lr * update
    for g, k in zip(got, INIT):
        np.testing.assert_allclose(g, w[k], rtol=1e-5, atol=1e-6)
    assert [p.name for p in opt.moments1] == ["adam_m.fc.weight", "adam_m.bn.gamma"]


class MSSGDWithOverflow(nn.Optimizer):
    """A construct with an input beyond the gradients (the zoo's BERT Adam takes overflow)."""

    def construct(self, gradients, overflow):
        lr = self.get_lr()
        for param, g in zip(self.parameters, gradients):
            ops.assign(param, ops.select(overflow, param, param - lr * g))
        return overflow


def test_optimizer_call_passes_extra_inputs_and_returns_constructs_result() -> None:
    params = _params()
    opt = MSSGDWithOverflow(0.5, params)
    before = [p.detach().clone() for p in params]
    grads = tuple(torch.ones_like(p) for p in params)
    assert bool(opt(grads, torch.tensor(True))) is True
    assert all(torch.equal(p, b) for p, b in zip(params, before))
    opt(grads, torch.tensor(False))
    assert all(torch.allclose(p, b - 0.5) for p, b in zip(params, before))
    assert int(opt.global_step) == 2 and opt.weight_decay.dtype == torch.float32


def test_state_dict_carries_the_cloned_moments_and_tensors() -> None:
    params = _params()
    opt = MSAdamW(params, 0.01)
    _run(opt, params)
    state = opt.state_dict()
    assert set(state["mindspore_slots"]) >= {"moments1", "moments2", "beta1_power"}
    fresh = MSAdamW(params, 0.01)
    fresh.load_state_dict(state)
    for a, b in zip(fresh.moments2, opt.moments2):
        assert torch.equal(a, b)
    assert torch.equal(fresh.beta1_power, opt.beta1_power) and int(fresh.global_step) == 4


def test_parameter_tuple_clone_names_and_fills_new_untrainable_parameters():
    import jisu

    weights = jisu.ParameterTuple([jisu.Parameter(np.ones((2, 3), np.float32), name="fc.weight")])
    same, zeros = weights.clone("moment1"), weights.clone("moment2", init="zeros")
    assert [p.name for p in same] == ["moment1.fc.weight"]
    assert [p.name for p in zeros] == ["moment2.fc.weight"]
    assert not same[0].requires_grad and same[0] is not weights[0]
    assert torch.equal(same[0], weights[0]) and not zeros[0].any()


def test_integer_parameters_need_no_gradient_and_fp32_gradients_update_fp16_parameters():
    import jisu

    step = jisu.Parameter(np.array(0, np.int32), name="global_step")
    assert step.dtype == torch.int32 and not step.requires_grad
    w = torch.nn.Parameter(torch.ones(3, dtype=torch.float16))
    opt = nn.SGD([w], learning_rate=0.5)
    opt((torch.full((3,), 2.0, dtype=torch.float32),))
    assert w.dtype == torch.float16
    torch.testing.assert_close(w, torch.zeros(3, dtype=torch.float16))


def test_groups_without_their_own_rate_share_one_rate() -> None:
    """MindSpore 2.0.0 printed `StubTensor () 0.1 True False` for get_lr() of Momentum over
    weight-decay groups with order_params and a per-step rate list (the zoo's ViT AdamW
    multiplies by it); with a group rate it gave the per-parameter tuple (0.5, 0.1)."""
    net = nn.Dense(3, 2)
    groups = [
        {"params": [net.weight], "weight_decay": 0.05},
        {"params": [net.bias]},
        {"order_params": net.trainable_params()},
    ]
    opt = nn.Momentum(groups, jisu.Tensor(np.array([0.1, 0.2, 0.3], np.float32)), 0.9)
    lr = opt.get_lr()
    assert opt.is_group and not opt.is_group_lr
    assert isinstance(lr, torch.Tensor) and lr.shape == () and float(lr) == pytest.approx(0.1)
    opt = MSMomentum(groups, 0.1, 0.9)
    lr = opt.get_lr()
    assert isinstance(lr, torch.Tensor) and lr.shape == ()
    rated = [{"params": [net.weight], "lr": 0.5}, {"params": [net.bias]}]
    rates = MSMomentum(rated, 0.1, 0.9).get_lr()
    assert [float(r) for r in rates] == pytest.approx([0.5, 0.1])


def test_a_subclass_may_name_its_step_counter_step():
    """research/nlp/hypertext's RiemannianAdam keeps a Parameter named ``step`` (MindSpore's
    Optimizer has no step method); MindSpore 2.0.0 printed losses [1.0, 0.04, 0.0784],
    weight [[0.788, 0.326]], bias [0.288] and step 3 for this optimizer."""
    from jisu.nn.optim.optimizer import opt_init_args_register

    class Counting(jisu.nn.Optimizer):
        @opt_init_args_register
        def __init__(self, params, learning_rate=0.1):
            super().__init__(learning_rate=learning_rate, parameters=params)
            self.step = jisu.Parameter(jisu.Tensor(0, jisu.int32), name="step")
            self.assign = jisu.ops.Assign()

        def construct(self, gradients):
            lr = self.get_lr()
            step = self.step
            for param, grad in zip(self.parameters, gradients):
                self.assign(param, param - lr * (step + 1) * grad)
            self.assign(self.step, step + 1)
            return True

    w = jisu.Tensor(np.array([[0.5, -0.25]], np.float32))
    dense = jisu.nn.Dense(2, 1, weight_init=w, bias_init="zeros")
    opt = Counting(dense.trainable_params(), 0.1)
    net = jisu.nn.TrainOneStepCell(jisu.nn.WithLossCell(dense, jisu.nn.MSELoss()), opt)
    x, y = torch.tensor([[1.0, 2.0]]), torch.tensor([[1.0]])
    losses = [float(net(x, y)) for _ in range(3)]
    np.testing.assert_allclose(losses, [1.0, 0.04000001773238182, 0.07840005308389664], rtol=1e-5)
    np.testing.assert_allclose(dense.weight.detach(), [[0.788, 0.3260000944137573]], rtol=1e-5)
    np.testing.assert_allclose(dense.bias.detach(), [0.28800004720687866], rtol=1e-5)
    assert int(opt.step) == 3
