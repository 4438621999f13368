"""The main loop of a worker process (imported by the forkserver, so workers start fast).

Its imports are what every worker needs, and all the forkserver imports besides the modules
of the stage (see :mod:`.start`): keep them light (no torch, no OpenCV).

Protocol over the worker's duplex pipe (parent -> worker):
    the number of shared arrays, then their file descriptors, then the spec bytes
    (``(task, node_ids, seed, prefetch_size, profile, run-time settings)``, by
    :func:`.shared_arrays.dumps_sharing`), once;
    ``("slab", slab_id, size)`` followed by the slab's file descriptor;
    ``("drop", slab_id)``;
    ``("task", task_id, epoch, item, slab_id or None)``;
    ``None``: exit.
worker -> parent:
    ``("ready",)`` once the spec is loaded (the watchdog times a task from then, not from when
    it was sent: a slow start is not a slow task);
    ``("ok", task_id, seconds, ("slab", slab_id, layout) | ("pickle", result, nbytes),
    (samples skipped, their messages))``;
    ``("err", task_id, seconds, exception or None, message, traceback text)``, also for a
    result that cannot be pickled (the worker names the op, column, sample and type, and lives
    on), and for one that pickles but cannot be rebuilt from its pickle (an exception whose
    ``__init__`` takes other arguments than it keeps): values that are not plain arrays,
    numbers or strings are rebuilt here once before they are sent (:func:`plain`).
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler, recv_handle
from typing import Any

import cloudpickle
import numpy as np

from ... import config
from ...core.operation import op_name
from ...core.ragged import RaggedArray
from ..context import ExecContext
from ..errors import with_context
from ..watchdog import describe_items, stage_ops
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


def _pickles(value: Any) -> bool:
    try:
        ForkingPickler.dumps(value)
    except Exception:
        return False
    return True


def rebuild_failure(value: Any) -> Exception | None:
    """The error that rebuilding ``value`` from its pickle raises (an exception whose
    ``__init__`` needs more arguments than it keeps, a ``__reduce__`` that fails on load), or
    None when it rebuilds (or does not pickle with plain pickle: ForkingPickler sends it)."""
    try:
        data = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None
    try:
        pickle.loads(data)
    except Exception as exc:
        return exc
    return None


def _rebuilds(value: Any) -> bool:
    return rebuild_failure(value) is None


_PLAIN = (int, float, complex, str, bytes, bool, type(None), np.generic, RaggedArray)


def plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` surely rebuilds where it is sent (arrays, numbers, strings, and
    lists and tuples of them; torch's tensors): no need to try."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind != "O"
    if isinstance(value, _PLAIN) or type(value).__module__.partition(".")[0] == "torch":
        return True
    if isinstance(value, (list, tuple)) and depth < 4:
        return all(plain(v, depth + 1) for v in value)
    return False


def _culprit(value: Any, fine: Callable[[Any], bool] = _pickles, depth: int = 0) -> Any:
    """The innermost part of ``value`` that is not ``fine`` (does not pickle), looking into
    object arrays (a map wraps what an op returns in one), lists, tuples and dict values."""
    parts: Any = ()
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
        parts = value.flat
    elif isinstance(value, (list, tuple)):
        parts = value
    elif isinstance(value, dict):
        parts = value.values()
    if depth < 4:
        for part in parts:
            if not fine(part):
                return _culprit(part, fine, depth + 1)
    return value


def _type_name(value: Any) -> str:
    cls = type(value)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _unpicklable_part(
    result: Any, fine: Callable[[Any], bool] = _pickles
) -> tuple[int | None, int | None, Any]:
    """``(row, column, value)``: the first value of a task's result that is not ``fine`` (does
    not pickle).

    A result is a list of rows (tuples of column values) or one batch (a tuple of columns);
    ``row`` is None for a batch, ``column`` None when the result has no columns.
    """
    rows = result if isinstance(result, list) else [result]
    for k, row in enumerate(rows):
        values = row if isinstance(row, tuple) else (row,)
        for j, value in enumerate(values):
            if not fine(value):
                row_at = k if isinstance(result, list) else None
                return row_at, (j if isinstance(row, tuple) else None), _culprit(value, fine)
    return None, None, _culprit(result, fine)


def _producer(task: Any, column: str | None) -> str:
    """The op that made ``column``: the last operation of the topmost map that outputs it."""
    for node in reversed(task.nodes()):
        operations = node.functions() if node.stream_stage == "map" else ()
        if operations and column in (node.output_columns or ()):
            return f"{node.op_name}: operation {op_name(operations[-1])}"
    return stage_ops(task)


def unsendable_result(
    exc: Exception, task: Any, epoch: int, item: Any, result: Any, rebuilt: bool = False
) -> BaseException:
    """The error to send back for a task whose result does not pickle (or, ``rebuilt``,
    pickles but cannot be rebuilt from its pickle): ``exc``'s type, naming the op, the column,
    the sample and the type of the value that cannot be sent."""
    row, column_at, value = _unpicklable_part(result, _rebuilds if rebuilt else _pickles)
    columns = list(task.node._columns)
    column = columns[column_at] if column_at is not None and column_at < len(columns) else None
    unit = "batch" if task.node.op_name == "batch" else "sample"
    same_length = isinstance(item, list) and isinstance(result, list) and len(item) == len(result)
    samples = describe_items([item[row]] if same_length and row is not None else item, unit)
    in_column = f" in column {column!r}" if column is not None else ""
    how = (
        "cannot be rebuilt in the parent process (it pickles in its worker process, but cannot "
        "be made again from that pickle)"
        if rebuilt
        else "cannot be sent back from its worker process"
    )
    return with_context(
        exc,
        f"{_producer(task, column)} returned a value that {how} "
        f"(python_multiprocessing=True): a {_type_name(value)!r} object{in_column} "
        f"at {samples} of epoch {epoch}; return NumPy arrays, numbers or strings",
    )


def _unsendable_error(
    exc: Exception, task: Any, epoch: int, item: Any, result: Any, rebuilt: bool = False
) -> BaseException:
    try:
        return unsendable_result(exc, task, epoch, item, result, rebuilt)
    except Exception:  # a result too odd to describe still gets reported
        return with_context(exc, "a result cannot be sent back from a worker process")


def _first_rebuild_failure(result: Any) -> Exception | None:
    """What rebuilding the first value of ``result`` that does not rebuild raises, if any."""
    rows = result if isinstance(result, list) else [result]
    for row in rows:
        for value in row if isinstance(row, tuple) else (row,):
            if not plain(value):
                failure = rebuild_failure(value)
                if failure is not None:
                    return failure
    return None


def main(conn: Connection) -> None:
    """Serve tasks until told to stop or until the parent goes away (EOF on the pipe)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    try:
        count = conn.recv()
        if count is None:  # the pool shut down before it sent the stage
            return
        fds = [recv_handle(conn) for _ in range(count)]
        spec = conn.recv_bytes()
    except (EOFError, OSError):
        return
    try:
        task, node_ids, seed, prefetch_size, profile, settings = loads_attached(spec, fds)
    finally:
        for fd in fds:  # the arrays keep their mappings
            os.close(fd)
    config.apply_run_time_settings(settings)
    ids = {id(n): i for n, i in zip(task.nodes(), node_ids)}
    ctx = ExecContext(seed, prefetch_size, ids, profile=profile)  # profile: time the ops
    slabs: dict[int, mmap.mmap] = {}
    try:
        conn.send(("ready",))
    except (EOFError, OSError):
        return
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
            sent = ("slab", slab_id, layout) if layout is not None else ("pickle", result, nbytes)
            op_times = ctx.op_times.drain() if ctx.op_times is not None else None
            try:
                data = ForkingPickler.dumps(("ok", task_id, seconds, sent, skips, op_times))
            except Exception as exc:  # the result does not pickle: say so instead of dying
                error = _unsendable_error(exc, task, epoch, item, result)
                conn.send(("err", task_id, seconds, *_error_message(error)))
                continue
            failure = None if plain(result) else _first_rebuild_failure(result)
            if failure is not None:  # it pickles, but the parent could not rebuild it
                error = _unsendable_error(failure, task, epoch, item, result, rebuilt=True)
                conn.send(("err", task_id, seconds, *_error_message(error)))
                continue
            conn.send_bytes(data)
