"""MindSpore's ``DistributedGradReducer``: the gradients of a data-parallel step summed (or
averaged) over the processes of the ``torchrun`` job, for train cells that reduce their own
gradients (``grads = self.grad_reducer(grads)``).

In one process it returns the gradients as they are. In a job it all-reduces them over
``torch.distributed``, packed into one flat buffer per dtype and device (one collective per
buffer, as MindSpore fuses its all-reduces), then divides by ``degree`` when ``mean``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from ..cell import Cell


def _world() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class DistributedGradReducer(Cell):
    """All-reduce the gradients across the processes (identity in one process).

    Args:
        parameters: the parameters whose gradients are reduced (MindSpore uses them to plan
            its fusion; jisu reads only their count, to check the gradients').
        mean: average (True) or sum (False); None: the context's ``gradients_mean``.
        degree: the divisor of the mean; None: the number of processes.
        fusion_type: MindSpore's fusion group; no effect.
        group: MindSpore's communication group name; jisu has one group, the world.

    Calling it with a tuple of gradients returns a tuple of the reduced gradients (new
    tensors; the inputs are left as they are).

    Raises:
        ValueError: ``degree`` not a positive int; a number of gradients other than the
            number of parameters.
    """

    def __init__(self, parameters: Any, mean: bool | None = None, degree: int | None = None,
                 fusion_type: int = 1, group: str = "hccl_world_group") -> None:  # fmt: skip
        super().__init__(auto_prefix=False)
        if mean is None:
            from ...parallel._utils import _get_gradients_mean

            mean = _get_gradients_mean()
        if not isinstance(mean, bool):
            raise TypeError(f"DistributedGradReducer: mean must be a bool. Received mean={mean!r}")
        if degree is None:
            degree = _world()
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
            raise ValueError(
                f"DistributedGradReducer: degree must be an int >= 1. Received degree={degree!r}"
            )
        self.num_parameters = len(tuple(parameters))
        self.mean = mean
        self.degree = degree
        self.fusion_type = fusion_type
        self.group = group

    def construct(self, grads: Any) -> tuple:
        grads = tuple(grads)
        if len(grads) != self.num_parameters:
            raise ValueError(
                f"DistributedGradReducer: {len(grads)} gradients for "
                f"{self.num_parameters} parameters"
            )
        if _world() <= 1:
            return grads
        return reduce_gradients(grads, self.degree if self.mean else 1)


#: the flat buffers of the last gloo all-reduce, kept until the next one (CPU tensors only,
#: never a GPU's memory): the Python tensor must outlive gloo's record of the finished work,
#: or its worker thread frees the last reference and needs the GIL to do so, which aborts the
#: process at interpreter teardown (see :func:`jisu.distributed.broadcast_parameters`)
_LAST_REDUCED: list[torch.Tensor] = []


def reduce_gradients(grads: tuple, divisor: int = 1) -> tuple:
    """``grads`` summed over the processes (and divided by ``divisor``): one all-reduce per
    dtype and device, on flat copies; None entries stay None."""
    out: list[Any] = list(grads)
    _LAST_REDUCED.clear()
    buckets: dict[tuple, list[int]] = {}
    for i, g in enumerate(grads):
        if isinstance(g, torch.Tensor):
            buckets.setdefault((g.dtype, g.device), []).append(i)
    for indices in buckets.values():
        with torch.no_grad():
            flat = torch.cat([grads[i].detach().reshape(-1) for i in indices])
            dist.all_reduce(flat)
            if flat.device.type == "cpu":
                _LAST_REDUCED.append(flat)
            if divisor != 1:
                flat.div_(divisor)
            for i, part in zip(indices, flat.split([grads[i].numel() for i in indices])):
                out[i] = part.view_as(grads[i])
    return tuple(out)
