"""Data-parallel training across processes launched by ``torchrun``.

When ``WORLD_SIZE`` > 1, :class:`jisu.Model` calls :func:`init` (or the user does, as
MindSpore's ``init()``): the process group is set up (NCCL on CUDA, gloo on CPU), the pipeline
seed is made the same on every rank (rank 0's), the network is wrapped in
``DistributedDataParallel``, a jisu training dataset is sharded by rank into equal, disjoint
parts, and only rank 0 prints. :func:`checkpoint_writer` says which ranks write checkpoints
(every rank with a directory of its own, as MindSpore; one per shared directory).
"""

from __future__ import annotations

import os
import socket

import torch
import torch.distributed as dist

from .dataset import config


def world_size_from_env() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_initialized() -> bool:
    return dist.is_available() and dist.is_initialized()


def default_backend() -> str:
    """NCCL where CUDA is there and ``device_target`` is not "CPU", else gloo (MindSpore
    picks its backend from ``device_target`` the same way)."""
    from .context import get_context

    if get_context("device_target") == "CPU" or not torch.cuda.is_available():
        return "gloo"
    return "nccl"


def init(backend: str | None = None) -> None:
    """Join the ``torchrun`` job (a no-op for a single process or when already joined)."""
    if is_initialized() or world_size_from_env() <= 1:
        return
    if not dist.is_available():
        raise RuntimeError("init: this torch build has no torch.distributed")
    if backend is None:
        backend = default_backend()
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


def broadcast_parameters(network: torch.nn.Module, src: int = 0) -> None:
    """Every rank's parameters and buffers become rank ``src``'s (MindSpore's
    ``parameter_broadcast=True``: the ranks start from one set of weights); a no-op without a
    process group. Every rank must call it."""
    if not is_initialized():
        return
    with torch.no_grad():
        for tensor in [*network.parameters(), *network.buffers()]:
            dist.broadcast(tensor.data, src=src)


def checkpoint_writer(directory: str) -> bool:
    """Whether this rank writes the checkpoints of ``directory``: every rank calls it (at
    train begin; it is a collective), and the lowest rank of each distinct directory on each
    machine answers True.

    MindSpore writes on every rank, and the zoo gives each rank its own directory
    (``ckpt_dir + "ckpt_" + str(rank)``): then every rank writes. Ranks that share a directory
    would race on the same file names: only the lowest of them writes. Without a process
    group (one process), True.
    """
    if not is_initialized():
        return True
    key = f"{socket.gethostname()}\0{os.path.realpath(directory)}".encode()
    everyone = _all_gather_bytes(key)
    return everyone.index(key) == get_rank()


def _all_gather_bytes(data: bytes) -> list[bytes]:
    """``data`` of every rank, in rank order (two all_gathers of tensors: lengths, then the
    padded bytes; nothing is unpickled)."""
    device = local_device() or torch.device("cpu")
    world = get_group_size()
    size = torch.tensor([len(data)], dtype=torch.int64, device=device)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size)
    lengths = [int(s.item()) for s in sizes]
    mine = torch.zeros(max(lengths), dtype=torch.uint8, device=device)
    mine[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device)
    parts = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(parts, mine)
    return [bytes(p[:n].cpu().tolist()) for p, n in zip(parts, lengths)]
