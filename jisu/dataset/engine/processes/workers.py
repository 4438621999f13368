"""The worker processes of one :class:`.pool.ProcessPool`: a record per worker,
starting, finding and stopping them, and the errors they report."""

from __future__ import annotations

import os
import signal
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.reduction import send_handle
from typing import Any

import cloudpickle

from ..errors import PipelineError
from ..worker_pool import TaskFuture
from . import start as process_start
from . import worker as process_worker
from .shm import Slab


class WorkerDiedError(PipelineError):
    """A worker process ended while it had work (killed by a signal, the OOM killer, ...)."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process, as text."""

    def __str__(self) -> str:
        return "\n\nTraceback in the worker process:\n" + str(self.args[0])


def describe_exit(code: int | None) -> str:
    """How a process ended, from its exit code."""
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def rebuild_error(message: tuple) -> BaseException:
    """The exception of an ``("err", ...)`` message, its cause the worker's traceback."""
    payload, text, remote_traceback = message[3:]
    exc: BaseException
    try:
        exc = cloudpickle.loads(payload) if payload is not None else PipelineError(text)
    except Exception:
        exc = PipelineError(text)
    exc.__cause__ = RemoteTraceback(remote_traceback)
    return exc


@dataclass(eq=False)
class Task:
    """One submitted item, from ``submit`` until its result is in."""

    future: TaskFuture
    task_id: int
    epoch: int
    item: Any
    resent: bool = False  # it ran on a worker that died and waits to run again
    slab_id: int | None = None  # the slab its result is to come back in


@dataclass(eq=False)
class Worker:
    """One worker process, and what its pool knows about it."""

    index: int  # its slot in the pool (its name ends with it)
    process: Any
    conn: Any  # the pool's end of its duplex pipe
    forkserver: int | None  # the pid of the forkserver that forked it
    ready: bool = False  # it has loaded the stage
    task: Task | None = None  # sent to it, result not in yet
    known: set[int] = field(default_factory=set)  # slabs it has mapped
    drops: set[int] = field(default_factory=set)  # slabs it is to unmap before its next task
    stopping: bool = False  # surplus (resize): it exits once its task is done
    stuck: bool = False  # its task was reported stuck: shutdown kills it at once

    def tell_to_stop(self) -> None:
        """Ask it to exit (it does once it has read everything sent before)."""
        try:
            self.conn.send(None)
        except OSError:
            pass  # already gone: the pool's collector cleans up

    def send_task(self, task: Task, slab: Slab | None) -> None:
        """Send ``task`` (and first the slabs to drop, and ``slab`` if it has not mapped it).

        Raises:
            OSError: the worker is gone.
            Exception: the item does not pickle.
        """
        conn = self.conn
        for dropped in self.drops:
            conn.send(("drop", dropped))
            self.known.discard(dropped)
        self.drops.clear()
        if slab is not None and slab.id not in self.known:
            conn.send(("slab", slab.id, slab.size))
            send_handle(conn, slab.fd, self.process.pid)
            self.known.add(slab.id)
        conn.send(("task", task.task_id, task.epoch, task.item, task.slab_id))

    def stop_orphan(self) -> str:
        """The forkserver died, so this worker (alive: it holds its pipe) looked dead: stop it,
        and reap the dead forkserver (multiprocessing starts a new one for later workers).
        Returns what happened, for the error message."""
        try:
            os.kill(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process_start.reap_forkserver(self.forkserver)
        return (
            "was stopped: the forkserver process that starts jisu's workers ended (killed, or "
            "out of memory)"
        )


class Workers:
    """The worker processes of one stage, by slot, and which of them are idle.

    Every worker gets the stage once, as ``spec`` bytes and the descriptors of the ``shared``
    arrays (see :mod:`.worker`). Methods are called with the pool's lock held, except
    :meth:`start_process`, which may wait for the forkserver to start.
    """

    def __init__(self, name: str, count: int, spec: bytes, shared: list[Slab]) -> None:
        self.name = name
        self._spec = spec
        self._shared = shared
        self.slots: list[Worker | None] = [None] * count  # None: a free slot
        self.idle: deque[Worker] = deque()

    def live(self) -> list[Worker]:
        return [w for w in self.slots if w is not None]

    def is_current(self, worker: Worker) -> bool:
        """Whether ``worker`` is still in its slot (not forgotten, nor replaced)."""
        return self.slots[worker.index] is worker

    def start_process(self, i: int) -> Worker:
        """Start the process of slot ``i`` (not yet in the slot, nor sent the stage)."""
        context = process_start.mp_context()
        parent, child = context.Pipe(duplex=True)
        process = process_start.process(
            process_worker.main, (child,), name=f"jisu-{self.name}-{i}", daemon=True
        )
        try:
            forkserver = process_start.start(process)
        finally:
            child.close()
        return Worker(i, process, parent, forkserver)

    def join(self, worker: Worker) -> None:
        """Put ``worker`` in its slot, send it the stage, and count it idle (tasks may be sent
        at once: it runs them once it has loaded the stage)."""
        self.slots[worker.index] = worker
        try:
            worker.conn.send(len(self._shared))
            for slab in self._shared:
                send_handle(worker.conn, slab.fd, worker.process.pid)
            worker.conn.send_bytes(self._spec)
        except OSError:
            return  # the worker is gone already; its sentinel will say how
        self.idle.append(worker)

    def add(self, i: int) -> None:
        """Start a worker in slot ``i``."""
        self.join(self.start_process(i))

    def free_slot(self) -> int:
        """The first free slot (a new one if none is free)."""
        for i, worker in enumerate(self.slots):
            if worker is None:
                return i
        self.slots.append(None)
        return len(self.slots) - 1

    def forget(self, worker: Worker) -> None:
        """Free the slot of ``worker``, which ended."""
        if worker in self.idle:
            self.idle.remove(worker)
        worker.conn.close()
        self.slots[worker.index] = None

    def running(self, future: TaskFuture) -> Worker | None:
        """The worker that was sent the task of ``future``."""
        for worker in self.live():
            if worker.task is not None and worker.task.future is future:
                return worker
        return None

    def slab_retired(self, slab_id: int) -> None:
        """Workers that mapped a retired slab drop it before their next task."""
        for worker in self.live():
            if slab_id in worker.known:
                worker.drops.add(slab_id)

    @staticmethod
    def stop(workers: list[Worker], timeout: float) -> None:
        """Wait up to ``timeout`` s for each of ``workers`` to exit, then kill it; those with a
        stuck task at once (called without the lock: this waits)."""
        for worker in workers:  # a stuck task never ends: waiting for its worker is pointless
            if worker.stuck:
                worker.process.kill()
        for worker in workers:
            worker.process.join(timeout)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(1.0)

    def close_shared(self) -> None:
        """Close the shared arrays (each worker has its own mapping by now)."""
        for slab in self._shared:
            slab.close()
        self._shared = []
