"""Data-parallel training across processes launched by ``torchrun``.

When ``WORLD_SIZE`` > 1, :class:`jisu.Model` calls :func:`init` (or the user does, as
MindSpore's ``init()``): the process group is set up (NCCL on CUDA, gloo on CPU), the pipeline
seed is made the same on every rank (rank 0's), the network is wrapped in
``DistributedDataParallel``, a jisu training dataset is sharded by rank into equal, disjoint
parts, and only rank 0 prints. :func:`checkpoint_writer` says which ranks write checkpoints
(every rank with a directory of its own, as MindSpore; one per shared directory).
"""

from __future__ import annotations

import atexit
import os
import socket
import time

import torch
import torch.distributed as dist

from .dataset import config

#: seconds a gloo job's exit waits for gloo's threads to finish (:func:`_destroy_gloo_group`)
_GLOO_SETTLE_S = 0.5


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
    if backend == "gloo":
        atexit.register(_destroy_gloo_group)
    if not config.seed_was_set():  # every rank must shuffle alike, or the shards overlap
        device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else None
        seed = torch.tensor([config.pipeline_seed()], dtype=torch.int64, device=device)
        dist.broadcast(seed, src=0)
        config.set_seed(int(seed.item()))


def _destroy_gloo_group() -> None:
    """Destroy the gloo process group this module made, at interpreter exit: a gloo group
    still alive when the interpreter tears down can abort the process ("terminate called
    without an active exception", SIGABRT; pytorch#190489), seen in a 2-process run on a busy
    machine. Only gloo: destroying an NCCL group while another rank is still in a collective
    can hang, and torch warns there instead. A group the script destroyed itself is left."""
    if is_initialized() and dist.get_backend() == "gloo":
        dist.destroy_process_group()
        # A DistributedDataParallel still alive keeps the group, and gloo's worker threads run
        # on into the interpreter's teardown (shutdown() does not stop them): a thread still
        # freeing a finished collective then needs the GIL and aborts the process. Core dumps
        # of such aborts (a 2-process job beside busy loops) showed that thread descheduled
        # since the collective's end; the GIL is let go here so that it finishes first.
        time.sleep(_GLOO_SETTLE_S)


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
    # the tensors themselves, not ``.data``: a temporary Python tensor dropped while gloo's
    # worker thread still holds the finished work hands its last reference to that thread,
    # which then needs the GIL to free it; at interpreter teardown that aborted the process
    # ("terminate called without an active exception", SIGABRT; seen in core dumps of a
    # 2-process job beside busy loops, the broadcast its last collective)
    with torch.no_grad():
        for tensor in [*network.parameters(), *network.buffers()]:
            dist.broadcast(tensor, src=src)


class CheckpointWriter:
    """Whether this rank writes the checkpoints of a directory: truthy for the lowest rank of
    the job that asked about that directory (per machine). Made by :func:`checkpoint_writer`
    at train begin, tested at the first save; the answer is kept."""

    def __init__(self, directory: str) -> None:
        self._answer: bool | None = None if is_initialized() else True
        if self._answer is None:
            where = f"{socket.gethostname()}/{os.path.realpath(directory)}"
            self._key = f"jisu/checkpoint_writer/{where}/"
            # add, not set: a TCPStore client's set is not acknowledged, so another rank
            # could ask before the store has it; add returns only once the store counted it.
            # The store is looked up at each use, never kept: a reference held here would
            # keep it alive past destroy_process_group, into the interpreter's teardown
            _store().add(self._key + str(get_rank()), 1)

    def __bool__(self) -> bool:
        if self._answer is None:
            store = _store()
            lower = (self._key + str(r) for r in range(get_rank()))
            self._answer = not any(store.check([key]) for key in lower)
        return self._answer


def _store() -> dist.Store:
    """The default process group's key-value store."""
    return dist.distributed_c10d._get_default_store()


def checkpoint_writer(directory: str) -> CheckpointWriter:
    """Register this rank as a writer of ``directory`` (call it at train begin); the returned
    object is truthy (test it at the first save) for the lowest rank of each directory.

    MindSpore writes on every rank, and the zoo gives each rank its own directory
    (``ckpt_dir + "ckpt_" + str(rank)``): then every rank writes. Ranks that share a directory
    would race on the same file names: only the lowest of them writes. The ranks meet in the
    process group's key-value store, not in a collective, because the zoo often gives the
    callback to rank 0 alone (``if rank == 0: callbacks.append(ckpt_cb)``): no rank waits
    for another. A rank decides at its first save, when the training steps' all-reduces have
    made sure that every rank has registered (a job whose steps never communicate may let two
    ranks of one directory both write; each file is still written atomically). Without a
    process group (one process): truthy.
    """
    return CheckpointWriter(directory)
