"""jisu.common.initializer against MindSpore 2.10's formulas: each distribution's bounds,
mean and standard deviation on a large tensor, the fan-in/fan-out rule, the names, and the
initialization a layer gets by default."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from jisu import nn
from jisu.common.initializer import (
    Constant,
    HeNormal,
    HeUniform,
    Initializer,
    Normal,
    One,
    TruncatedNormal,
    Uniform,
    XavierNormal,
    XavierUniform,
    Zero,
    initializer,
)

#: (out, in, kh, kw): fan_in = 40·9 = 360, fan_out = 300·9 = 2700 (MindSpore's rule)
CONV_SHAPE = (300, 40, 3, 3)
FAN_IN, FAN_OUT = 360, 2700


def uniform_std(bound: float) -> float:
    return bound / math.sqrt(3)


def check_uniform(t: torch.Tensor, bound: float) -> None:
    assert t.abs().max().item() <= bound
    assert t.abs().max().item() > 0.99 * bound  # the bound is reached, not a smaller one
    assert t.mean().item() == pytest.approx(0.0, abs=0.01 * bound)
    assert t.std().item() == pytest.approx(uniform_std(bound), rel=0.01)


def check_normal(t: torch.Tensor, mean: float, std: float) -> None:
    assert t.mean().item() == pytest.approx(mean, abs=0.01 * std + 1e-9)
    assert t.std().item() == pytest.approx(std, rel=0.01)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def test_uniform_and_normal() -> None:
    check_uniform(initializer(Uniform(0.3), (500, 400)), 0.3)
    check_uniform(initializer("uniform", 200_000), 0.07)  # MindSpore's default scale
    check_normal(initializer(Normal(0.5, 2.0), (500, 400)), 2.0, 0.5)
    check_normal(initializer("normal", (500, 400)), 0.0, 0.01)  # sigma 0.01


def test_truncated_normal_bounds_are_absolute() -> None:
    t = initializer(TruncatedNormal(sigma=1.0, mean=0.0, a=-0.5, b=0.5), 200_000)
    assert t.min().item() >= -0.5 and t.max().item() <= 0.5
    # N(0,1) truncated to [-.5,.5]: std 0.2839 (MindSpore 2.10 gave 0.2843 on 1e5 draws)
    assert t.std().item() == pytest.approx(0.2839, rel=0.01)
    default = initializer("truncatednormal", 200_000)
    check_normal(default, 0.0, 0.01)  # [-2, 2] is far out at sigma 0.01


def test_xavier() -> None:
    bound = math.sqrt(6.0 / (FAN_IN + FAN_OUT))
    check_uniform(initializer("xavier_uniform", CONV_SHAPE), bound)
    check_uniform(initializer(XavierUniform(gain=2.0), CONV_SHAPE), 2 * bound)
    check_normal(
        initializer(XavierNormal(gain=0.5), CONV_SHAPE), 0, 0.5 * math.sqrt(2 / (FAN_IN + FAN_OUT))
    )


def test_he_uniform_and_normal() -> None:
    # default: leaky_relu with slope 0 -> gain sqrt(2), fan_in
    check_uniform(initializer("he_uniform", CONV_SHAPE), math.sqrt(3) * math.sqrt(2 / FAN_IN))
    slope5 = math.sqrt(2 / (1 + 5)) / math.sqrt(FAN_IN) * math.sqrt(3)  # = 1/sqrt(fan_in)
    check_uniform(initializer(HeUniform(math.sqrt(5)), CONV_SHAPE), slope5)
    assert slope5 == pytest.approx(1 / math.sqrt(FAN_IN))
    check_normal(
        initializer(HeNormal(mode="fan_out", nonlinearity="relu"), CONV_SHAPE),
        0,
        math.sqrt(2) / math.sqrt(FAN_OUT),
    )
    check_normal(
        initializer(HeNormal(nonlinearity="tanh"), CONV_SHAPE), 0, 5 / 3 / math.sqrt(FAN_IN)
    )
    check_normal(initializer(HeNormal(nonlinearity="sigmoid"), (400, 500)), 0, 1 / math.sqrt(500))


def test_fans_of_a_matrix_are_out_in() -> None:
    # 2-d: (out=1000, in=10): fan_in 10 — bound sqrt(6/(10+1000)) for Xavier
    check_uniform(initializer("xavier_uniform", (1000, 200)), math.sqrt(6 / 1200))
    check_uniform(initializer("he_uniform", (1000, 200)), math.sqrt(6 / 200))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        initializer("he_uniform", 10)


def test_constants_and_values() -> None:
    assert torch.equal(initializer("zeros", (2, 3)), torch.zeros(2, 3))
    assert torch.equal(initializer("ones", 4), torch.ones(4))
    assert torch.equal(initializer(Zero(), 2), torch.zeros(2))
    assert torch.equal(initializer(One(), 2), torch.ones(2))
    assert torch.equal(initializer(Constant(2.5), (2,)), torch.full((2,), 2.5))
    assert torch.equal(initializer(3, (2,)), torch.full((2,), 3.0))
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = initializer(a, (2, 3))
    assert t.dtype == torch.float32 and torch.equal(t, torch.arange(6.0).reshape(2, 3))
    assert initializer("ones", [2], dtype=torch.float16).dtype == torch.float16
    assert initializer("Ones", (1,)).item() == 1  # names are case-insensitive


def test_reproducible_with_torch_seed() -> None:
    torch.manual_seed(5)
    a = initializer("he_uniform", (4, 4))
    torch.manual_seed(5)
    assert torch.equal(a, initializer("he_uniform", (4, 4)))


def test_initializer_fills_in_place() -> None:
    t = torch.empty(3, 3)
    assert Constant(1.5)(t) is t and torch.equal(t, torch.full((3, 3), 1.5))
    assert isinstance(Normal(), Initializer)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: initializer("nope", (2,)), ValueError, "unknown initializer name"),
        (lambda: initializer(object(), (2,)), TypeError, "init must be"),
        (lambda: initializer("ones", (2, 0)), ValueError, "shape must hold positive"),
        (lambda: initializer(torch.zeros(2), (3,)), ValueError, "shape of init"),
        (lambda: initializer("ones"), ValueError, "shape is required"),
        (lambda: initializer(HeUniform(mode="fan"), (2, 2)), ValueError, "mode must be"),
        (lambda: initializer(HeUniform(nonlinearity="elu"), (2, 2)), ValueError, "nonlinearity"),
        (lambda: Normal(sigma=-1), ValueError, "sigma must be >= 0"),
    ],
)
def test_errors(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------ what layers get
def test_layer_default_initialization_follows_mindspore() -> None:
    dense = nn.Dense(400, 300)
    check_uniform(dense.weight.detach(), 1 / math.sqrt(400))  # HeUniform(sqrt(5))
    assert dense.bias.abs().max().item() <= 1 / math.sqrt(400)  # Uniform(1/sqrt(in))
    conv = nn.Conv2d(40, 300, 3, has_bias=True)
    check_uniform(conv.weight.detach(), 1 / math.sqrt(FAN_IN))
    assert conv.bias.abs().max().item() <= 1 / math.sqrt(FAN_IN)
    convt = nn.Conv2dTranspose(300, 40, 3)  # weight (in, out, k, k): fan_in = 40·9
    assert tuple(convt.weight.shape) == (300, 40, 3, 3)
    check_uniform(convt.weight.detach(), 1 / math.sqrt(FAN_IN))
    emb = nn.Embedding(1000, 200)
    check_normal(emb.weight.detach(), 0, 0.01)  # "normal"


def test_layers_take_named_and_object_initializers() -> None:
    assert torch.equal(nn.Dense(3, 2, weight_init="zeros").weight, torch.zeros(2, 3))
    assert torch.equal(nn.Dense(3, 2, bias_init=Constant(0.5)).bias, torch.full((2,), 0.5))
    conv = nn.Conv2d(2, 4, 3, weight_init=One(), has_bias=True, bias_init="ones")
    assert torch.equal(conv.weight, torch.ones(4, 2, 3, 3)) and torch.equal(
        conv.bias, torch.ones(4)
    )
    bn = nn.BatchNorm2d(3, gamma_init="zeros", moving_var_init=Constant(2.0))
    assert torch.equal(bn.weight, torch.zeros(3)) and torch.equal(
        bn.running_var, torch.full((3,), 2.0)
    )
    ln = nn.LayerNorm((4,), beta_init="ones")
    assert torch.equal(ln.bias, torch.ones(4))
    emb = nn.Embedding(5, 2, embedding_table="ones")
    assert torch.equal(emb.weight, torch.ones(5, 2))


class _Ramp(Initializer):
    """A model-zoo style subclass: MindSpore hands _initialize a NumPy array to fill."""

    def _initialize(self, arr):
        assert isinstance(arr, np.ndarray)
        arr[:] = (np.arange(arr.size, dtype=np.float64).reshape(arr.shape) / 10)[:]


def test_a_users_subclass_fills_a_numpy_array_in_place():
    """MindSpore 2.0.0 printed these (initializer(Ramp(), shape, dtype) and Dense's
    weight_init; its _initialize received an ndarray of the dtype)."""

    ramp = [[0.0, 0.1, 0.2], [0.3, 0.4, 0.5]]
    t = initializer(_Ramp(), [2, 3], torch.float32)
    torch.testing.assert_close(t, torch.tensor(ramp), rtol=0, atol=0)
    torch.testing.assert_close(
        nn.Dense(3, 2, weight_init=_Ramp()).weight.detach(), torch.tensor(ramp)
    )
    half = initializer(_Ramp(), [2, 2], torch.float16)
    expected = torch.tensor([[0.0, 0.0999755859375], [0.199951171875, 0.300048828125]])
    torch.testing.assert_close(half.float(), expected, rtol=0, atol=0)
