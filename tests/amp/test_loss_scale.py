"""Loss scaling and the train step: skip on overflow, MindSpore's scale rule, no host sync."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import jisu.amp as amp
from jisu.profiler import counting_host_reads


def count_host_reads():
    """Every read of a tensor value to the host, CPU tensors included."""
    return counting_host_reads(accelerator_only=False)


def regression(fused: bool = False, momentum: float = 0.9, adam: bool = False):
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    if adam:
        return net, torch.optim.Adam(net.parameters(), lr=0.1, fused=fused or None)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=momentum, fused=fused or None)
    return net, opt


def forward_with_poison(net, poison):
    """A forward function whose loss is inf while ``poison[0]`` is set (an injected overflow)."""

    def forward_fn(x, y):
        loss = nn.functional.mse_loss(net(x), y)
        return loss * float("inf") if poison[0] else loss

    return forward_fn


def snapshot(net, opt):
    params = [p.detach().clone() for p in net.parameters()]
    state = [
        {k: v.clone() for k, v in opt.state[p].items() if torch.is_tensor(v)}
        for p in net.parameters()
    ]
    return params, state


@pytest.mark.parametrize("adam", [False, True])
@pytest.mark.parametrize("fused", [False, True])  # masked restore / the fused kernel's own skip
def test_overflow_skips_the_step_halves_the_scale_and_clean_window_doubles_it(fused, adam):
    net, opt = regression(fused, adam=adam)
    manager = amp.DynamicLossScaleManager(init_loss_scale=2.0**10, scale_factor=2, scale_window=3)
    poison = [False]
    step = amp.make_train_step(forward_with_poison(net, poison), opt, manager)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    step(x, y)  # one clean step: momentum state exists
    before = snapshot(net, opt)
    poison[0] = True
    step(x, y)
    after = snapshot(net, opt)
    for a, b in zip(before[0], after[0]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)  # parameters untouched
    for a, b in zip(before[1], after[1]):
        for key in a:
            torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)  # and optimizer state
    assert manager.get_loss_scale() == 2.0**9
    poison[0] = False
    for _ in range(3):
        assert manager.get_loss_scale() == 2.0**9
        step(x, y)
    assert manager.get_loss_scale() == 2.0**10  # scale_window clean steps double it
    assert all(torch.isfinite(p).all() for p in net.parameters())
    assert not torch.equal(after[0][0], net.weight)  # the clean steps were applied


def mindspore_scales(pattern, scale, factor, window):
    """MindSpore 2.10's DynamicLossScaleManager.update_loss_scale, restated: the scale after
    each step of ``pattern`` (1: the step overflowed)."""
    cur_iter, last_overflow, scales = 1, 0, []
    for overflow in pattern:
        if overflow:
            scale, last_overflow = max(scale / factor, 1), cur_iter
        elif (cur_iter - last_overflow) % window == 0:
            scale *= factor
        cur_iter += 1
        scales.append(scale)
    return scales


def test_dynamic_rule_matches_mindspores_host_rule():
    manager = amp.DynamicLossScaleManager(init_loss_scale=8.0, scale_factor=2, scale_window=2)
    pattern = [1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0]
    for overflow, expected in zip(pattern, mindspore_scales(pattern, 8.0, 2, 2)):
        manager.update_loss_scale(bool(overflow))
        assert manager.get_loss_scale() == expected


def test_first_step_overflow_leaves_fresh_optimizer_state():
    net, opt = regression(momentum=0.9)
    start = [p.detach().clone() for p in net.parameters()]
    step = amp.make_train_step(forward_with_poison(net, [True]), opt, amp.FixedLossScaleManager(64))
    step(torch.randn(8, 4), torch.randn(8, 1))
    for p, p0 in zip(net.parameters(), start):
        torch.testing.assert_close(p.detach(), p0, rtol=0, atol=0)
        buf = opt.state[p].get("momentum_buffer")
        assert buf is None or not buf.any()  # zero: what a first step starts from


def test_fixed_scale_without_drop_applies_the_overflow_step():
    net, opt = regression(momentum=0.0)
    manager = amp.FixedLossScaleManager(128.0, drop_overflow_update=False)
    step = amp.make_train_step(forward_with_poison(net, [True]), opt, manager)
    step(torch.randn(8, 4), torch.randn(8, 1))
    assert not torch.isfinite(net.weight).all()  # MindSpore's semantics: applied anyway
    assert manager.get_loss_scale() == 128.0


def test_scaled_step_equals_the_unscaled_step():
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    results = []
    for manager in (None, amp.FixedLossScaleManager(2.0**12), amp.DynamicLossScaleManager()):
        net, opt = regression()
        step = amp.make_train_step(
            lambda a, b, net=net: nn.functional.mse_loss(net(a), b), opt, manager
        )
        for _ in range(3):
            step(x, y)
        results.append(net.weight.detach().clone())
    torch.testing.assert_close(results[1], results[0])
    torch.testing.assert_close(results[2], results[0])


def test_gradient_clipping_bounds_the_update():
    net, opt = regression(momentum=0.0)
    w0 = net.weight.detach().clone()
    step = amp.make_train_step(
        lambda a, b: 1e6 * nn.functional.mse_loss(net(a), b), opt, max_grad_norm=1.0
    )
    step(torch.randn(8, 4), torch.randn(8, 1))
    moved = torch.cat([(net.weight - w0).flatten()]).norm()
    assert moved <= 0.1 * 1.0 + 1e-6  # lr * max_grad_norm


def test_collapse_guard_raises_after_too_many_overflows():
    net, opt = regression()
    manager = amp.DynamicLossScaleManager(max_consecutive_overflows=5, check_interval=1)
    step = amp.make_train_step(forward_with_poison(net, [True]), opt, manager)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    for _ in range(5):
        step(x, y)
    with pytest.raises(amp.LossScaleCollapsedError, match="6 consecutive steps"):
        step(x, y)


def test_scale_state_round_trips():
    manager = amp.DynamicLossScaleManager(init_loss_scale=1024.0, scale_window=3)
    for overflow in (True, False, False):
        manager.update_loss_scale(overflow)
    state = manager.state_dict()
    restored = amp.DynamicLossScaleManager(scale_window=3)
    restored.load_state_dict(state)
    for _ in range(1):
        manager.update_loss_scale(False)
        restored.update_loss_scale(False)
    assert restored.get_loss_scale() == manager.get_loss_scale() == 1024.0
    assert restored.state_dict() == manager.state_dict()


def test_the_host_read_counter_counts_reads_and_only_accelerator_ones_by_default():
    t = torch.tensor([1.0, 2.0])
    with count_host_reads() as calls:
        t.sum().item(), bool(t[0] > 0), float(t[1]), t.tolist(), t.numpy()
    assert calls == [5]
    with counting_host_reads() as syncs:  # accelerator_only: CPU tensors never sync
        t.sum().item()
    assert syncs == [0]


@pytest.mark.parametrize("fused", [False, True])
def test_no_host_read_inside_the_step(fused):
    torch.manual_seed(0)
    net = amp.auto_mixed_precision(
        nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.Linear(8, 1)), "O2"
    )
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, fused=fused or None)
    poison = [False]
    manager = amp.DynamicLossScaleManager(scale_window=2)
    step = amp.make_train_step(forward_with_poison(net, poison), opt, manager, max_grad_norm=5.0)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    pattern = [int(i % 7 == 3) for i in range(20)]
    with count_host_reads() as calls:
        for overflow in pattern:
            poison[0] = bool(overflow)
            step(x, y)
    assert calls == [0]
    # the overflows were seen and acted on, on the device
    assert manager.get_loss_scale() == mindspore_scales(pattern, 2.0**24, 2, 2)[-1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_no_cuda_sync_inside_the_step():
    torch.manual_seed(0)
    net = amp.auto_mixed_precision(nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 1)).cuda(), "O2")
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    step = amp.make_train_step(
        lambda a, b: nn.functional.mse_loss(net(a), b), opt, amp.DynamicLossScaleManager()
    )
    x, y = torch.randn(8, 4, device="cuda"), torch.randn(8, 1, device="cuda")
    step(x, y)  # creates state
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(5):
            step(x, y)
    finally:
        torch.cuda.set_sync_debug_mode("default")


def test_o2_master_weights_keep_updates_too_small_for_low_precision():
    """An update of 1e-4 on a weight of 1.0 is below bf16's (and fp16's) resolution there."""
    for level, expect_moved in (("O2", True), ("O3", False)):
        net = nn.Linear(1, 1, bias=False)
        nn.init.ones_(net.weight)
        converted = amp.auto_mixed_precision(net, level)
        opt = torch.optim.SGD(net.parameters(), lr=1e-4)
        step = amp.make_train_step(lambda x, net=converted: net(x).sum(), opt)  # d/dw = x = 1
        step(torch.ones(1, 1))
        moved = float(1.0 - net.weight.float().item())
        if expect_moved:
            assert net.weight.dtype == torch.float32 and moved == pytest.approx(1e-4, rel=1e-3)
        else:
            assert net.weight.dtype == torch.bfloat16 and moved == 0.0


def test_build_train_network_defaults_per_level():
    net = nn.Sequential(nn.Linear(4, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    step = amp.build_train_network(net, opt, nn.CrossEntropyLoss(), level="O2")
    assert step.loss_scale_manager is None  # bf16 on CPU needs no scaling
    loss = step(torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1]))
    assert loss.dtype == torch.float32 and loss.shape == ()
    net16 = nn.Sequential(nn.Linear(4, 3))
    with pytest.warns(UserWarning, match="float16 on CPU"):
        step16 = amp.build_train_network(
            net16,
            torch.optim.SGD(net16.parameters(), lr=0.1),
            nn.CrossEntropyLoss(),
            "O2",
            cast_model_type=torch.float16,
        )
    assert isinstance(step16.loss_scale_manager, amp.DynamicLossScaleManager)
    with pytest.raises(ValueError, match="level must be one of"):
        amp.build_train_network(net, opt, level="O5")
