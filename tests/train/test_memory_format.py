"""``Model(..., memory_format=...)``: a network's 4-D weights laid out channels-last, asked for
or measured. Times are injected (a fake clock advanced by the network's own forward by a cost
that depends on the layout and precision it runs in), so the verdicts hold on any machine;
the numerics are compared with the contiguous network's."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.train import model as model_module
from jisu.train.amp_choice import LevelTrial, choose_for, choose_level, measure_levels
from jisu.train.memory_format import has_image_weights, to_memory_format
from jisu.train.model import Model


class FakeClock:
    """Seconds that only the networks' forwards advance; shared by every copy of a network."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def __deepcopy__(self, memo: dict) -> FakeClock:
        return self


def is_channels_last(tensor: torch.Tensor) -> bool:
    return tensor.is_contiguous(memory_format=torch.channels_last) and not tensor.is_contiguous()


class ConvNet(nn.Module):
    """conv-BN-ReLU, pooled, a linear head. With a ``clock``, a forward costs
    ``costs[(level, layout)]`` fake seconds, read from inside (autocast: O1, bf16 weights: O2;
    the conv weight's strides: the layout). ``needs_nchw``: its code refuses an activation
    that is not NCHW-contiguous (as a custom kernel checking ``is_contiguous()`` does)."""

    def __init__(self, clock=None, costs=None, needs_nchw: bool = False) -> None:
        super().__init__()
        self.clock, self.costs, self.needs_nchw = clock, costs, needs_nchw
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AvgPool2d(4)
        self.head = nn.Linear(8 * 2 * 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.clock is not None:
            level = "O1" if torch.is_autocast_enabled("cpu") else "O0"
            level = "O2" if self.conv.weight.dtype == torch.bfloat16 else level
            layout = "channels_last" if is_channels_last(self.conv.weight) else "contiguous"
            self.clock.now += self.costs[(level, layout)]
        y = self.pool(torch.relu(self.bn(self.conv(x))))
        if self.needs_nchw and not y.is_contiguous():
            raise RuntimeError("pool_kernel: expects an NCHW-contiguous input")
        return self.head(y.flatten(1))


def images(rows: int = 64, batch: int = 16) -> ds.Dataset:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, 3, 8, 8)).astype(np.float32)
    y = rng.integers(0, 3, rows).astype(np.int64)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def conv_model(memory_format: str = "contiguous", amp_level: str = "O0", **net_kw) -> Model:
    torch.manual_seed(0)
    net = ConvNet(**net_kw)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    return Model(net, nn.CrossEntropyLoss(), opt, amp_level=amp_level, memory_format=memory_format)


# ------------------------------------------------------------------ the layout itself
def test_only_4d_floating_tensors_change_layout_and_keep_their_identity_and_values():
    torch.manual_seed(0)
    net = ConvNet()
    params = {name: p for name, p in net.named_parameters()}
    before = {name: p.detach().clone() for name, p in params.items()}
    to_memory_format(net, "channels_last")
    assert is_channels_last(net.conv.weight)
    assert net.head.weight.is_contiguous() and net.bn.weight.is_contiguous()
    for name, p in net.named_parameters():
        assert p is params[name] and torch.equal(p, before[name])  # optimizers stay right
    to_memory_format(net, "contiguous")
    assert net.conv.weight.is_contiguous()
    assert has_image_weights(net) and not has_image_weights(nn.Sequential(nn.Linear(3, 3)))


def test_channels_last_trains_to_the_same_weights_and_saves_the_same_checkpoint(tmp_path):
    """The layout is not the math: the same run in both layouts ends at the same weights (up
    to the kernels' summation order), and the checkpoint holds NCHW values either way."""
    runs = {}
    for layout in ("contiguous", "channels_last"):
        model = conv_model(layout)
        assert is_channels_last(model.network.conv.weight) == (layout == "channels_last")
        model.train(2, images())
        assert is_channels_last(model.network.conv.weight) == (layout == "channels_last")
        path = os.path.join(tmp_path, f"{layout}.ckpt")
        jisu.save_checkpoint(model.network, path)
        runs[layout] = (model.network.state_dict(), jisu.load_checkpoint(path))
        weight = runs[layout][1]["conv.weight"].asnumpy()  # the values, in NCHW order
        assert np.array_equal(weight, model.network.conv.weight.detach().contiguous().numpy())
    (plain, plain_file), (last, last_file) = runs["contiguous"], runs["channels_last"]
    for name, value in plain.items():
        torch.testing.assert_close(last[name], value, rtol=1e-4, atol=1e-5)
    for name, value in plain_file.items():
        loaded = torch.as_tensor(np.asarray(last_file[name].asnumpy()))
        torch.testing.assert_close(
            loaded, torch.as_tensor(np.asarray(value.asnumpy())), rtol=1e-4, atol=1e-5
        )


# ------------------------------------------------------------------ measured
COSTS = {
    ("O0", "contiguous"): 0.030,
    ("O0", "channels_last"): 0.020,
    ("O1", "contiguous"): 0.025,
    ("O1", "channels_last"): 0.018,
    ("O2", "contiguous"): 0.015,
    ("O2", "channels_last"): 0.010,
}


def batches_of(dataset: ds.Dataset, count: int = 4) -> list[list[torch.Tensor]]:
    return [[torch.as_tensor(c) for c in row] for row in dataset.create_tuple_iterator()][:count]


def test_every_pair_of_level_and_layout_is_timed_by_its_own_steps():
    clock = FakeClock()
    model = conv_model(clock=clock, costs=COSTS)
    trials = measure_levels(
        model, batches_of(images()), clock=clock, formats=("contiguous", "channels_last")
    )
    assert [(t.level, t.memory_format) for t in trials] == list(COSTS)  # levels outermost
    assert [t.seconds for t in trials] == [pytest.approx(v) for v in COSTS.values()]
    assert model.network.conv.weight.is_contiguous()  # the user's network is not touched
    choice = choose_level(trials)
    assert (choice.level, choice.memory_format) == ("O2", "channels_last")
    assert choice.describe().startswith("fastest: O2 channels_last (per train step: O0 30.0 ms,")
    assert "O0 channels_last 20.0 ms" in choice.describe()


def test_the_default_layout_is_kept_unless_clearly_slower():
    trials = [
        LevelTrial("O2", 0.0100, memory_format="contiguous"),
        LevelTrial("O2", 0.0099, memory_format="channels_last"),
    ]
    choice = choose_level(trials)
    assert choice.memory_format == "contiguous" and "so the default layout" in choice.reason
    assert choice.describe().startswith("memory format fastest: O2 contiguous (")


def test_model_measures_the_layout_at_its_fixed_level_and_trains_in_the_chosen_one(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(model_module, "choose_for", functools.partial(choose_for, clock=clock))
    model = conv_model("fastest", clock=clock, costs=COSTS)
    model.train(1, images())
    assert model.amp_level == "O0" and model.memory_format == "channels_last"
    assert [(t.level, t.memory_format) for t in model.amp_choice.trials] == [
        ("O0", "contiguous"),
        ("O0", "channels_last"),
    ]
    assert is_channels_last(model.network.conv.weight)
    # the eval after it runs the converted network on NCHW batches
    assert set(Model(model.network, nn.CrossEntropyLoss(), metrics={"acc"}).eval(images())) == {
        "acc"
    }


def test_both_fastest_choose_the_pair(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(model_module, "choose_for", functools.partial(choose_for, clock=clock))
    model = conv_model("fastest", "fastest", clock=clock, costs=COSTS)
    model.train(1, images())
    assert (model.amp_level, model.memory_format) == ("O2", "channels_last")
    assert model.train_network.precision.level == "O2" and len(model.amp_choice.trials) == 6


def test_both_fastest_may_choose_o0_in_the_other_layout(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(model_module, "choose_for", functools.partial(choose_for, clock=clock))
    costs = {**COSTS, ("O0", "channels_last"): 0.005}
    model = conv_model("fastest", "fastest", clock=clock, costs=costs)
    model.train(1, images())
    assert (model.amp_level, model.memory_format) == ("O0", "channels_last")
    assert is_channels_last(model.network.conv.weight)
    assert model.predict_network.conv.weight is model.network.conv.weight  # what the step runs


def test_a_network_that_needs_nchw_activations_keeps_them(monkeypatch):
    """Code that refuses a channels-last activation raises in that trial: it fails and the
    contiguous layout is kept, however fast the failed one would have been."""
    clock = FakeClock()
    monkeypatch.setattr(model_module, "choose_for", functools.partial(choose_for, clock=clock))
    model = conv_model("fastest", clock=clock, costs=COSTS, needs_nchw=True)
    model.train(1, images())
    assert model.memory_format == "contiguous" and model.network.conv.weight.is_contiguous()
    failed = model.amp_choice.trials[1]
    assert failed.memory_format == "channels_last" and failed.failure.startswith("failed (Runtime")


def test_a_network_without_image_weights_is_not_measured():
    net = nn.Sequential(nn.Linear(4, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    model = Model(net, nn.CrossEntropyLoss(), opt, memory_format="fastest")
    x = np.ones((8, 4), np.float32)
    y = np.zeros(8, np.int64)
    model.train(1, ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(4))
    assert model.memory_format == "contiguous" and model.amp_choice is None


def test_bad_memory_formats_are_refused_naming_the_choices():
    net = nn.Conv2d(3, 3, 1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"Model: memory_format must be one of \('contiguous', "):
        Model(net, nn.MSELoss(), opt, memory_format="nhwc")
    with pytest.raises(ValueError, match="memory_format='fastest' needs an optimizer"):
        Model(net, memory_format="fastest")
    with pytest.raises(ValueError, match="measure_levels: formats must be among"):
        measure_levels(Model(net, nn.MSELoss(), opt), [], formats=["nhwc"])
