"""Tensor.repeat: torch's tiling, and MindSpore's ``repeat(repeats[, axis])`` where torch would
refuse the call (fewer numbers than dimensions), as official/audio/LPCNet's
``cfeat.repeat(160, 1)``.

The expected values were printed by MindSpore 2.0.0 for the same calls.
"""

import numpy as np
import torch

import jisu  # noqa: F401  (installs MindSpore's Tensor methods)


def test_positional_mindspore_form():
    x = torch.arange(12, dtype=torch.float32).reshape(2, 2, 3)
    want = [
        [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [3.0, 4.0, 5.0]],
        [[6.0, 7.0, 8.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0], [9.0, 10.0, 11.0]],
    ]
    np.testing.assert_array_equal(x.repeat(2, 1).numpy(), want)
    assert tuple(x.repeat(2, 2).shape) == (2, 2, 6)
    y = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    want = [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0]
    np.testing.assert_array_equal(y.repeat(2).numpy(), want)


def test_torch_tiling_unchanged():
    y = torch.arange(6.0).reshape(2, 3)
    assert tuple(y.repeat(2, 2).shape) == (4, 6)
    assert tuple(y.repeat([2, 2]).shape) == (4, 6)
    assert tuple(y.repeat((2, 1)).shape) == (4, 3)
    assert torch.equal(torch.tensor([1.0, 2.0]).repeat(2), torch.tensor([1.0, 2.0, 1.0, 2.0]))
