"""What each AMP level runs in which dtype, checked with forward-hook probes."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import jisu.amp as amp

LOW = torch.bfloat16


class Probe(nn.Module):
    """conv, BatchNorm, linear, LayerNorm, softmax: the layer kinds the levels treat apart."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 10)
        self.ln = nn.LayerNorm(10)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.softmax(self.ln(self.fc(x.flatten(1))))


def probe(level: str, **kwargs):
    """(dtypes seen per layer: input, output, weight used), network output, stored weights."""
    torch.manual_seed(0)
    net = Probe()
    seen = {}
    for name, module in net.named_children():

        def hook(module, inputs, output, name=name):
            weight = getattr(module, "weight", None)
            seen[name] = (inputs[0].dtype, output.dtype, None if weight is None else weight.dtype)

        module.register_forward_hook(hook)
    converted = amp.auto_mixed_precision(net, level, **kwargs)
    out = converted(torch.randn(2, 1, 8, 8))
    loss = nn.functional.nll_loss(out.log(), torch.tensor([1, 2]))
    stored = {n: p.dtype for n, p in net.named_parameters()}
    return seen, out, loss, stored


F32 = torch.float32


def test_o0_changes_nothing():
    seen, out, loss, stored = probe("O0")
    assert all(
        dtypes == (F32, F32, F32 if w else None)
        for dtypes, w in zip(seen.values(), [1, 1, 1, 1, 0])
    )
    assert out.dtype == loss.dtype == F32 and set(stored.values()) == {F32}


def test_o1_runs_matmul_and_conv_low_and_norms_softmax_loss_in_fp32():
    seen, out, loss, stored = probe("O1")
    assert seen["conv"][1] == LOW and seen["fc"][1] == LOW  # autocast's low-precision ops
    assert seen["bn"][1] == F32 and seen["ln"][1] == F32  # norms computed in fp32
    assert seen["softmax"][1] == F32
    assert out.dtype == loss.dtype == F32
    assert set(stored.values()) == {F32}  # weights stay fp32


def test_o2_runs_everything_low_but_the_norms_with_fp32_master_weights():
    seen, out, loss, stored = probe("O2")
    assert seen["conv"] == (LOW, LOW, LOW) and seen["fc"] == (LOW, LOW, LOW)
    # norms: fp32 weights (and statistics); PyTorch's mixed-type kernels take the
    # low-precision input as it is, compute in fp32 and hand low precision on
    assert seen["bn"] == (LOW, LOW, F32) and seen["ln"] == (LOW, LOW, F32)
    assert seen["softmax"][1] == LOW
    assert out.dtype == loss.dtype == F32
    assert set(stored.values()) == {F32}  # masters


@pytest.mark.parametrize("norm", [nn.BatchNorm2d(4), nn.LayerNorm([6, 6]), nn.GroupNorm(2, 4)])
def test_o2_norms_compute_in_fp32(norm):
    """The norm's output equals fp32 arithmetic on its low-precision input, rounded once,
    and differs from the same norm computed with low-precision weights."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in norm.parameters():
            p.uniform_(0.5, 1.5)
    net = nn.Sequential(nn.Conv2d(1, 4, 3), norm)
    reference = copy.deepcopy(net)
    got = {}
    norm.register_forward_hook(lambda m, i, o: got.update(x=i[0], y=o))
    amp.auto_mixed_precision(net, "O2")(torch.randn(2, 1, 8, 8) * 4 + 3)
    x, y = got["x"], got["y"]
    assert x.dtype == LOW and y.dtype == LOW
    fp32 = reference[1](x.float()).to(LOW)
    torch.testing.assert_close(y.float(), fp32.float(), rtol=0, atol=1e-4)
    with torch.no_grad():
        low_weights = copy.deepcopy(reference[1]).to(LOW)(x)
    assert (low_weights.float() - y.float()).abs().max() > 1e-3


def test_o2_without_keep_batchnorm_fp32_runs_norms_low_too():
    seen, *_ = probe("O2", keep_batchnorm_fp32=False)
    assert seen["bn"][0] == LOW and seen["ln"][0] == LOW


def test_o3_is_pure_low_precision():
    seen, out, loss, stored = probe("O3")
    assert all(dtypes[0] == LOW and dtypes[1] == LOW for dtypes in seen.values())
    assert set(stored.values()) == {LOW}
    assert out.dtype == loss.dtype == F32


def test_custom_white_and_black_lists():
    torch.manual_seed(0)
    net = Probe()
    seen = {}
    for name, module in net.named_children():
        module.register_forward_hook(
            lambda m, i, o, name=name: seen.__setitem__(name, (i[0].dtype, o.dtype))
        )
    out = amp.custom_mixed_precision(net, white_list=[nn.Linear])(torch.randn(2, 1, 8, 8))
    assert seen["fc"][0] == LOW and seen["conv"] == (F32, F32) and seen["ln"] == (F32, F32)
    assert out.dtype == F32
    net2 = Probe()
    seen.clear()
    for name, module in net2.named_children():
        module.register_forward_hook(
            lambda m, i, o, name=name: seen.__setitem__(name, (i[0].dtype, o.dtype))
        )
    amp.custom_mixed_precision(net2, black_list=[nn.Conv2d])(torch.randn(2, 1, 8, 8))
    assert seen["conv"][0] == F32 and seen["fc"][0] == LOW and seen["bn"][0] == LOW
    with pytest.raises(ValueError, match="exactly one of white_list and black_list"):
        amp.custom_mixed_precision(Probe())
    assert nn.Linear in amp.get_white_list() and nn.LayerNorm in amp.get_black_list()


def test_original_network_stays_usable_and_checkpoints_keep_their_keys():
    net = Probe()
    converted = amp.auto_mixed_precision(net, "O2")
    x = torch.randn(2, 1, 8, 8)
    assert net(x).dtype == F32  # the casts act only inside the converted network
    assert converted.state_dict().keys() == net.state_dict().keys()
    plain = Probe()
    plain.load_state_dict(converted.state_dict())
    torch.testing.assert_close(plain.eval()(x), net.eval()(x))


def test_converting_twice_is_refused_and_bad_arguments_fail_clearly():
    net = Probe()
    converted = amp.auto_mixed_precision(net, "O2")
    for target in (net, converted):
        with pytest.raises(ValueError, match="already converted"):
            amp.auto_mixed_precision(target, "O1")
    with pytest.raises(ValueError, match="amp_level must be one of"):
        amp.auto_mixed_precision(Probe(), "O4")
    with pytest.raises(ValueError, match=r"dtype must be torch\.float16 or torch\.bfloat16"):
        amp.auto_mixed_precision(Probe(), "O2", dtype=torch.float64)
    with pytest.warns(UserWarning, match="float16 on CPU is very slow"):
        amp.auto_mixed_precision(Probe(), "O2", dtype=torch.float16)


def test_a_converted_network_trains_at_its_own_level_through_o0_as_in_mindspore():
    # auto_mixed_precision(net, "O2", fp16), then the converted network at O0 (MindSpore's
    # way to a level at a chosen dtype): it trains as build_train_network at O2 fp16 would
    with pytest.warns(UserWarning, match="float16 on CPU"):
        converted = amp.auto_mixed_precision(Probe(), "O2", dtype=torch.float16)
    with pytest.warns(UserWarning, match="float16 on CPU"):
        direct = amp.build_train_network(
            Probe(), torch.optim.SGD(Probe().parameters(), lr=0.1), level="O2",
            cast_model_type=torch.float16,
        )  # fmt: skip
    step = amp.build_train_network(converted, torch.optim.SGD(converted.parameters(), lr=0.1))
    assert step.network is converted and step.precision is converted.precision
    assert step.precision.level == "O2" and step.precision.dtype == torch.float16
    assert type(step.loss_scale_manager) is type(direct.loss_scale_manager)  # O2 fp16's
    for level in ("O1", "O2"):
        with pytest.raises(ValueError, match="already converted"):
            amp.build_train_network(converted, step.optimizer, level=level)


def test_describe_names_each_layer_and_its_dtype():
    text = amp.describe(amp.auto_mixed_precision(Probe(), "O2"))
    lines = {line.split()[0]: line for line in text.splitlines()[2:] if line.strip()}
    assert "bf16" in lines["conv"] and "fp32 (masters)" in lines["conv"]
    assert lines["bn"].split()[2] == "fp32"
    assert "network output: fp32" in text
    assert "not converted" in amp.describe(Probe())


def test_an_o3_network_takes_fp32_inputs_when_called_itself():
    # MindSpore's O3 network casts its inputs (to_float): evaluating it after training with
    # the data set's fp32 batches runs, in low precision
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    converted = amp.auto_mixed_precision(net, "O3", dtype=torch.bfloat16)
    x = torch.randn(2, 4)
    out = net(x)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, converted(x).to(out.dtype))


class _CastInside(torch.nn.Module):
    """Dense -> cast to float32 -> Dense, as the zoo's ViT FeedForward casts in construct."""

    def __init__(self) -> None:
        super().__init__()
        self.d1, self.d2 = torch.nn.Linear(4, 3, bias=False), torch.nn.Linear(3, 2, bias=False)
        with torch.no_grad():
            self.d1.weight.copy_(torch.arange(12.0).reshape(3, 4) / 10 - 0.5)
            self.d2.weight.copy_(torch.arange(6.0).reshape(2, 3) / 7 - 0.3)

    def forward(self, x):
        return self.d2(self.d1(x).float())


def test_o3_layers_recast_a_float32_input_made_inside_the_network():
    """MindSpore 2.0.0 printed these (amp.auto_mixed_precision(net, "O3"), PYNATIVE): its
    to_float casts every cell's inputs, so the second Dense runs in float16 on the float32
    tensor the construct made (float32 math would give 0.10571429, 0.36285713, ...)."""
    x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.0, 0.0, -0.5, 3.0]])
    expected = torch.tensor([[0.10577392578125, 0.363037109375], [0.1878662109375, 0.7666015625]])
    converted = amp.auto_mixed_precision(_CastInside(), "O3", dtype=torch.float16)
    torch.testing.assert_close(converted(x).float(), expected, rtol=0, atol=0)
    net = converted.network  # called by itself (an eval after training) it recasts too
    torch.testing.assert_close(net(x).float(), expected, rtol=0, atol=0)


def test_o3_overwrites_a_cells_own_to_float():
    """MindSpore 2.0.0 printed the float16 answer below for net.to_float(float16),
    net.d2.to_float(float32) then amp O3 (ghostnet's train.py): O3's to_float(float16)
    overwrites every cell's, the Dense kept in float32 included (float32 math: 0.10571429)."""
    import numpy as np

    import jisu
    from jisu import nn as jnn

    w1 = (np.arange(12).reshape(3, 4) / 10 - 0.5).astype(np.float32)
    w2 = (np.arange(6).reshape(2, 3) / 7 - 0.3).astype(np.float32)
    d1 = jnn.Dense(4, 3, weight_init=jisu.Tensor(w1), bias_init="zeros")
    d2 = jnn.Dense(3, 2, weight_init=jisu.Tensor(w2), bias_init="zeros")
    net = jnn.SequentialCell([d1, d2])
    net.to_float(jisu.float16)
    d2.to_float(jisu.float32)
    converted = amp.auto_mixed_precision(net, "O3", dtype=torch.float16)
    x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.0, 0.0, -0.5, 3.0]])
    expected = torch.tensor([[0.10577392578125, 0.363037109375], [0.1878662109375, 0.7666015625]])
    torch.testing.assert_close(converted(x).float(), expected, rtol=0, atol=0)
