"""The main loop of a worker process (imported by the forkserver, so workers start fast).

Protocol over the worker's duplex pipe (parent -> worker):
    the number of shared arrays, then their file descriptors, then the spec bytes
    (``(task, node_ids, seed, prefetch_size)`` by :func:`.shared_arrays.dumps_sharing`), once;
    ``("slab", slab_id, size)`` followed by the slab's file descriptor;
    ``("drop", slab_id)``;
    ``("task", task_id, epoch, item, slab_id or None)``;
    ``None``: exit.
worker -> parent:
    ``("ok", task_id, seconds, ("slab", slab_id, layout) | ("pickle", result, nbytes),
    (samples skipped, their messages))``;
    ``("err", task_id, seconds, exception or None, message, traceback text)``.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle
from typing import Any

import cloudpickle

from .context import ExecContext
from .shared_arrays import loads_attached
from .shm import pack


def _error_message(exc: BaseException) -> tuple[Any, str, str]:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        payload = cloudpickle.dumps(exc)
        pickle.loads(payload)  # the parent must be able to rebuild it
    except Exception:
        payload = None
    return payload, f"{type(exc).__name__}: {exc}", text


def main(conn: Connection) -> None:
    """Serve tasks until told to stop or until the parent goes away (EOF on the pipe)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    try:
        fds = [recv_handle(conn) for _ in range(conn.recv())]
        spec = conn.recv_bytes()
    except EOFError:
        return
    try:
        task, node_ids, seed, prefetch_size = loads_attached(spec, fds)
    finally:
        for fd in fds:  # the arrays keep their mappings
            os.close(fd)
    ctx = ExecContext(seed, prefetch_size, {id(n): i for n, i in zip(task.nodes(), node_ids)})
    slabs: dict[int, mmap.mmap] = {}
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        kind = message[0]
        if kind == "slab":
            fd = recv_handle(conn)
            slabs[message[1]] = mmap.mmap(fd, message[2])
            os.close(fd)
        elif kind == "drop":
            mapping = slabs.pop(message[1], None)
            if mapping is not None:
                mapping.close()
        elif kind == "task":
            _, task_id, epoch, item, slab_id = message
            begin = time.perf_counter()
            skipped, examples = ctx.skipped, len(ctx.skip_examples)
            try:
                result = task(ctx, epoch, item)
            except Exception as exc:
                conn.send(("err", task_id, time.perf_counter() - begin, *_error_message(exc)))
                continue
            layout, nbytes = pack(result, slabs.get(slab_id) if slab_id is not None else None)
            seconds = time.perf_counter() - begin
            skips = (ctx.skipped - skipped, ctx.skip_examples[examples:])
            if layout is not None:
                conn.send(("ok", task_id, seconds, ("slab", slab_id, layout), skips))
            else:
                conn.send(("ok", task_id, seconds, ("pickle", result, nbytes), skips))
