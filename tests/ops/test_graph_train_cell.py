"""Train cells written in MindSpore's graph style (GradOperation with get_by_list and
sens_param, HyperMap over a MultitypeFuncGraph, clip_by_global_norm, depend on the optimizer,
the loss-scale hooks of mindcv/mindocr, the NPU float-status idiom of BERT's cells) train a
small network exactly as a plain torch loop doing the same math: the weights are equal after
every step, with fixed and dynamic loss scaling, overflowing steps skipped included."""

from __future__ import annotations

import copy

import pytest
import torch

import jisu
import jisu.nn as nn
from jisu.ops import composite as C
from jisu.ops import functional as F
from jisu.ops import operations as P

grad_scale = C.MultitypeFuncGraph("grad_scale")
reciprocal = P.Reciprocal()


@grad_scale.register("Tensor", "Tensor")
def tensor_grad_scale(scale, grad):
    return grad * F.cast(reciprocal(scale), F.dtype(grad))


class GraphStyleStep(nn.Cell):
    """The zoo's own TrainOneStepCell: a fixed sens, unscaled, clipped, applied."""

    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.weights = optimizer.parameters
        self.grad = C.GradOperation(get_by_list=True, sens_param=True)
        self.hyper_map = C.HyperMap()
        self.sens = sens
        self.grad_reducer = F.identity

    def construct(self, *inputs):
        loss = self.network(*inputs)
        sens = P.Fill()(P.DType()(loss), P.Shape()(loss), self.sens)
        grads = self.grad(self.network, self.weights)(*inputs, sens)
        grads = self.hyper_map(F.partial(grad_scale, F.scalar_to_tensor(self.sens)), grads)
        grads = C.clip_by_global_norm(grads, 1.0)
        grads = self.grad_reducer(grads)
        return F.depend(loss, self.optimizer(grads))


class MindcvStyleStep(nn.TrainOneStepWithLossScaleCell):
    """mindcv's TrainStep / mindocr's TrainOneStepWrapper: the base class's hooks."""

    def construct(self, *inputs):
        weights = self.weights
        loss = self.network(*inputs)
        scaling_sens = self.scale_sense
        used = scaling_sens.detach().clone()  # the manager updates the scale in place below
        status, scaling_sens = self.start_overflow_check(loss, scaling_sens)
        scaling_sens_filled = C.ones_like(loss) * F.cast(scaling_sens, F.dtype(loss))
        grads = self.grad(self.network, weights)(*inputs, scaling_sens_filled)
        grads = self.hyper_map(F.partial(grad_scale, scaling_sens), grads)
        grads = self.grad_reducer(grads)
        cond = self.get_overflow_status(status, grads)
        overflow = self.process_loss_scale(cond)
        if not overflow:
            loss = F.depend(loss, self.optimizer(grads))
        return loss, cond, used


class BertStyleStep(nn.Cell):
    """BERT's cell with the Ascend float-status register and a dynamic update cell."""

    def __init__(self, network, optimizer, scale_update_cell):
        super().__init__(auto_prefix=False)
        self.network = network
        self.weights = optimizer.parameters
        self.optimizer = optimizer
        self.grad = C.GradOperation(get_by_list=True, sens_param=True)
        self.hyper_map = C.HyperMap()
        self.alloc_status = P.NPUAllocFloatStatus()
        self.get_status = P.NPUGetFloatStatus()
        self.clear_status = P.NPUClearFloatStatus()
        self.reduce_sum = P.ReduceSum(keep_dims=False)
        self.base = jisu.Tensor(1, jisu.float32)
        self.less_equal = P.LessEqual()
        self.loss_scaling_manager = scale_update_cell
        self.loss_scale = jisu.Parameter(
            jisu.Tensor(scale_update_cell.get_loss_scale(), jisu.float32), name="loss_scale"
        )

    def construct(self, *inputs):
        loss = self.network(*inputs)
        scaling_sens = self.loss_scale
        used = scaling_sens.detach().clone()  # the manager updates the scale in place below
        init = self.alloc_status()
        init = F.depend(init, loss)
        clear_status = self.clear_status(init)
        scaling_sens = F.depend(scaling_sens, clear_status)
        grads = self.grad(self.network, self.weights)(*inputs, F.cast(scaling_sens, jisu.float32))
        grads = self.hyper_map(F.partial(grad_scale, scaling_sens), grads)
        init = F.depend(init, grads)
        get_status = self.get_status(init)
        init = F.depend(init, get_status)
        flag_sum = self.reduce_sum(init, (0,))
        cond = self.less_equal(self.base, flag_sum)
        overflow = self.loss_scaling_manager(self.loss_scale, cond)
        if not overflow:
            self.optimizer(grads)
        return loss, cond, used


def make_net():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))


def batches(huge_at=()):
    g = torch.Generator().manual_seed(7)
    out = []
    for i in range(8):
        x = torch.randn(16, 4, generator=g)
        if i in huge_at:
            x = x * 1e30  # float32 overflows: inf/NaN gradients
        out.append((x, torch.randn(16, 3, generator=g)))
    return out


def reference_grads(net, x, y, scale):
    loss = torch.nn.functional.mse_loss(net(x), y)
    params = list(net.parameters())
    grads = torch.autograd.grad(loss, params, torch.full_like(loss, scale))
    inv = torch.reciprocal(torch.tensor(scale, dtype=torch.float32))
    return [g * inv for g in grads]


def reference_clip(grads, clip):
    norm = torch.sqrt(torch.stack([torch.sum(g * g) for g in grads]).sum())
    return [(g * clip).div(torch.clamp(norm, min=clip)) for g in grads]


def assert_same_weights(net, ref):
    for p, q in zip(net.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=0, atol=0)


def test_graph_style_cell_with_fixed_sens_trains_as_a_plain_torch_loop():
    net = make_net()
    ref = copy.deepcopy(net)
    step = GraphStyleStep(
        nn.WithLossCell(net, nn.MSELoss()), nn.Momentum(net.parameters(), 0.1, 0.9), 1024.0
    )
    sgd = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches():
        loss = step(x, y)
        grads = reference_clip(reference_grads(ref, x, y, 1024.0), 1.0)
        for p, g in zip(ref.parameters(), grads):
            p.grad = g
        sgd.step()
        assert loss.shape == () and torch.isfinite(loss)
        assert_same_weights(net, ref)


def dynamic_reference(huge_at, scale=2.0**10, window=3):
    """The plain torch loop with MindSpore's dynamic loss-scale rule."""
    ref = make_net()
    sgd = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    cur, last, history = 1, 0, []
    for x, y in batches(huge_at):
        grads = reference_grads(ref, x, y, scale)
        overflow = any(not torch.isfinite(g).all() for g in grads)
        history.append((overflow, scale))
        if overflow:
            scale, last = max(scale / 2, 1.0), cur
        elif cur - last >= window:
            scale, last = scale * 2, cur
        cur += 1
        if not overflow:
            for p, g in zip(ref.parameters(), grads):
                p.grad = g
            sgd.step()
    return ref, history


@pytest.mark.parametrize("style", ["mindcv", "bert"])
def test_dynamic_loss_scale_cells_skip_overflows_as_a_plain_torch_loop(style):
    huge_at = (2,)
    ref, history = dynamic_reference(huge_at)
    assert [o for o, _ in history] == [False, False, True] + [False] * 5
    net = make_net()
    manager = nn.DynamicLossScaleUpdateCell(2.0**10, 2.0, 3)
    opt = nn.Momentum(net.parameters(), 0.1, 0.9)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    if style == "mindcv":
        step = MindcvStyleStep(loss_net, opt, scale_sense=manager)
    else:
        step = BertStyleStep(loss_net, opt, manager)
    got = []
    for x, y in batches(huge_at):
        _, cond, scale = step(x, y)
        got.append((bool(cond), float(scale)))
    assert got == history
    assert_same_weights(net, ref)


def test_mindcv_style_cell_with_a_fixed_scale_tensor():
    net = make_net()
    ref = copy.deepcopy(net)
    step = MindcvStyleStep(
        nn.WithLossCell(net, nn.MSELoss()),
        nn.Momentum(net.parameters(), 0.1, 0.9),
        scale_sense=torch.tensor(256.0),
    )
    sgd = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches():
        _, cond, scale = step(x, y)
        assert not cond and float(scale) == 256.0
        for p, g in zip(ref.parameters(), reference_grads(ref, x, y, 256.0)):
            p.grad = g
        sgd.step()
    assert_same_weights(net, ref)


def test_train_one_step_cell_has_mindspores_attributes_for_subclasses():
    net = make_net()
    opt = nn.Momentum(net.parameters(), 0.1, 0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
    assert isinstance(step.weights, tuple) and len(step.weights) == 4
    assert isinstance(step.grad, C.GradOperation) and step.grad.sens_param
    assert step.reducer_flag is False and step.grad_reducer is F.identity
    scaled = nn.TrainOneStepWithLossScaleCell(
        nn.WithLossCell(net, nn.MSELoss()), opt, nn.FixedLossScaleUpdateCell(8.0)
    )
    assert bool(scaled.less_equal(scaled.base, scaled.reduce_sum(torch.ones(8), (0,))))
    assert scaled.is_distributed is False and scaled.gpu_target is True
    status, sens = scaled.start_overflow_check(torch.tensor(1.0), scaled.scale_sense)
    assert status.shape == (8,) and sens is scaled.scale_sense
    bad = (torch.ones(2), (torch.tensor([float("inf")]),))
    assert bool(scaled.get_overflow_status(status, bad))
    assert not bool(scaled.get_overflow_status(status, (torch.ones(2),)))


def test_dynamic_update_cell_counters_can_be_restored_by_assignment():
    manager = nn.DynamicLossScaleUpdateCell(1024.0, 2.0, 2)
    manager.cur_iter = jisu.Tensor(5, jisu.int32)  # mindocr's resume
    manager.last_overflow_iter = jisu.Parameter(
        jisu.Tensor(4, jisu.int32), name="l", requires_grad=False
    )
    assert int(manager.cur_iter) == 5 and int(manager.last_overflow_iter) == 4
    scale = torch.tensor(1024.0)
    manager(scale, torch.tensor(False))  # 5 - 4 < 2: no growth
    assert float(scale) == 1024.0 and int(manager.cur_iter) == 6
    manager(scale, False)  # 6 - 4 >= 2: grows
    assert float(scale) == 2048.0


def test_loss_scale_module_helpers():
    from jisu.common.row_tensor import RowTensor
    from jisu.nn.wrap.loss_scale import _grad_overflow, grad_scale

    scale = torch.tensor(4.0)
    assert torch.equal(grad_scale(scale, torch.ones(2)), torch.full((2,), 0.25))
    rows = grad_scale(scale, RowTensor(torch.tensor([1]), torch.ones(1, 2), (3, 2)))
    assert isinstance(rows, RowTensor) and torch.equal(rows.values, torch.full((1, 2), 0.25))
    flags = C.HyperMap()(_grad_overflow, (torch.ones(2), torch.tensor([float("nan")])))
    assert [f.tolist() for f in flags] == [[0.0], [1.0]]


def test_grad_operation_runs_again_when_the_forward_graph_was_consumed():
    net = make_net()
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    weights = tuple(net.parameters())
    grad_fn = C.GradOperation(get_by_list=True)(loss_net, weights)
    x, y = batches()[0]
    loss = loss_net(x, y)
    loss.backward()  # the user consumed the graph; the weights did not change
    got = grad_fn(x, y)
    for g, p in zip(got, net.parameters()):
        torch.testing.assert_close(g, p.grad)
