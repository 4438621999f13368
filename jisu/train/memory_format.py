"""``Model(..., memory_format=...)``: the layout of a network's image weights, NCHW or NHWC.

A convolution network stores its 4-D weights (and produces its activations) in PyTorch's
default "contiguous" layout, channels before height and width (NCHW). oneDNN on a CPU and
cuDNN's tensor-core kernels on a GPU prefer the channels innermost (NHWC, PyTorch's
``torch.channels_last``): the same network's train step measured 9.0-12.6 ms with channels-last
weights against 13.6-18.1 ms NCHW at O2 on a 2-core AVX-512 CPU (``jisu train``'s network).
Converting the weights is enough: a convolution whose weight is channels-last runs channels-last
and so do the layers after it, the first one converting its NCHW input.

``"channels_last"`` converts the 4-D floating parameters and buffers of the network in place
(the ``Parameter`` objects stay, so an optimizer built over them is still right); a
checkpoint still holds NCHW bytes (the writers make tensors contiguous). Only the memory
layout changes, not the shapes: the numerics are those of the other kernel (summation order).
``"fastest"`` measures both at the first ``train`` (:mod:`jisu.train.amp_choice`); a network
without 4-D weights has nothing to convert and is not measured. Code that needs
NCHW-contiguous activations (a custom kernel checking ``is_contiguous()``) fails in
channels-last, and ``"fastest"`` then keeps the contiguous layout (its trial failed);
``x.view(n, -1)`` after a convolution works (jisu's ``view`` reshapes what torch's cannot
view, as MindSpore's does).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = [
    "CHANNELS_LAST",
    "CONTIGUOUS",
    "FASTEST",
    "FORMATS",
    "check_memory_format",
    "has_image_weights",
    "to_memory_format",
]

#: PyTorch's default layout: NCHW weights
CONTIGUOUS = "contiguous"
#: channels innermost: NHWC weights (``torch.channels_last``)
CHANNELS_LAST = "channels_last"
#: the layouts, the default first
FORMATS = (CONTIGUOUS, CHANNELS_LAST)
#: the value that asks for the measured choice (``amp_level``'s too)
FASTEST = "fastest"


def check_memory_format(value: Any, where: str) -> str:
    """``value`` if it names a layout or ``"fastest"``.

    Raises:
        ValueError: another value, naming ``where`` and the choices.
    """
    if not isinstance(value, str) or value not in (*FORMATS, FASTEST):
        raise ValueError(
            f"{where}: memory_format must be one of {(*FORMATS, FASTEST)}. Received {value!r}"
        )
    return value


def _image_tensors(network: nn.Module) -> list[torch.Tensor]:
    tensors = [*network.parameters(), *network.buffers()]
    return [t for t in tensors if t.dim() == 4 and t.is_floating_point()]


def has_image_weights(network: nn.Module) -> bool:
    """Whether ``network`` has a 4-D floating parameter (a 2-D convolution's weight): only
    then does its layout change anything."""
    return any(isinstance(t, nn.Parameter) for t in _image_tensors(network))


def to_memory_format(network: nn.Module, memory_format: str) -> nn.Module:
    """Lay ``network``'s 4-D floating parameters and buffers out in ``memory_format``, in
    place (``param.data`` is replaced: optimizers and hooks keep their references; a gradient
    already there is converted too). Returns ``network``."""
    layout = torch.channels_last if memory_format == CHANNELS_LAST else torch.contiguous_format
    with torch.no_grad():
        for tensor in _image_tensors(network):
            tensor.data = tensor.data.contiguous(memory_format=layout)
            grad = tensor.grad
            if grad is not None and grad.dim() == 4:
                tensor.grad = grad.contiguous(memory_format=layout)
    return network
