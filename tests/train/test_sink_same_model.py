"""Sink mode trains exactly the model step mode trains.

Over several ways of scheduling the learning rate (jisu's ``LearningRateScheduler``, torch's
``OneCycleLR``/``CosineAnnealingLR`` through ``Model(lr_scheduler=...)``, MindSpore's dynamic
rates on a ``jisu.nn`` optimizer, a warm-up), short sinks, a resume in the middle of an epoch
and AMP levels O0/O2, a run in sink mode ends with weights bit-identical to the same run in
step mode (CPU, same seed), and the rate read inside ``optimizer.step()`` is the same sequence.
One configuration is also checked against a plain PyTorch loop over the same batches, and the
rate sequences against their formulas.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import jisu
from jisu import nn as msnn
from jisu.train import Callback, LambdaCallback, LearningRateScheduler
from jisu.train.replay_guard import SinkReplayWarning
from tests.train.test_model import data

EPOCHS, STEPS = 3, 5  # data(): 160 samples in batches of 32
TOTAL = EPOCHS * STEPS


def net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def record_rates(optimizer) -> list[float]:
    """The rate of each step, read inside ``optimizer.step()`` (a pre-hook)."""
    rates: list[float] = []

    def hook(opt, args, kwargs):
        if isinstance(opt, msnn.Optimizer):
            rates.append(float(opt.get_lr()))
        else:
            rates.append(float(opt.param_groups[0]["lr"]))

    optimizer.register_step_pre_hook(hook)
    return rates


def lrs_callback(amp_level="O0"):
    network = net()
    opt = torch.optim.SGD(network.parameters(), lr=0.5, momentum=0.9)
    model = jisu.Model(network, nn.CrossEntropyLoss(), opt, amp_level=amp_level)
    return model, [LearningRateScheduler(lambda lr, step: 0.5 / (step + 1))]


def one_cycle(amp_level="O0"):
    network = net()
    opt = torch.optim.SGD(network.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=TOTAL)
    return jisu.Model(network, nn.CrossEntropyLoss(), opt, lr_scheduler=sched,
                      amp_level=amp_level), []  # fmt: skip


def cosine_per_step():
    network = net()
    opt = torch.optim.AdamW(network.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=TOTAL)
    return jisu.Model(network, nn.CrossEntropyLoss(), opt, lr_scheduler=sched), []


def cosine_per_epoch():
    network = net()
    opt = torch.optim.SGD(network.parameters(), lr=0.3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    spec = {"scheduler": sched, "interval": "epoch"}
    return jisu.Model(network, nn.CrossEntropyLoss(), opt, lr_scheduler=spec), []


def mindspore_cosine_list():
    network = net()
    rates = msnn.cosine_decay_lr(0.01, 0.5, TOTAL, 1, TOTAL)
    opt = msnn.Momentum(network.parameters(), learning_rate=rates, momentum=0.9)
    return jisu.Model(network, nn.CrossEntropyLoss(), opt), []


def mindspore_warmup_schedule():
    network = net()
    opt = msnn.SGD(network.parameters(), learning_rate=msnn.WarmUpLR(0.5, 7), momentum=0.9)
    return jisu.Model(network, nn.CrossEntropyLoss(), opt), []


def warmup_then_decay():
    """A warm-up list (MindSpore's helpers, joined) on an O2 network."""
    network = net()
    rates = msnn.warmup_lr(0.4, 6, 1, 6)[1:] + msnn.exponential_decay_lr(0.4, 0.8, 10, 1, 1)
    opt = msnn.Momentum(network.parameters(), learning_rate=rates, momentum=0.9)
    return jisu.Model(network, nn.CrossEntropyLoss(), opt, amp_level="O2"), []


CONFIGS = {
    "LearningRateScheduler": lrs_callback,
    "LearningRateScheduler-O2": lambda: lrs_callback("O2"),
    "OneCycleLR": one_cycle,
    "OneCycleLR-O2": lambda: one_cycle("O2"),
    "CosineAnnealingLR-per-step": cosine_per_step,
    "CosineAnnealingLR-per-epoch": cosine_per_epoch,
    "mindspore-cosine_decay_lr-list": mindspore_cosine_list,
    "mindspore-WarmUpLR": mindspore_warmup_schedule,
    "warmup-list-O2": warmup_then_decay,
}


def train(make, sink: bool, epochs: int = EPOCHS, sink_size: int = -1):
    model, callbacks = make()
    rates = record_rates(model.optimizer)
    model.train(epochs, data()[0], callbacks=callbacks, dataset_sink_mode=sink,
                sink_size=sink_size)  # fmt: skip
    return model, rates


def assert_same_weights(a: nn.Module, b: nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for name in sa:
        assert torch.equal(sa[name], sb[name]), name


@pytest.mark.parametrize("name", CONFIGS)
def test_sink_mode_trains_the_weights_of_step_mode(name):
    step_model, step_rates = train(CONFIGS[name], sink=False)
    sink_model, sink_rates = train(CONFIGS[name], sink=True)
    assert len(step_rates) == TOTAL
    assert sink_rates == step_rates  # every step's own rate, read inside optimizer.step()
    assert len(set(step_rates)) >= EPOCHS  # the schedule really moved
    if name != "CosineAnnealingLR-per-epoch":  # and within the first sink
        assert len(set(step_rates[:STEPS])) > 1
    assert_same_weights(step_model.network, sink_model.network)


def test_short_sinks_over_endless_data_train_the_weights_of_step_mode():
    # 5 sinks of 3 steps over the data's endless traversal: the same 15 batches as 3 epochs
    step_model, step_rates = train(one_cycle, sink=False)
    sink_model, sink_rates = train(one_cycle, sink=True, epochs=5, sink_size=3)
    assert sink_rates == step_rates
    assert_same_weights(step_model.network, sink_model.network)


def test_the_rates_follow_their_formulas():
    _, rates = train(lrs_callback, sink=True)
    assert rates == [0.5] + [0.5 / (s + 1) for s in range(1, TOTAL)]
    _, rates = train(mindspore_cosine_list, sink=True)
    expected = [0.01 + 0.5 * 0.49 * (1 + math.cos(math.pi * i / TOTAL)) for i in range(TOTAL)]
    np.testing.assert_allclose(rates, expected, rtol=1e-6)  # float32 on the device
    _, rates = train(cosine_per_epoch, sink=True)
    expected = [0.15 * (1 + math.cos(math.pi * (i // STEPS) / EPOCHS)) for i in range(TOTAL)]
    np.testing.assert_allclose(rates, expected, rtol=1e-12)


def test_sink_mode_equals_a_plain_pytorch_loop_over_the_same_batches():
    sink_model, sink_rates = train(one_cycle, sink=True)
    # the reference: plain torch, the batches the pipeline yields epoch by epoch
    network = net()
    opt = torch.optim.SGD(network.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=TOTAL)
    rates, loss_fn = [], nn.CrossEntropyLoss()
    iterator = data()[0].create_tuple_iterator(num_epochs=EPOCHS)
    for _ in range(EPOCHS):  # MindSpore's iterator: one pass per epoch
        for x, y in iterator:
            rates.append(opt.param_groups[0]["lr"])
            opt.zero_grad(set_to_none=True)
            loss_fn(network(x), y.long()).backward()
            opt.step()
            sched.step()
    assert sink_rates == rates
    assert_same_weights(network, sink_model.network)


class StopAt(Callback):
    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == self.step:
            run_context.request_stop()


@pytest.mark.parametrize("name", ["OneCycleLR", "LearningRateScheduler", "mindspore-WarmUpLR",
                                  "mindspore-cosine_decay_lr-list"])  # fmt: skip
def test_a_run_resumed_mid_epoch_in_sink_mode_continues_the_schedule(tmp_path, name):
    whole, whole_rates = train(CONFIGS[name], sink=False)
    # stopped after step 7 (epoch 2, step 2), saved to a file, resumed in sink mode
    first, callbacks = CONFIGS[name]()
    first_rates = record_rates(first.optimizer)
    first.train(EPOCHS, data()[0], callbacks=[*callbacks, StopAt(7)])
    path = tmp_path / "mid.ckpt"
    jisu.train.save_checkpoint(first, path)  # the Model: a MindSpore .ckpt with its state
    resumed, callbacks = CONFIGS[name]()
    jisu.train.load_checkpoint(path, model=resumed)
    state = resumed.state_dict()
    assert (state["epoch"], state["step_in_epoch"]) == (1, 2)
    resumed_rates = record_rates(resumed.optimizer)
    resumed.train(EPOCHS, data()[0], callbacks=callbacks, dataset_sink_mode=True,
                  initial_epoch=1)  # fmt: skip
    assert first_rates + resumed_rates == whole_rates
    assert_same_weights(whole.network, resumed.network)


# ---------------------------------------------------------------------- callbacks that act
def test_a_replayed_step_callback_that_changes_the_rate_is_reported_once_by_name():
    def halve(run_context):
        for group in run_context.original_args().optimizer.param_groups:
            group["lr"] *= 0.5

    model, _ = lrs_callback()
    cb = LambdaCallback(on_train_step_end=halve)
    with pytest.warns(SinkReplayWarning) as caught:
        model.train(2, data()[0], callbacks=[cb], dataset_sink_mode=True)
    messages = [str(w.message) for w in caught if w.category is SinkReplayWarning]
    assert len(messages) == 1  # once, though every replayed step changed it
    assert (
        "LambdaCallback changed the optimizer's parameter groups in on_train_step_end"
        in (messages[0])
    )
    assert "on_train_step_dispatched" in messages[0] and "sink_size=1" in messages[0]


def test_a_torch_scheduler_stepped_from_a_replayed_callback_is_reported():
    model, _ = lrs_callback()
    sched = torch.optim.lr_scheduler.StepLR(model.optimizer, step_size=2)
    cb = LambdaCallback(on_train_step_end=lambda rc: sched.step())
    with pytest.warns(SinkReplayWarning, match="LambdaCallback changed the optimizer's"):
        model.train(1, data()[0], callbacks=[cb], dataset_sink_mode=True)


def test_the_same_callbacks_in_step_mode_or_as_dispatched_hooks_give_no_report():
    def halve(run_context):
        for group in run_context.original_args().optimizer.param_groups:
            group["lr"] *= 0.5

    with warnings.catch_warnings():
        warnings.simplefilter("error", SinkReplayWarning)
        model, _ = lrs_callback()
        model.train(1, data()[0], callbacks=[LambdaCallback(on_train_step_end=halve)])
        step_mode = model.network
        model, _ = lrs_callback()
        dispatched = LambdaCallback(on_train_step_dispatched=halve)
        model.train(1, data()[0], callbacks=[dispatched], dataset_sink_mode=True)
    # acting per dispatched step in sink mode is acting at the step: the step mode's model
    assert_same_weights(step_mode, model.network)


class Shrink(Callback):
    def on_train_step_end(self, run_context):
        with torch.no_grad():
            for p in run_context.original_args().network.parameters():
                p.mul_(0.99)


class Reads(Callback):
    def __init__(self):
        self.losses = []

    def step_end(self, run_context):  # MindSpore's older name
        self.losses.append(float(run_context.original_args().net_outputs))


def test_replayed_weight_changes_and_stops_are_reported_reads_are_not():
    model, _ = lrs_callback()
    reads = Reads()
    with pytest.warns(SinkReplayWarning) as caught:
        model.train(1, data()[0], callbacks=[reads, Shrink(), StopAt(2)], dataset_sink_mode=True)
    messages = sorted(str(w.message) for w in caught if w.category is SinkReplayWarning)
    assert len(messages) == 2
    assert "Shrink changed the network's parameters in on_train_step_end at step 1" in messages[0]
    assert (
        "StopAt requested a stop, after which this sink had already trained 3 more step(s)"
        in (messages[1])
    )
    assert len(reads.losses) == STEPS  # the sink ran to its end before the stop


def test_a_stop_at_a_sinks_last_step_is_not_reported():
    model, _ = lrs_callback()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SinkReplayWarning)
        model.train(3, data()[0], callbacks=[StopAt(STEPS)], dataset_sink_mode=True)
    assert model.state_dict()["epoch"] == 1


# ---------------------------------------------------------------------- checks and state
def test_lr_scheduler_arguments_are_checked_when_the_model_is_built():
    network = net()
    opt = torch.optim.SGD(network.parameters(), lr=0.1)
    other = torch.optim.SGD(net().parameters(), lr=0.1)
    loss = nn.CrossEntropyLoss()
    with pytest.raises(TypeError, match=r"lr_scheduler must be a torch\.optim\.lr_scheduler"):
        jisu.Model(network, loss, opt, lr_scheduler=lambda step: 0.1)
    with pytest.raises(ValueError, match="must schedule the Model's optimizer"):
        jisu.Model(network, loss, opt, lr_scheduler=torch.optim.lr_scheduler.StepLR(other, 2))
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    with pytest.raises(ValueError, match="interval must be 'step' or 'epoch'"):
        jisu.Model(network, loss, opt, lr_scheduler={"scheduler": sched, "interval": "batch"})
    with pytest.raises(ValueError, match="frequency must be an int >= 1"):
        jisu.Model(network, loss, opt, lr_scheduler={"scheduler": sched, "frequency": 0})
    with pytest.raises(ValueError, match="unknown key"):
        jisu.Model(network, loss, opt, lr_scheduler={"scheduler": sched, "every": 2})
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    with pytest.raises(ValueError, match="ReduceLROnPlateau steps per epoch on a monitored"):
        jisu.Model(network, loss, opt, lr_scheduler=plateau)
    dynamic = msnn.Momentum(network.parameters(), learning_rate=[0.1] * 4, momentum=0.9)
    with pytest.raises(ValueError, match="already per step"):
        jisu.Model(network, loss, dynamic,
                   lr_scheduler=torch.optim.lr_scheduler.StepLR(dynamic, 2))  # fmt: skip


def test_learning_rate_scheduler_refuses_an_optimizer_with_a_dynamic_rate():
    network = net()
    opt = msnn.Momentum(network.parameters(), learning_rate=[0.1] * 10, momentum=0.9)
    model = jisu.Model(network, nn.CrossEntropyLoss(), opt)
    with pytest.raises(ValueError, match="LearningRateScheduler: the optimizer's learning rate"):
        model.train(1, data()[0], callbacks=[LearningRateScheduler(lambda lr, s: lr)])


def test_a_plateau_scheduler_steps_per_epoch_on_the_monitored_loss():
    network = net()
    opt = torch.optim.SGD(network.parameters(), lr=0.1)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0)
    seen = []

    class Loss(Callback):
        def on_train_epoch_end(self, run_context):
            p = run_context.original_args()
            seen.append((float(p.net_outputs), p.optimizer.param_groups[0]["lr"]))

    model = jisu.Model(network, nn.CrossEntropyLoss(), opt,
                       lr_scheduler={"scheduler": plateau, "monitor": "loss"})  # fmt: skip
    model.train(4, data()[0], callbacks=[Loss()], dataset_sink_mode=True)
    lr, best = 0.1, math.inf
    for loss, got in seen:  # torch's rule, patience 0: halve whenever the loss did not improve
        if loss < best * (1 - 1e-4):
            best = loss
        else:
            lr *= 0.5
        assert got == pytest.approx(lr)


def test_the_scheduler_state_is_in_the_checkpoint():
    model, _ = one_cycle()
    model.train(1, data()[0], dataset_sink_mode=True)
    state = model.state_dict()["lr_scheduler"]
    assert state["scheduler"]["last_epoch"] == STEPS and state["steps"] == STEPS


def test_a_jisu_nn_optimizer_skips_an_overflowing_step_on_the_device():
    params = [nn.Parameter(torch.ones(3))]
    opt = msnn.Momentum(params, learning_rate=[0.1, 0.2, 0.3], momentum=0.9)
    params[0].grad = torch.full((3,), 2.0)
    opt.found_inf = torch.tensor(1.0)  # what TrainStep hands a loss-scaled step
    opt.step()
    assert torch.equal(params[0].detach(), torch.ones(3)) and int(opt.global_step) == 0
    assert torch.equal(opt.state[params[0]]["moments"], torch.zeros(3))
    opt.found_inf = torch.tensor(0.0)
    opt.step()  # the skipped step did not use up the first rate
    np.testing.assert_allclose(params[0].detach().numpy(), 1 - 0.1 * 2.0, rtol=1e-6)
    assert int(opt.global_step) == 1


def test_a_tensor_rate_is_filled_in_place_per_step_in_sink_mode():
    # what a CUDA graph needs: the step reads one tensor, the schedule writes into it
    def make():
        model, callbacks = lrs_callback()
        model.optimizer.param_groups[0]["lr"] = torch.tensor(0.5, dtype=torch.float64)
        return model, callbacks

    step_model, step_rates = train(make, sink=False)
    sink_model, sink_rates = train(make, sink=True)
    assert sink_rates == step_rates == [0.5] + [0.5 / (s + 1) for s in range(1, TOTAL)]
    assert_same_weights(step_model.network, sink_model.network)
    model, callbacks = make()
    rate = model.optimizer.param_groups[0]["lr"]
    model.train(1, data()[0], callbacks=callbacks, dataset_sink_mode=True)
    assert model.optimizer.param_groups[0]["lr"] is rate  # the same tensor, filled


def test_rates_stay_floats_off_cuda():
    opt = torch.optim.SGD(net().parameters(), lr=0.1, fused=False)
    assert jisu.train.schedules.rates_on_device(opt, torch.device("cpu")) == 0
    assert opt.param_groups[0]["lr"] == 0.1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_capturable_groups_get_device_rates_and_train_as_step_mode_on_cuda():
    def make():
        network = net().cuda()
        opt = torch.optim.Adam(network.parameters(), lr=0.01, capturable=True)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=TOTAL)
        return jisu.Model(network, nn.CrossEntropyLoss(), opt, lr_scheduler=sched), []

    step_model, _ = train(make, sink=False)
    sink_model, _ = train(make, sink=True)
    lr = sink_model.optimizer.param_groups[0]["lr"]
    assert isinstance(lr, torch.Tensor) and lr.is_cuda
    for a, b in zip(
        step_model.network.state_dict().values(), sink_model.network.state_dict().values()
    ):
        torch.testing.assert_close(a, b)
