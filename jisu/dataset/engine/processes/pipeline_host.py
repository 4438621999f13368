"""The parent's side of the pipeline process (:mod:`.pipeline_child` has the protocol).

:class:`ChildPipeline` stands where an in-process run's context and output queue stand in
:class:`~jisu.dataset.engine.iterator.DatasetIterator`: ``get`` gives the next row (views of a
shared-memory slab), ``EPOCH_END`` or a failure, and ``shutdown`` ends the child. The training
process runs no pipeline thread: a row costs it one message and a few array views.

The child runs the same pipeline with the same seed, settings, epoch and position as an
in-process run would, so rows, their order and every resume are the same.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import pickle
import threading
import time
from collections import deque
from multiprocessing.reduction import recv_handle, send_handle
from typing import TYPE_CHECKING, Any

from ... import config
from .. import policies
from ..context import Stopped
from ..errors import PipelineError, with_context
from ..interrupts import interrupts_deferred
from ..stage import EPOCH_END
from ..stats import OpTimes
from . import start as process_start
from .shared_arrays import dumps_sharing
from .shm import unpack
from .workers import WorkerDiedError, describe_exit, rebuild_error

if TYPE_CHECKING:
    from ...core.node import Dataset
    from ..context import RunSettings

#: rows the child may have ready ahead of the consumer (each in its own slab)
CREDITS = 4
_ONE_CREDIT = pickle.dumps(("credit", 1, []), pickle.HIGHEST_PROTOCOL)


def _unused_node_id(node: Any) -> int:
    raise AssertionError("op times from a pipeline process are merged, never added to")


class ChildPipeline:
    """A pipeline running in a child process, read row by row.

    Args:
        dataset: the pipeline's root (it and its ops must pickle with cloudpickle).
        seed, settings, epoch, position, num_epochs: what the run starts from, as for an
            in-process run.

    Raises:
        PipelineError: the pipeline cannot run in a child process (names why).
    """

    tuner = None  # AutoTune runs in the child
    max_items = CREDITS

    def __init__(
        self,
        dataset: Dataset,
        seed: int,
        settings: RunSettings,
        epoch: int,
        position: int,
        num_epochs: int,
    ) -> None:
        _check_movable(dataset, settings)
        local = dataclasses.replace(settings, pipeline_process=False)
        modules: set[str] = set()
        spec = (dataset, seed, local, epoch, position, num_epochs, CREDITS, policies.installed())
        try:
            data, shared = dumps_sharing((*spec, config.run_time_settings()), modules)
        except Exception as exc:
            raise PipelineError(
                f"pipeline process: the pipeline cannot be sent to a child process ({exc}); "
                "its sources and ops must pickle with cloudpickle (a generator object or an "
                "open file does not: pass a function that makes it), or run it in this "
                "process with config.set_pipeline_process(False)"
            ) from exc
        self.skipped_by_epoch: dict[int, int] = {}
        self.stats: dict | None = {} if settings.profile else None  # not None: profiling
        self.op_times = None
        self._epoch = epoch
        self._maps: dict[int, mmap.mmap] = {}
        self._freed: deque[int] = deque()  # slabs whose arrays died, for the next credit
        self._early: deque[tuple] = deque()  # rows (ends, errors) read while answering
        self._answers: dict[str, Any] = {}
        self._done = False
        self._closing = False
        self._broken: str | None = None  # why the pipe can no longer be trusted
        self._receiving = threading.Lock()  # one reader of the pipe at a time
        self._answered = threading.Condition()
        self._sending = threading.Lock()
        self._pid = os.getpid()  # the process that may stop the pipeline process
        process_start.preload(modules)
        context = process_start.mp_context()
        self._conn, child_end = context.Pipe(duplex=True)
        from .pipeline_child import main

        # not a daemon: the pipeline may start worker processes of its own; it stops when
        # told, or when this process is gone (its pipe closes), and at exit (the iterator's)
        self._process = process_start.process(main, (child_end,), daemon=False)
        try:
            process_start.start(self._process)
        except BaseException:
            self._conn.close()
            for slab in shared:
                slab.close()
            raise
        finally:
            child_end.close()
        self._send_spec(data, shared)

    def _send_spec(self, data: bytes, shared: list) -> None:
        try:
            self._conn.send(len(shared))
            for slab in shared:
                send_handle(self._conn, slab.fd, self._process.pid or 0)
            self._conn.send_bytes(data)
        except OSError:
            pass  # the child is gone: the first get() says how
        finally:
            for slab in shared:  # the child maps what it needs; our copies go
                slab.close()

    def _send(self, data: bytes) -> None:
        with self._sending:
            self._conn.send_bytes(data)

    # ------------------------------------------------------------------ rows
    def qsize(self) -> int:
        """Rows ready here: read ahead while answering, or waiting in the pipe (0 or 1)."""
        try:
            return len(self._early) + int(self._conn.poll(0))
        except (OSError, ValueError):
            return 0

    def get(self, _out: Any = None) -> Any:
        """The next row (a tuple of arrays), ``EPOCH_END``, or raises the pipeline's error."""
        with self._receiving:
            while True:
                message = self._early.popleft() if self._early else self._receive()
                kind = message[0]
                if kind == "row":
                    self.skipped_by_epoch[self._epoch] = message[1]
                    self._grant()
                    slab_id, payload = message[2], message[3]
                    if slab_id is None:
                        return payload
                    return unpack(payload, self._maps[slab_id], self._releaser(slab_id))
                if kind == "end":
                    self.skipped_by_epoch[self._epoch] = message[1]
                    self._epoch += 1
                    return EPOCH_END
                self._on_message(message)

    def _on_message(self, message: tuple) -> None:
        kind = message[0]
        if kind == "slab":
            try:
                fd = recv_handle(self._conn)
            except (EOFError, OSError, RuntimeError):
                raise self._died() from None
            try:
                self._maps[message[1]] = mmap.mmap(fd, message[2])
            except OSError as exc:  # ENOMEM: rows that need this slab cannot be read here
                self._broken = "a shared-memory buffer could not be mapped; create a new iterator"
                raise with_context(
                    exc,
                    f"pipeline process: cannot map its shared-memory buffer of "
                    f"{message[2] / (1 << 20):.1f} MiB in this process; use smaller rows or "
                    "run the pipeline here (config.set_pipeline_process(False))",
                ) from exc
            finally:
                os.close(fd)
        elif kind == "drop":
            mapping = self._maps.pop(message[1], None)
            if mapping is not None:
                try:
                    mapping.close()
                except BufferError:
                    pass  # arrays still point into it: it goes with them
        elif kind == "answer":
            with self._answered:
                self._answers[message[1]] = message[2]
                self._answered.notify_all()
        elif kind == "done":
            self._done = True
        elif kind == "err":
            raise rebuild_error(message)

    def _releaser(self, slab_id: int):
        freed = self._freed

        def released() -> None:  # any thread, or the garbage collector: no pipe write here
            freed.append(slab_id)

        return released

    def _grant(self) -> None:
        if not self._freed:
            self._send(_ONE_CREDIT)
            return
        freed = []
        while self._freed:
            freed.append(self._freed.popleft())
        self._send(pickle.dumps(("credit", 1, freed), pickle.HIGHEST_PROTOCOL))

    def _receive(self) -> tuple:
        """The child's next message; a dead child is an error, never a hang (its end of the
        pipe closes with it: the read ends)."""
        if self._broken is not None:
            raise PipelineError(f"pipeline process: {self._broken}")
        if self._done:
            raise PipelineError("pipeline process: every epoch has been read")
        try:
            data = self._conn.recv_bytes()
        except (EOFError, OSError):
            raise self._died() from None
        except BaseException:  # Ctrl-C in the middle of a message: the pipe is out of step
            self._broken = "a read from it was interrupted; create a new iterator"
            raise
        try:
            return pickle.loads(data)
        except Exception as exc:  # the pipe is in step: only this message is lost
            raise with_context(
                exc,
                "pipeline process: a row (or message) it sent cannot be rebuilt in this "
                "process; return NumPy arrays, numbers or strings",
            ) from exc

    def _died(self) -> BaseException:
        if self._closing:  # closed from another thread while this one waited
            return Stopped("the iterator was closed")
        self._broken = "it has ended"
        self._process.join(timeout=1.0)
        return WorkerDiedError(
            f"pipeline process (pid {self._process.pid}) "
            f"{describe_exit(self._process.exitcode)} while the pipeline was running. If "
            "the OOM killer ended it, use fewer num_parallel_workers or smaller batches."
        )

    # ------------------------------------------------------------------ questions
    def _ask(self, kind: str) -> Any:
        """Ask the child (``"profile"``, ``"pids"``). A thread waiting for a row meanwhile
        reads the answer for this one; otherwise this one reads, keeping the rows."""
        if self._broken is not None or self._closing:
            raise PipelineError(f"pipeline process: cannot ask {kind!r}: it is closed")
        with self._answered:
            self._answers.pop(kind, None)
        self._send(pickle.dumps(("ask", kind)))
        while True:
            with self._answered:
                if kind in self._answers:
                    break
            if not self._receiving.acquire(timeout=0.05):  # get() reads: it stores answers
                with self._answered:
                    self._answered.wait_for(lambda: kind in self._answers, timeout=0.05)
                continue
            try:  # nobody reads the pipe: read it here, keeping the rows for get()
                while kind not in self._answers:
                    message = self._receive()
                    if message[0] in ("row", "end", "err", "done"):
                        self._early.append(message)
                    else:
                        self._on_message(message)
            finally:
                self._receiving.release()
        status, value = self._answers.pop(kind)
        if status != "ok":
            raise PipelineError(f"pipeline process: cannot answer {kind!r}: {value}")
        return value

    def worker_pids(self) -> list[int]:
        """The pipeline process and its worker processes."""
        try:
            return list(self._ask("pids"))
        except (PipelineError, OSError):
            return []

    def profile_parts(self) -> tuple[list, OpTimes | None, dict]:
        """The child's stage summaries, op times and requests to object storage (what the
        profile is computed from)."""
        stages, figures, storage = self._ask("profile")
        if figures is None:
            return stages, None, storage
        times = OpTimes(_unused_node_id)  # keyed by structural ids: the same here
        times.merge(figures)
        return stages, times, storage

    # ------------------------------------------------------------------ end
    def shutdown(self, timeout: float = 5.0) -> None:
        """Tell the child to stop and wait for it (killed after ``timeout``); the pipe is
        drained meanwhile, since the child may be blocked sending a row. Nothing in a process
        forked from this one: the pipeline process is this one's, not the fork's, to stop."""
        if os.getpid() != self._pid:
            return
        with interrupts_deferred():  # a Ctrl-C part way would leave the child running
            self._shutdown(timeout)

    def _shutdown(self, timeout: float) -> None:
        self._closing = True
        try:
            self._send(pickle.dumps(None))
        except OSError:
            pass
        deadline = time.monotonic() + timeout
        while self._process.is_alive() and time.monotonic() < deadline:
            try:
                if self._conn.poll(0.05):
                    self._conn.recv_bytes()
            except (EOFError, OSError):
                break  # the child has closed its end: it is exiting
            except BaseException:  # a slab's descriptor or anything else half-read: stop
                break
        self._process.join(max(0.0, deadline - time.monotonic()))
        if self._process.is_alive():
            self._process.kill()
            self._process.join(1.0)
        self._conn.close()
        for mapping in self._maps.values():
            try:
                mapping.close()
            except BufferError:
                pass
        self._maps.clear()


def _check_movable(dataset: Dataset, settings: RunSettings) -> None:
    """Refuse what cannot run in a child process, naming why."""
    if settings.executor is not None:
        raise PipelineError(
            "pipeline process: a pipeline with a Ray executor (config.set_executor) runs "
            "in this process; turn one of them off (config.set_pipeline_process(False))"
        )
    nodes, seen = [dataset], set()
    while nodes:
        node = nodes.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.op_name == "sync_wait":
            raise PipelineError(
                "pipeline process: a pipeline with sync_wait waits for sync_update calls in "
                "this process, which its copy in a child process would never get; run it "
                "here (config.set_pipeline_process(False))"
            )
        nodes.extend(node.children)
