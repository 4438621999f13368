"""``mindspore.communication.management`` on ``torch.distributed``: a script launched by
``torchrun`` calls ``init()`` and reads its rank and the group size as in MindSpore;
``create_group(name, rank_ids)`` makes a ``torch.distributed`` subgroup (in a job) that
``get_rank(name)``/``get_group_size(name)`` then describe, and ``get_group(name)`` returns for
torch's collectives."""

from __future__ import annotations

import os
import warnings
from typing import Any

import torch
import torch.distributed as dist

from .. import distributed


class GlobalComm:
    """MindSpore's group names; jisu has one group, the world."""

    WORLD_COMM_GROUP = "hccl_world_group"
    BACKEND = "nccl"


def init(backend_name: str | None = None) -> None:
    """Join the ``torchrun`` job; without a launcher (one process), nothing to join.

    The backend follows the platform, as MindSpore's follows ``device_target``: NCCL on CUDA,
    gloo on CPU (``device_target="CPU"``, or no CUDA). MindSpore's names are read so: "hccl"
    (Ascend's) and None are the platform's default, "mccl" (MindSpore's CPU library) and
    "gloo" are gloo, and "nccl" is NCCL where CUDA is there. A zoo script's ``init("nccl")``
    on a machine without CUDA (a CPU test box) joins with gloo and warns: the all-reduce is
    the same sum, and the script runs unchanged (MindSpore refuses "nccl" off GPU).

    Raises:
        TypeError: ``backend_name`` is not a str (or None).
        ValueError: a name other than "nccl", "hccl", "mccl" or "gloo".
    """
    if backend_name is not None and not isinstance(backend_name, str):
        raise TypeError(
            "init: backend_name must be a str. Received: "
            f"backend_name={backend_name!r} ({type(backend_name).__name__})"
        )
    if backend_name not in (None, "nccl", "hccl", "gloo", "mccl"):
        raise ValueError(
            "init: backend_name must be one of 'nccl', 'hccl', 'mccl', 'gloo'. "
            f"Received: backend_name={backend_name!r}"
        )
    if distributed.world_size_from_env() <= 1:
        _refuse_other_launchers()
        return
    backend = "gloo" if backend_name in ("gloo", "mccl") else distributed.default_backend()
    if backend_name == "nccl" and backend != "nccl" and not distributed.is_initialized():
        warnings.warn(
            "init('nccl'): NCCL needs CUDA, and "
            + (
                "device_target is 'CPU'"
                if torch.cuda.is_available()
                else "this torch sees no CUDA device"
            )
            + "; joining the job with gloo (CPU) instead. The gradients are reduced the same; "
            "call init() to pick the platform's backend without this warning",
            stacklevel=2,
        )
    distributed.init(backend)


#: what MindSpore's launchers set for every process of a job: the zoo's
#: run_distribute_train.sh (RANK_SIZE), mpirun (OpenMPI, MPICH), msrun
_OTHER_LAUNCHERS = ("RANK_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MS_WORKER_NUM")


def _refuse_other_launchers() -> None:
    """Outside ``torchrun``, a process that another launcher started as one of several would
    train alone, silently: refuse, naming the torchrun command."""
    for name in _OTHER_LAUNCHERS:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 1:
            raise RuntimeError(
                f"init: this process is one of {value} started by another launcher ({name}="
                f"{value}: the zoo's run_distribute_train.sh, mpirun or msrun); jisu joins "
                f"jobs started by torchrun: torchrun --nproc_per_node={value} train.py ... "
                f"(or unset {name} to train in one process)"
            )


#: groups made by create_group: name -> (sorted world ranks, torch ProcessGroup or None)
_GROUPS: dict[str, tuple[list[int], Any]] = {}


def _world(group: str | None) -> bool:
    if group is None or group == GlobalComm.WORLD_COMM_GROUP or group in ("nccl_world_group",):
        return True
    if not isinstance(group, str):
        raise TypeError(f"communication: group must be a str. Received: {type(group).__name__}")
    if group not in _GROUPS:
        raise ValueError(f"communication: no group named {group!r} (create_group makes one)")
    return False


def create_group(group: str, rank_ids: list[int]) -> None:
    """Make a group of the world ranks ``rank_ids`` under the name ``group`` (a
    ``torch.distributed.new_group`` when a job runs; every process must call it, as in
    MindSpore).

    Raises:
        TypeError: ``group`` is not a str or ``rank_ids`` is not a list of ints.
        ValueError: the name is taken or the world group's, or ``rank_ids`` is empty, repeats
            a rank or names one outside the job.
    """
    if not isinstance(group, str):
        raise TypeError(f"create_group: group must be a str. Received: {type(group).__name__}")
    if not isinstance(rank_ids, list) or not all(
        isinstance(r, int) and not isinstance(r, bool) for r in rank_ids
    ):
        raise TypeError(f"create_group: rank_ids must be a list of ints. Received: {rank_ids!r}")
    size = distributed.get_group_size()
    if group in _GROUPS or _world_name(group):
        raise ValueError(f"create_group: the group name {group!r} is taken")
    if (
        not rank_ids
        or len(set(rank_ids)) != len(rank_ids)
        or not all(0 <= r < size for r in rank_ids)
    ):
        raise ValueError(
            f"create_group: rank_ids must be distinct ranks in [0, {size}). Received: {rank_ids}"
        )
    ranks = sorted(rank_ids)
    handle = dist.new_group(ranks=ranks) if distributed.is_initialized() else None
    _GROUPS[group] = (ranks, handle)


def _world_name(group: str) -> bool:
    return group in (GlobalComm.WORLD_COMM_GROUP, "nccl_world_group")


def get_group(group: str) -> Any:
    """The ``torch.distributed`` process group of ``group`` (None for the world, or without a
    job), for torch's collectives."""
    return None if _world(group) else _GROUPS[group][1]


def destroy_group(group: str) -> None:
    """Forget ``group`` (the world group cannot be destroyed)."""
    if _world(group):
        raise ValueError("destroy_group: the world group cannot be destroyed")
    _ranks, handle = _GROUPS.pop(group)
    if handle is not None:
        dist.destroy_process_group(handle)


def get_rank(group: str | None = None) -> int:
    """This process's rank in ``group`` (the world by default; 0 without a job)."""
    if _world(group):
        return distributed.get_rank()
    ranks = _GROUPS[group][0]
    rank = distributed.get_rank()
    if rank not in ranks:
        raise ValueError(f"get_rank: this process (rank {rank}) is not in group {group!r}")
    return ranks.index(rank)


def get_group_size(group: str | None = None) -> int:
    """The number of processes in ``group`` (the world by default; 1 without a job)."""
    return distributed.get_group_size() if _world(group) else len(_GROUPS[group][0])


def get_world_rank_from_group_rank(group: str, group_rank_id: int) -> int:
    """The world rank of the ``group_rank_id``-th member of ``group``."""
    if _world(group):
        return group_rank_id
    return _GROUPS[group][0][group_rank_id]


def get_group_rank_from_world_rank(world_rank_id: int, group: str) -> int:
    """The rank in ``group`` of the world rank ``world_rank_id``."""
    if _world(group):
        return world_rank_id
    return _GROUPS[group][0].index(world_rank_id)


def get_local_rank(group: str | None = None) -> int:
    """The rank on this machine (``LOCAL_RANK`` of torchrun; 0 without a job)."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def release() -> None:
    """Leave the job."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
