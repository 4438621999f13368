"""Negative-step slices (jisu.common.tensor_slicing), checked against MindSpore 2.0.0's
printed answers (the same as NumPy's)."""

import numpy as np
import torch

import jisu  # noqa: F401  (installs the indexing)


def _x():
    return torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)


def test_negative_steps_as_mindspore():
    x, n = _x(), np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    # MindSpore 2.0.0 printed these three (official/cv/RetinaFace_ResNet50's x[:, ::-1])
    assert x[:, ::-1].tolist() == [
        [[8.0, 9.0, 10.0, 11.0], [4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0]],
        [[20.0, 21.0, 22.0, 23.0], [16.0, 17.0, 18.0, 19.0], [12.0, 13.0, 14.0, 15.0]],
    ]
    assert x[..., 3:0:-2].tolist() == [[[3.0, 1.0], [7.0, 5.0], [11.0, 9.0]],
                                       [[15.0, 13.0], [19.0, 17.0], [23.0, 21.0]]]  # fmt: skip
    assert x[1, ::-1, None, -1].tolist() == [[23.0], [19.0], [15.0]]
    for key in [(slice(None, None, -1),), (Ellipsis, slice(-1, None, -3)),
                (torch.tensor([True, False]), slice(None, None, -2))]:  # fmt: skip
        nkey = tuple(k.numpy() if isinstance(k, torch.Tensor) else k for k in key)
        np.testing.assert_array_equal(x[key].numpy(), n[nkey])


def test_negative_step_gradient_and_plain_errors():
    x = _x().requires_grad_()
    (x[:, ::-1, 0] * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad[0, :, 0].tolist() == [3.0, 2.0, 1.0]
    try:
        _x()[5, 0]
    except IndexError:
        pass
    else:
        raise AssertionError("an out-of-range index still raises")
