"""``mindspore.communication.management`` on ``torch.distributed``: a script launched by
``torchrun`` calls ``init()`` and reads its rank and the group size as in MindSpore."""

from __future__ import annotations

import os

import torch.distributed as dist

from .. import distributed


class GlobalComm:
    """MindSpore's group names; jisu has one group, the world."""

    WORLD_COMM_GROUP = "hccl_world_group"
    BACKEND = "nccl"


def init(backend_name: str | None = None) -> None:
    """Join the ``torchrun`` job (NCCL on CUDA, gloo on CPU; MindSpore's backend names "nccl"
    and "hccl" are accepted). Without a launcher (one process), nothing to join."""
    if backend_name not in (None, "nccl", "hccl", "gloo", "mccl"):
        raise ValueError(f"init: unknown backend {backend_name!r}")
    if distributed.world_size_from_env() > 1:
        distributed.init("gloo" if backend_name == "gloo" else None)


def get_rank(group: str | None = None) -> int:
    """This process's rank (0 without a job)."""
    return distributed.get_rank()


def get_group_size(group: str | None = None) -> int:
    """The number of processes (1 without a job)."""
    return distributed.get_group_size()


def get_local_rank(group: str | None = None) -> int:
    """The rank on this machine (``LOCAL_RANK`` of torchrun; 0 without a job)."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def release() -> None:
    """Leave the job."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
