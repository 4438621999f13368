"""The precision types behind the level strings: one per level, made by one factory."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import jisu.amp as amp
from jisu.amp import levels


def net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))


@pytest.mark.parametrize(
    ("level", "kind"),
    [
        ("O0", levels.O0Precision),
        ("O1", levels.O1Precision),
        ("auto", levels.AutoPrecision),
        ("O2", levels.O2Precision),
        ("O3", levels.O3Precision),
    ],
)
def test_one_type_per_level_and_its_name(level, kind):
    precision = amp.precision_for(level, net())
    assert type(precision) is kind and precision.level == level
    assert precision.dtype == (torch.float32 if level == "O0" else torch.bfloat16)  # CPU
    assert level in repr(precision)


def test_factory_errors_name_the_entry_point():
    with pytest.raises(ValueError, match=r"precision_for: level must be one of .*'O4'"):
        amp.precision_for("O4", net())
    with pytest.raises(ValueError, match=r"precision_for: level must be one of .*\['O2'\]"):
        amp.precision_for(["O2"], net())  # unhashable: refused, not a TypeError
    with pytest.raises(ValueError, match=r"precision_for: dtype must be torch\.float16"):
        amp.precision_for("O2", net(), dtype=torch.float64)
    assert amp.precision_for("O0", net(), dtype=torch.float64).dtype == torch.float32


def test_default_loss_scale_only_at_o2_in_fp16():
    with pytest.warns(UserWarning, match="float16 on CPU"):
        fp16 = amp.precision_for("O2", net(), dtype=torch.float16)
    assert isinstance(fp16.default_loss_scale_manager(), amp.DynamicLossScaleManager)
    assert fp16.default_loss_scale_manager() is not fp16.default_loss_scale_manager()
    for level in ("O0", "O1", "O2", "O3"):
        assert amp.precision_for(level, net()).default_loss_scale_manager() is None  # bf16


def test_keep_batchnorm_fp32_defaults_per_level():
    assert amp.precision_for("O2", net()).keep_batchnorm_fp32 is True
    assert amp.precision_for("O3", net()).keep_batchnorm_fp32 is False
    assert amp.precision_for("O2", net(), keep_batchnorm_fp32=False).keep_batchnorm_fp32 is False


def test_convert_module_is_auto_mixed_precision():
    x = torch.randn(5, 4)
    for level in ("O0", "O1", "O2", "O3"):
        a, b = net(), net()
        via_type = amp.precision_for(level, a).convert_module(a)
        via_function = amp.auto_mixed_precision(b, level)
        assert (via_type is a) == (via_function is b) == (level == "O0")
        assert torch.equal(via_type(x), via_function(x))
        assert amp.describe(via_type) == amp.describe(via_function)
        if level != "O0":  # O0 returns the network unconverted
            with pytest.raises(ValueError, match="convert_module: this network was already"):
                amp.precision_for(level, net()).convert_module(via_type)


def test_forward_context_is_the_autocast_region_at_o1_only():
    x, w = torch.randn(2, 4), torch.randn(4, 4)
    with amp.precision_for("O1", net()).forward_context("cpu"):
        assert (x @ w).dtype == torch.bfloat16
        assert torch.softmax(x.bfloat16(), -1).dtype == torch.float32  # the fp32 list
    with amp.precision_for("O2", net()).forward_context("cpu"):
        assert (x @ w).dtype == torch.float32


def test_mixed_precision_network_still_takes_a_level_name():
    a, b = net(), net()
    by_name = amp.MixedPrecisionNetwork(a, "O1", torch.bfloat16)
    assert isinstance(by_name.precision, levels.O1Precision) and by_name.level == "O1"
    x = torch.randn(5, 4)
    assert torch.equal(by_name(x), amp.auto_mixed_precision(b, "O1")(x))
    assert amp.MixedPrecisionNetwork(net(), "white_list", torch.bfloat16).level == "white_list"
    with pytest.raises(ValueError, match="MixedPrecisionNetwork: level must be one of"):
        amp.MixedPrecisionNetwork(net(), "O9", torch.bfloat16)


def test_train_step_takes_the_precision_and_build_train_network_sets_it():
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = amp.build_train_network(model, opt, nn.CrossEntropyLoss(), level="O2")
    assert isinstance(step.precision, levels.O2Precision)
    assert step.with_forward(step.forward_fn).precision is step.precision
    fp32 = amp.build_train_network(
        net(), opt, nn.CrossEntropyLoss(), "O3", cast_model_type=torch.float32
    )
    assert isinstance(fp32.precision, levels.O0Precision)  # MindSpore: fp32 model type: O0
    assert amp.TrainStep(lambda: None, opt).precision is None  # the old constructor
    with pytest.raises(TypeError, match=r"TrainStep: precision must be a jisu\.amp\.Precision"):
        amp.TrainStep(lambda: None, opt, precision="O2")
