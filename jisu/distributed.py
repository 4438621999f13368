"""Data-parallel training across processes launched by ``torchrun``.

When ``WORLD_SIZE`` > 1, :class:`jisu.Model` calls :func:`init` (or the user does, as
MindSpore's ``init()``): the process group is set up (NCCL on CUDA, gloo on CPU), the pipeline
seed is made the same on every rank (rank 0's), the network is wrapped in
``DistributedDataParallel``, a jisu training dataset is sharded by rank into equal, disjoint
parts, and only rank 0 prints and writes checkpoints.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from .dataset import config


def world_size_from_env() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_initialized() -> bool:
    return dist.is_available() and dist.is_initialized()


def init(backend: str | None = None) -> None:
    """Join the ``torchrun`` job (a no-op for a single process or when already joined)."""
    if is_initialized() or world_size_from_env() <= 1:
        return
    if not dist.is_available():
        raise RuntimeError("init: this torch build has no torch.distributed")
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend)
    if not config.seed_was_set():  # every rank must shuffle alike, or the shards overlap
        device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else None
        seed = torch.tensor([config.pipeline_seed()], dtype=torch.int64, device=device)
        dist.broadcast(seed, src=0)
        config.set_seed(int(seed.item()))


def get_rank() -> int:
    """This process's rank (0 when not distributed)."""
    return dist.get_rank() if is_initialized() else 0


def get_group_size() -> int:
    """The number of processes (1 when not distributed)."""
    return dist.get_world_size() if is_initialized() else 1


def is_main_process() -> bool:
    return get_rank() == 0


def local_device() -> torch.device | None:
    """The CUDA device of this rank under NCCL (None otherwise)."""
    if is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return None
