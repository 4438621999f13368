"""float16 convolutions on CPU run in float32 and round to float16 (jisu/ops/_cpu_half.py):
the dtype MindSpore gives, values within one float16 step of torch's own float16 kernel, and a
backward that is not torch's slow float16 CPU path."""

import time

import numpy as np
import torch
import torch.nn.functional as F

import jisu.nn as nn
from jisu.ops import operations as P


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(rng.standard_normal((2, 8, 9, 9)).astype("float16"))
    w = torch.from_numpy((0.2 * rng.standard_normal((8, 8, 3, 3))).astype("float16"))
    return x, w


def test_primitive_conv2d_float16_is_float32_rounded():
    x, w = _data()
    out = P.Conv2D(8, 3, pad_mode="same")(x, w)
    assert out.dtype == torch.float16
    # the formula: a float32 convolution of the float16 values, rounded once to float16
    want = F.conv2d(x.float(), w.float(), padding=1).half()
    assert torch.equal(out, want)
    # and torch's own float16 kernel agrees within one float16 step
    torch.testing.assert_close(out, F.conv2d(x, w, padding=1), atol=4e-3, rtol=1e-3)


def test_layer_conv2d_float16_grads_keep_dtype():
    x, _ = _data(1)
    conv = nn.Conv2d(8, 4, 3, has_bias=True).to(torch.float16)
    x.requires_grad_(True)
    out = conv(x)
    assert out.dtype == torch.float16
    out.float().sum().backward()
    assert x.grad.dtype == torch.float16 and conv.weight.grad.dtype == torch.float16
    want = F.conv2d(x.detach().float(), conv.weight.float(), conv.bias.float(), padding=1)
    assert torch.equal(out.detach(), want.half())


def test_conv_transpose_float16():
    x, _ = _data(2)
    deconv = nn.Conv2dTranspose(8, 4, 2, stride=2).to(torch.float16)
    out = deconv(x)
    assert out.dtype == torch.float16 and out.shape == (2, 4, 18, 18)
    want = F.conv_transpose2d(x.float(), deconv.weight.float(), stride=2).half()
    assert torch.equal(out, want)


def test_float16_backward_is_not_the_slow_path():
    x = torch.randn(2, 64, 32, 32, dtype=torch.float16, requires_grad=True)
    conv = nn.Conv2d(64, 64, 3).to(torch.float16)
    start = time.perf_counter()
    conv(x).float().sum().backward()
    half = time.perf_counter() - start
    # torch's float16 CPU backward of this conv takes about a second; float32 milliseconds
    assert half < 0.5
