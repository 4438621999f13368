"""Top-level MindSpore functions model-zoo scripts call as ``ms.<name>``: ``tensor`` and
``from_numpy`` (MindSpore 2.3+), ``connect_network_with_dataset``; ``load`` (MindIR graphs)
is refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._unprovided import refused_function

__all__ = ["connect_network_with_dataset", "from_numpy", "load", "tensor"]


def tensor(input_data: Any = None, dtype: torch.dtype | None = None, shape: Any = None,
           init: Any = None, const_arg: bool = False,
           device: Any = None) -> torch.Tensor:  # fmt: skip
    """``Tensor(input_data, dtype)`` as a function (MindSpore 2.3+'s ``mindspore.tensor``):
    a Python float becomes float32, an int int64, unless ``dtype`` says otherwise; ``device``
    is MindSpore's name ("CPU", "GPU", "Ascend") or torch's.

    Raises:
        NotImplementedError: ``init``/``shape`` (MindSpore's lazily initialised tensors) are
            given; build the values with ``jisu.common.initializer.initializer`` instead.
    """
    from .common.tensor import Tensor

    if init is not None or shape is not None:
        raise NotImplementedError(
            "tensor: shape/init (a lazily initialised tensor) is not provided by jisu; use "
            "jisu.common.initializer.initializer(init, shape, dtype)"
        )
    out = Tensor(input_data, dtype)
    if isinstance(device, str) and device:  # MindSpore's names: "CPU", "GPU", "Ascend"
        device = {"cpu": "cpu", "gpu": "cuda", "ascend": "npu"}.get(device.lower(), device)
    return out.to(device) if device else out


def from_numpy(array: np.ndarray) -> torch.Tensor:
    """A tensor sharing ``array``'s memory (``Tensor.from_numpy``)."""
    from .common.tensor import Tensor

    return Tensor.from_numpy(array)


def connect_network_with_dataset(network: Any, dataset_helper: Any) -> Any:
    """``network`` itself: MindSpore rewires a sink-mode network to read its inputs from the
    device queue; jisu's ``DatasetHelper`` yields the batches in sink mode too, so the loop
    passes them to the network as arguments."""
    return network


load = refused_function(
    "load",
    "it loads a MindIR graph (MindSpore's compiled-graph format), which only MindSpore's "
    "runtime executes; rebuild the network in Python and load a .ckpt into it",
)
