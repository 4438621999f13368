"""MindSpore's collective primitives (``mindspore.ops.operations.comm_ops``) on
``torch.distributed``: ``AllReduce``, ``AllGather``, ``Broadcast`` and ``ReduceOp``.

Under ``torchrun`` (after ``jisu.communication.init()``) they run the collective over the
world; in one process they return their input (the world is that process). MindSpore's group
names are accepted; jisu has one group, the world. The results carry no autograd history
(gradients and flags are what train cells reduce), except ``AllReduce`` and ``AllGather`` of a
tensor that requires grad, which go through ``torch.distributed.nn`` so that the backward pass
reduces too.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from ..primitive import Primitive


class ReduceOp:
    """MindSpore's reduction names."""

    SUM = "sum"
    MAX = "max"
    MIN = "min"
    PROD = "prod"


_TORCH_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN", "prod": "PRODUCT"}


def _check_group(owner: str, group: Any) -> None:
    if group is not None and not isinstance(group, str):
        raise TypeError(f"{owner}: group must be a str. Received {type(group).__name__}")


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


class AllReduce(Primitive):
    """Reduce a tensor over every process (``op``: ``ReduceOp.SUM``, ``MAX``, ``MIN``,
    ``PROD``); every process gets the result.

    Args:
        op: the reduction, default ``ReduceOp.SUM``.
        group: MindSpore's group name (jisu has one group, the world).
    """

    def __init__(self, op: str = ReduceOp.SUM, group: str | None = None) -> None:
        if op not in _TORCH_OPS:
            raise ValueError(
                f"AllReduce: op must be one of {sorted(_TORCH_OPS)} (ReduceOp). Received op={op!r}"
            )
        _check_group("AllReduce", group)
        self.op = op
        self.group = group

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"AllReduce: x must be a tensor. Received {type(x).__name__}")
        if not _distributed():
            return x
        op = getattr(dist.ReduceOp, _TORCH_OPS[self.op])
        if x.requires_grad and torch.is_grad_enabled():
            from torch.distributed.nn import functional as dist_nn

            return dist_nn.all_reduce(x, op=op)
        out = x.detach().clone()
        dist.all_reduce(out, op=op)
        return out


class AllGather(Primitive):
    """Concatenate every process's tensor along the first axis (rank order)."""

    def __init__(self, group: str | None = None) -> None:
        _check_group("AllGather", group)
        self.group = group

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"AllGather: x must be a tensor. Received {type(x).__name__}")
        if not _distributed():
            return x
        if x.requires_grad and torch.is_grad_enabled():
            from torch.distributed.nn import functional as dist_nn

            return torch.cat(dist_nn.all_gather(x), dim=0)
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x.detach().contiguous())
        return torch.cat(parts, dim=0)


class Broadcast(Primitive):
    """Every process gets ``root_rank``'s tensors: called with a tuple of tensors, returns a
    tuple."""

    def __init__(self, root_rank: int, group: str | None = None) -> None:
        if isinstance(root_rank, bool) or not isinstance(root_rank, int) or root_rank < 0:
            raise ValueError(f"Broadcast: root_rank must be an int >= 0. Received {root_rank!r}")
        _check_group("Broadcast", group)
        self.root_rank = root_rank
        self.group = group

    def __call__(self, x: Any) -> tuple:
        tensors = (x,) if isinstance(x, torch.Tensor) else tuple(x)
        if not _distributed():
            return tensors
        out = []
        for t in tensors:
            copy = t.detach().clone().contiguous()
            dist.broadcast(copy, src=self.root_rank)
            out.append(copy)
        return tuple(out)


class _VirtualDataset(Primitive):
    """MindSpore's input split of auto parallel: every process of jisu's data parallelism
    reads its own shard, so it returns its inputs as they are (a tuple)."""

    def __call__(self, *inputs: Any) -> tuple:
        return inputs


__all__ = ["AllGather", "AllReduce", "Broadcast", "ReduceOp"]
