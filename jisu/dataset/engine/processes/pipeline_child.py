"""The pipeline process: a whole pipeline run in a child, its rows handed over shared memory.

``config.set_pipeline_process(True)`` moves an iterator's pipeline (its stages, threads, worker
pools, the driver) out of the training process, which then only unpacks views of shared
memory: no pipeline thread competes with the training step for the GIL (SPDL's "MTP").
:mod:`.pipeline_host` is the parent's side; this module is the child's main.

Protocol over one duplex pipe (parent -> child):
    the number of shared arrays, their file descriptors, then the spec bytes
    (``(dataset, seed, settings, epoch, position, num_epochs, credits, the installed
    policies, run-time settings)``
    by :func:`.shared_arrays.dumps_sharing`), once;
    ``("credit", n, freed slab ids)``: ``n`` more rows may be sent, those slabs are free again;
    ``("ask", kind)``: ``"profile"`` or ``"pids"``, answered at once (between rows);
    ``None``: stop.
child -> parent:
    ``("slab", slab_id, size)`` and the slab's descriptor: map it;
    ``("drop", slab_id)``: a slab the child retired (close it once its arrays are gone);
    ``("row", epoch skips, slab_id, layout)`` or ``("row", epoch skips, None, row)``: a row
    in a slab, or pickled (small rows, or every slab still held by the parent);
    ``("end", epoch skips)``: the epoch's end; ``("done",)``: every epoch is done;
    ``("err", None, None, payload, text, traceback)``: the pipeline failed (as a worker's);
    ``("answer", kind, value)``.

Every row costs one credit; the parent grants one as it takes each row, so the child runs at
most ``credits`` rows ahead of the consumer, in at most ``credits + SPARE_SLABS`` slabs.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import send_handle
from typing import Any

import cloudpickle

from ... import config
from ...core.request_counts import REQUESTS
from .. import policies
from ..errors import with_context
from ..row_queue import Rows
from ..stage import EPOCH_END
from .shared_arrays import loads_attached
from .shm import Slab, pack, shared_memory_available
from .worker import _error_message, plain, rebuild_failure

#: rows smaller than this travel pickled in their message (a slab costs more than the copy)
PICKLE_BELOW_BYTES = 64 << 10
SPARE_SLABS = 4  # slabs beyond the credits: rows the consumer still holds
_MIB = 1 << 20


#: what says the parent is gone (its end of the pipe closed)
_PARENT_GONE = (EOFError, BrokenPipeError, ConnectionResetError)


def _dumps(message: Any) -> bytes:
    """Plain pickle (fast), or cloudpickle for what only it can pickle (a class defined in
    a script, in an object column); the parent reads both with ``pickle.loads``."""
    try:
        return pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return cloudpickle.dumps(message, pickle.HIGHEST_PROTOCOL)


class _Link:
    """The child's end of the pipe: sends (from two threads), credits and freed slabs."""

    def __init__(self, conn: Connection, credits: int, answer: Callable[[str], Any]) -> None:
        self.conn = conn
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._answer = answer
        self.credits = credits
        self.freed: deque[int] = deque()
        self.stopped = False
        self.failure: BaseException | None = None  # why listen() ended, when it failed

    def send(self, message: Any, fd: int | None = None) -> None:
        self.send_bytes(_dumps(message), fd)

    def send_bytes(self, data: bytes, fd: int | None = None) -> None:
        with self._send_lock:
            self.conn.send_bytes(data)
            if fd is not None:
                send_handle(self.conn, fd, 0)

    def listen(self) -> None:
        """Reader thread: credits, freed slabs and questions from the parent (answered at
        once, between rows), until told to stop or until the parent is gone."""
        try:
            while True:
                message = pickle.loads(self.conn.recv_bytes())
                if message is None:
                    break
                if message[0] == "ask":
                    try:
                        reply = ("ok", self._answer(message[1]))
                    except Exception as exc:  # the question fails, not the pipeline
                        reply = ("error", f"{type(exc).__name__}: {exc}")
                    self.send(("answer", message[1], reply))
                    continue
                with self._cond:
                    self.credits += message[1]
                    self.freed.extend(message[2])
                    self._cond.notify_all()
        except (EOFError, OSError):
            pass  # the parent is gone
        except BaseException as exc:  # said to the parent as the pipeline's error (see main)
            self.failure = exc
        finally:  # told to stop, or the parent is gone
            with self._cond:
                self.stopped = True
                self._cond.notify_all()

    def wait_credit(self) -> bool:
        """Block until a row may be sent; False: stop."""
        with self._cond:
            while not self.stopped and self.credits <= 0:
                self._cond.wait()
            if self.stopped:
                return False
            self.credits -= 1
            return True

    def take_freed(self) -> list[int]:
        with self._cond:
            freed = list(self.freed)
            self.freed.clear()
        return freed


class _Slabs:
    """The child's slabs: made here, mapped by the parent, reused once it frees them."""

    def __init__(self, link: _Link, limit: int, available: Callable[[], int] | None = None) -> None:
        self.link = link
        self.limit = limit
        self._available = available
        self.size = 0
        self._slabs: dict[int, Slab] = {}
        self._free: list[int] = []
        self._next_id = 0

    def place(self, row: tuple) -> tuple[int | None, Any]:
        """``(slab_id, layout)`` for a row packed in a slab, or ``(None, row)`` to pickle."""
        for slab_id in self.link.take_freed():
            if slab_id in self._slabs:
                self._free.append(slab_id)
        _, nbytes = pack(row, None)
        if nbytes < PICKLE_BELOW_BYTES:
            return None, row
        if nbytes > self.size:
            self._check_budget(max(_MIB, -(-int(nbytes * 1.25) // _MIB) * _MIB))
        while self._free:
            slab_id = self._free.pop()
            if self._slabs[slab_id].size == self.size:
                return slab_id, pack(row, self._slabs[slab_id].map)[0]
            self._retire(slab_id)
        if len(self._slabs) >= self.limit:
            return None, row  # the parent holds every slab: slower, never stuck
        try:
            slab = Slab(self._next_id, self.size)
        except OSError as exc:  # ENOMEM, ENOSPC: say what it was for
            raise with_context(
                exc,
                f"pipeline process: cannot make a shared-memory buffer of "
                f"{self.size / _MIB:.1f} MiB for a row ({len(self._slabs)} made so far); use "
                "smaller rows or run the pipeline in this process "
                "(config.set_pipeline_process(False))",
            ) from exc
        self._next_id += 1
        self._slabs[slab.id] = slab
        self.link.send(("slab", slab.id, slab.size), slab.fd)
        return slab.id, pack(row, slab.map)[0]

    def _check_budget(self, size: int) -> None:
        """Make slabs of ``size`` bytes from now on, if ``limit`` of them fit in the shared
        memory available (what a worker-process pool checks, :class:`.slab_pool.SlabPool`):
        a clear error up front, not minutes of growing memory ending in ``ENOMEM``.

        Raises:
            MemoryError: they do not fit.
        """
        need = self.limit * size
        available = (self._available or shared_memory_available)() + sum(
            s.size for s in self._slabs.values()
        )
        if need > available:
            raise MemoryError(
                f"pipeline process: rows of {size / _MIB:.1f} MiB need {need / _MIB:.0f} MiB "
                f"of shared memory ({self.limit} buffers) but only {available / _MIB:.0f} MiB "
                "is available. Use a smaller batch or smaller rows, or run the pipeline in "
                "this process (config.set_pipeline_process(False))."
            )
        self.size = size

    def _retire(self, slab_id: int) -> None:
        self._slabs.pop(slab_id).close()
        self.link.send(("drop", slab_id))

    def close(self) -> None:
        for slab in self._slabs.values():
            slab.close()
        self._slabs.clear()


def _answers(ctx: Any) -> Callable[[str], Any]:
    """What the parent may ask the running pipeline: its profile parts, its processes."""

    def answer(kind: str) -> Any:
        if kind == "profile":
            stats = ctx.stats or {}
            now = time.perf_counter()
            times = ctx.op_times
            figures = {k: tuple(v) for k, v in list(times.totals.items())} if times else None
            stages = [stage.summary(now) for stage in list(stats.values())]
            return stages, figures, REQUESTS.snapshot()  # the child's: all its pipeline's
        return [os.getpid(), *ctx.worker_pids()]

    return answer


def _start(conn: Connection) -> tuple | None:
    """Receive the spec and start the run: ``(dataset, ctx, out, epoch, position,
    num_epochs, credits)``, or
    None when the parent went away or the start failed (the error was sent)."""
    from multiprocessing.reduction import recv_handle

    from ..run import start_run

    try:
        count = conn.recv()
        fds = [recv_handle(conn) for _ in range(count)]
        spec = conn.recv_bytes()
    except (EOFError, OSError):
        return None
    try:
        try:
            dataset, seed, settings, epoch, position, num_epochs, credits, installed, run_time = (
                loads_attached(spec, fds)
            )
        finally:
            for fd in fds:
                os.close(fd)
        config.apply_run_time_settings(run_time)
        tuner, analysis = installed  # the parent's AutoTune (the forkserver defers jisu)
        if tuner is not None and analysis is not None:
            policies.install(tuner, analysis)
        ctx, out = start_run(dataset, seed, settings, epoch, position, num_epochs)
    except Exception as exc:  # said as the pipeline's error, not as a dead process
        with contextlib.suppress(OSError):
            conn.send_bytes(_dumps(("err", None, None, *_error_message(exc))))
        return None
    return dataset, ctx, out, epoch, position, num_epochs, credits


def main(conn: Connection) -> None:
    """Run the pipeline the parent sends, row by row into slabs, until told to stop."""
    from ..run import Failure

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    started = _start(conn)
    if started is None:
        return
    dataset, ctx, out, epoch, position, num_epochs, credits = started
    link = _Link(conn, credits, _answers(ctx))
    threading.Thread(target=link.listen, name="jisu-pipeline-link", daemon=True).start()
    slabs = _Slabs(link, credits + SPARE_SLABS)
    rows = Rows()  # a chunk's rows, sent one by one
    columns, sent = list(getattr(dataset, "_columns", None) or ()), position  # rows of epoch
    try:
        while not link.stopped:
            item = _next(rows, out, link)
            if item is None:
                break
            skips = ctx.skipped_by_epoch.get(epoch, 0)
            if item is EPOCH_END:
                if ctx.tuner is not None:
                    ctx.tuner.finish()
                link.send(("end", skips))
                epoch, sent = epoch + 1, 0
                if 0 < num_epochs <= epoch:
                    link.send(("done",))
                    break
                continue
            if isinstance(item, Failure):
                link.send(("err", None, None, *_error_message(item.exc)))
                break
            if not link.wait_credit():
                break
            try:
                _check_rebuilds(item, columns, sent, epoch)
                slab_id, payload = slabs.place(item)
                message = _dumps(("row", skips, slab_id, payload))
            except _PARENT_GONE:
                raise
            except Exception as exc:  # no shared memory left, a row that does not pickle
                link.send(("err", None, None, *_error_message(exc)))
                break
            link.send_bytes(message)
            sent += 1
        while link.wait_credit():  # done or failed: answer questions until told to stop
            pass
        if link.failure is not None:  # the reader thread failed: the parent must hear it
            error = with_context(link.failure, "pipeline process: its reader thread failed")
            link.send(("err", None, None, *_error_message(error)))
    except _PARENT_GONE:
        pass
    finally:
        ctx.shutdown(timeout=2.0)
        slabs.close()


def _check_rebuilds(row: tuple, columns: list[str], index: int, epoch: int) -> None:
    """Raise the error the parent would get rebuilding ``row`` (a value that pickles, but
    whose class cannot be made from its pickle), naming the column and the row.

    Raises:
        Exception: the rebuild failure's own type, in context (it is the ``__cause__``).
    """
    if plain(row):
        return
    for j, value in enumerate(row):
        failure = None if plain(value) else rebuild_failure(value)
        if failure is not None:
            column = f"column {columns[j]!r}" if j < len(columns) else f"column {j}"
            raise with_context(
                failure,
                f"pipeline process: {column} of row {index} of epoch {epoch} holds a "
                f"{type(value).__qualname__!r} object that pickles but cannot be rebuilt in "
                "the parent process; return NumPy arrays, numbers or strings",
            ) from failure


def _next(rows: Rows, out: Any, link: _Link) -> Any:
    """The run's next row (or end, or failure), or None once the parent said stop."""
    import queue

    def get() -> Any:
        while not link.stopped:
            try:
                return out.get(timeout=0.05)
            except queue.Empty:
                continue
        return None

    return rows.next(get)
