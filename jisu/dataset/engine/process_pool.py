"""Worker processes for stages whose Python code holds the GIL (``python_multiprocessing``).

Start method: **forkserver**. ``fork`` would copy this process with its threads (jisu's own
stage threads, torch's intra-op pool) mid-flight, and a lock held by one of them at that moment
stays locked forever in the child; ``spawn`` is safe but re-imports torch and jisu in every
worker (seconds). The forkserver is a clean single-threaded process that has imported jisu's
worker module once; each worker is forked from it in milliseconds. Its preload list is set to
that module only (not ``__main__``), so scripts without an ``if __name__ == "__main__"`` guard
work; the stage's ops and source travel to the workers once, with cloudpickle (lambdas and
local functions included).

Workers are started once per iterator and stage and kept across epochs. Each worker runs one
task at a time; results come back through shared-memory slabs (:mod:`.shm`) as zero-copy
arrays, or pickled when no slab is free or the result outgrew the slabs (which then grow).
A worker that dies (a signal, the OOM killer) is noticed at once through its process sentinel:
its task fails with :class:`WorkerDiedError`, or, with ``config.set_worker_restart(True)``, the
worker is replaced and its task re-run (the same task gives the same output).

Workers are children of the forkserver, which reaps them as soon as they end (it waits on
SIGCHLD), so a dead worker never lingers as a zombie. The forkserver itself is a child of this
process: if it dies (the OOM killer, a stray ``kill``), its workers lose their parent and the
pool stops them and reaps the dead forkserver (starting a new one for later workers), instead of
mistaking the live workers for dead ones and leaving a zombie behind.

A task that :mod:`.watchdog` reported as stuck (:meth:`ProcessPool.mark_stuck`) does not hold up
shutdown: its worker is killed at once.
"""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from concurrent.futures import Future
from multiprocessing import forkserver, spawn
from multiprocessing.connection import wait
from multiprocessing.reduction import send_handle
from typing import TYPE_CHECKING, Any

import cloudpickle

from . import process_worker
from .errors import PipelineError
from .shared_arrays import dumps_sharing
from .shm import Slab, shared_memory_available, unpack

if TYPE_CHECKING:
    from .context import ExecContext
    from .tasks import StageTask

logger = logging.getLogger("jisu.dataset")

_MIB = 1 << 20
_MAX_RESTARTS = 3
_FORKSERVER_LOST = 255  # the exit code multiprocessing gives a worker whose forkserver died
_mp_context: Any = None


def mp_context() -> Any:
    """The forkserver context, its preload set to jisu's worker module (see module doc)."""
    global _mp_context
    if _mp_context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([process_worker.__name__])
        _mp_context = context
    return _mp_context


_start_lock = threading.Lock()


def _start_without_main(process: Any) -> None:
    """Start ``process`` without making the child re-run the ``__main__`` script.

    multiprocessing prepares every forkserver/spawn child by re-importing the parent's main
    script, which runs its module-level code again (and fails outright in scripts without an
    ``if __name__ == "__main__"`` guard). Workers need nothing from it: the stage travels with
    cloudpickle, which ships ``__main__`` functions by value. So the preparation data is passed
    without the main module, for the duration of this start.
    """
    original = spawn.get_preparation_data

    def preparation_data(name: str) -> dict:
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    with _start_lock:
        spawn.get_preparation_data = preparation_data
        try:
            process.start()
        finally:
            spawn.get_preparation_data = original


def _forkserver_pid() -> int | None:
    """The pid of multiprocessing's forkserver (private to it: there is no public way)."""
    return getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)


def _reap_forkserver(pid: int | None) -> None:
    """Let multiprocessing reap the dead forkserver ``pid`` (and start a new one for later
    workers); nothing to wait for if it has done so already (another worker told it).

    Its pipes close a moment before it becomes a zombie that ``waitpid`` can take, and
    multiprocessing looks only once (``WNOHANG``): so first wait, without reaping it, until it
    is one.
    """
    if pid is not None and pid == _forkserver_pid() and hasattr(os, "waitid"):
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    break
            except ChildProcessError:
                break
            time.sleep(0.001)
    forkserver.ensure_running()


class WorkerDiedError(PipelineError):
    """A worker process ended while it had work (killed by a signal, the OOM killer, ...)."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process, as text."""

    def __str__(self) -> str:
        return "\n\nTraceback in the worker process:\n" + str(self.args[0])


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


class ProcessPool:
    """``workers`` processes running one stage's task; the same interface as ``ThreadPool``.

    Args:
        name: the stage, for messages.
        workers: process count.
        ctx: the iterator's context (seed and structural node ids go to the workers).
        task: the stage's task; it and the nodes it uses must pickle with cloudpickle.
    """

    def __init__(self, name: str, workers: int, ctx: ExecContext, task: StageTask) -> None:
        self.name = name
        self.workers = workers
        self.busy_s = 0.0
        self._ctx = ctx
        self._stage_node = task.node  # the epoch of a task is this node's (for skip counts)
        picklable, ids = task.for_process(ctx)
        try:
            # large arrays (a NumPy source's data) go to shared memory, not into every worker
            self._spec, self._shared = dumps_sharing((picklable, ids, ctx.seed, ctx.prefetch_size))
        except OSError:  # out of shared memory: dumps_sharing's message says so
            raise
        except Exception as exc:
            raise TypeError(
                f"{name}: python_multiprocessing=True sends the stage's ops and source to "
                f"worker processes, but they cannot be pickled: {type(exc).__name__}: {exc}"
            ) from exc
        self._restart = ctx.settings.worker_restart
        self._lock = threading.RLock()  # RLock: slab release may run from GC inside the lock
        self._closed = False
        self._broken: BaseException | None = None
        self._task_ids = itertools.count()
        self._waiting: deque = deque()  # (future, task_id, epoch, item, resent) not yet sent
        self._busy: dict[int, tuple] = {}  # worker -> (future, task_id, epoch, item, slab_id)
        self._idle: deque[int] = deque()
        self._procs: list[Any] = [None] * workers
        self._conns: list[Any] = [None] * workers
        self._ready: list[bool] = [False] * workers  # the worker has loaded the stage
        self._known: list[set[int]] = [set() for _ in range(workers)]
        self._drops: list[set[int]] = [set() for _ in range(workers)]
        self._restarts = 0
        self._stopping: set[int] = set()  # surplus workers told to exit (resize)
        self._stuck: set[int] = set()  # workers whose task was reported stuck
        self._forkservers: dict[int, int | None] = {}  # worker -> the forkserver that made it
        self._slab_size = 0
        self._max_slabs = 2 * workers + 4
        self._slabs: dict[int, Slab] = {}
        self._free: list[int] = []
        self._slab_ids = itertools.count()
        for i in range(workers):
            self._start_worker(i)
        self._collector = threading.Thread(
            target=self._collect, name=f"jisu-{name}-collector", daemon=True
        )
        self._collector.start()

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p is not None]

    # ------------------------------------------------------------------ workers
    def _start_worker(self, i: int) -> None:
        context = mp_context()
        parent, child = context.Pipe(duplex=True)
        process = context.Process(
            target=process_worker.main, args=(child,), name=f"jisu-{self.name}-{i}", daemon=True
        )
        _start_without_main(process)
        self._forkservers[i] = _forkserver_pid()
        child.close()
        parent.send(len(self._shared))
        for slab in self._shared:
            send_handle(parent, slab.fd, process.pid)
        parent.send_bytes(self._spec)
        self._procs[i], self._conns[i] = process, parent
        self._known[i], self._drops[i] = set(), set()
        self._ready[i] = False
        self._stuck.discard(i)
        self._idle.append(i)  # tasks may be sent at once: the worker runs them when ready

    #: how long a new worker may take before it serves tasks (AutoTune judges a resize after)
    start_seconds = 1.0

    def resize(self, workers: int) -> None:
        """Run ``workers`` processes from now on (AutoTune): new ones start at once and get
        tasks when ready; a surplus one exits after the task it is running."""
        workers = max(1, workers)
        with self._lock:
            if self._closed or self._broken is not None:
                return
            active = [
                i for i, p in enumerate(self._procs) if p is not None and i not in self._stopping
            ]
            for _ in range(workers - len(active)):
                free = [i for i, p in enumerate(self._procs) if p is None]
                i = free[0] if free else len(self._procs)
                if i == len(self._procs):
                    self._procs.append(None)
                    self._conns.append(None)
                    self._ready.append(False)
                    self._known.append(set())
                    self._drops.append(set())
                self._start_worker(i)
            for i in sorted(active, reverse=True)[: max(0, len(active) - workers)]:
                self._stopping.add(i)
                if i in self._idle:  # busy ones stop when their result is in
                    self._idle.remove(i)
                    self._tell_to_stop(i)
            self.workers = workers
            self._max_slabs = 2 * workers + 4
            self._dispatch()

    def _tell_to_stop(self, i: int) -> None:
        try:
            self._conns[i].send(None)
        except OSError:
            pass  # already gone: the collector cleans up

    def _stopped(self, i: int) -> None:
        """A surplus worker exited as told: forget it (called with the lock held)."""
        self._stopping.discard(i)
        process, conn = self._procs[i], self._conns[i]
        self._procs[i] = self._conns[i] = None
        conn.close()
        process.join(timeout=1.0)

    def submit(self, epoch: int, item: Any) -> Future:
        future: Future = Future()
        future.running = None  # not started (see watchdog); shadows Future.running()
        with self._lock:
            if self._broken is not None:
                future.set_exception(self._broken)
                return future
            if self._closed:
                future.cancel()
                return future
            self._waiting.append((future, next(self._task_ids), epoch, item, False))
            self._dispatch()
        return future

    def _dispatch(self) -> None:
        """Send waiting tasks to idle workers (called with the lock held)."""
        while self._idle and self._waiting and self._broken is None and not self._closed:
            i = self._idle.popleft()
            future, task_id, epoch, item, resent = self._waiting.popleft()
            if not resent and not future.set_running_or_notify_cancel():
                self._idle.appendleft(i)
                continue
            try:
                slab_id = self._take_slab()
            except (OSError, MemoryError) as exc:
                self._idle.appendleft(i)
                self._fail_all(exc, future)
                return
            self._busy[i] = (future, task_id, epoch, item, slab_id)
            # The watchdog's clock starts when the worker begins the task: now if it is ready,
            # else when it says it is (see _on_message), so that a slow start never counts.
            if self._ready[i]:
                future.running = (time.perf_counter(), self._procs[i], epoch, item)
            else:  # the watchdog tells a worker that is slow to load apart from a stuck task
                future.waiting_for_worker = (time.perf_counter(), self._procs[i])
            try:
                self._send_task(i, task_id, epoch, item, slab_id)
            except OSError:  # the worker is gone; its sentinel will say how
                return
            except Exception as exc:  # the item did not pickle: this task fails, not the pool
                del self._busy[i]
                self._idle.appendleft(i)
                if slab_id is not None:
                    self._release_now(slab_id)
                future.set_exception(exc)

    def _send_task(self, i: int, task_id: int, epoch: int, item: Any, slab_id: int | None):
        conn = self._conns[i]
        for dropped in self._drops[i]:
            conn.send(("drop", dropped))
            self._known[i].discard(dropped)
        self._drops[i].clear()
        if slab_id is not None and slab_id not in self._known[i]:
            slab = self._slabs[slab_id]
            conn.send(("slab", slab_id, slab.size))
            send_handle(conn, slab.fd, self._procs[i].pid)
            self._known[i].add(slab_id)
        conn.send(("task", task_id, epoch, item, slab_id))

    # ------------------------------------------------------------------ slabs
    def _take_slab(self) -> int | None:
        """A free slab of the current size, a new one within the budget, or None."""
        while self._free:
            slab_id = self._free.pop()
            if self._slabs[slab_id].size == self._slab_size:
                return slab_id
            self._retire(slab_id)
        if self._slab_size == 0 or len(self._slabs) >= self._max_slabs:
            return None  # results travel pickled until a slab frees up: slower, never stuck
        if not self._slabs:
            self._check_budget()
        slab = Slab(next(self._slab_ids), self._slab_size)
        self._slabs[slab.id] = slab
        return slab.id

    def _check_budget(self) -> None:
        need = self._max_slabs * self._slab_size
        available = shared_memory_available()
        if need > available:
            raise MemoryError(
                f"{self.name}: worker processes need {need / _MIB:.0f} MiB of shared memory "
                f"({self._max_slabs} buffers of {self._slab_size / _MIB:.1f} MiB for "
                f"{self.workers} workers) but only {available / _MIB:.0f} MiB is available. "
                "Use fewer num_parallel_workers, a smaller batch, or config.set_prefetch_size()."
            )

    def _grow(self, nbytes: int) -> None:
        if nbytes > self._slab_size:
            self._slab_size = max(_MIB, -(-int(nbytes * 1.25) // _MIB) * _MIB)

    def _release(self, slab_id: int) -> None:
        """The consumer let go of every array in a slab: reuse it (or retire it)."""
        with self._lock:
            slab = self._slabs.get(slab_id)
            if slab is None:
                return
            if self._closed or slab.size != self._slab_size:
                self._retire(slab_id)
            else:
                self._free.append(slab_id)

    def _retire(self, slab_id: int) -> None:
        slab = self._slabs.pop(slab_id)
        slab.close()
        for i in range(self.workers):
            if slab_id in self._known[i]:
                self._drops[i].add(slab_id)

    # ------------------------------------------------------------------ results
    def _collect(self) -> None:
        """Collector thread: results, errors and deaths of workers, as they happen."""
        while not self._closed:
            with self._lock:
                conns = {c: i for i, c in enumerate(self._conns) if c is not None}
                sentinels = {p.sentinel: i for i, p in enumerate(self._procs) if p is not None}
            try:
                ready = wait(list(conns) + list(sentinels), timeout=0.1)
            except OSError:
                continue  # a pipe closed under us during shutdown or restart
            for obj in ready:
                if obj in conns:
                    i = conns[obj]
                    try:
                        message = obj.recv()
                    except (EOFError, OSError):
                        self._worker_died(i)
                        continue
                    self._on_message(i, message)
            for obj in ready:
                if obj in sentinels and not self._closed:
                    i = sentinels[obj]
                    if self._procs[i] is not None and not self._procs[i].is_alive():
                        self._worker_died(i)

    def _on_message(self, i: int, message: tuple) -> None:
        if message[0] == "ready":  # worker i has loaded the stage: a task sent runs from now
            with self._lock:
                self._ready[i] = True
                entry = self._busy.get(i)
                if entry is not None:
                    entry[0].running = (time.perf_counter(), self._procs[i], entry[2], entry[3])
                    entry[0].waiting_for_worker = None
            return
        kind, _task_id, seconds = message[:3]
        with self._lock:
            entry = self._busy.pop(i, None)
            self._stuck.discard(i)
            if i in self._stopping:
                self._tell_to_stop(i)
            else:
                self._idle.append(i)
            self.busy_s += seconds
        if entry is None:
            return
        future, slab_id = entry[0], entry[4]
        future.compute_s = seconds
        future.running = None
        if kind == "ok":
            payload, (skipped, examples) = message[3], message[4]
            for k in range(skipped):  # samples dropped in "skip" mode count in this process
                self._ctx.note_skip(
                    examples[k] if k < len(examples) else "", entry[2], self._stage_node
                )
            if payload[0] == "slab":
                slab = self._slabs[slab_id]
                result = unpack(payload[2], slab.map, lambda s=slab_id: self._release(s))
            else:
                result = payload[1]
                with self._lock:
                    self._grow(payload[2])
                    if slab_id is not None:
                        self._release_now(slab_id)
            future.set_result(result)
        else:
            if slab_id is not None:
                with self._lock:
                    self._release_now(slab_id)
            future.set_exception(self._rebuild_error(message))
        with self._lock:
            self._dispatch()

    def _release_now(self, slab_id: int) -> None:
        if self._slabs[slab_id].size == self._slab_size and not self._closed:
            self._free.append(slab_id)
        else:
            self._retire(slab_id)

    @staticmethod
    def _rebuild_error(message: tuple) -> BaseException:
        payload, text, remote_traceback = message[3:]
        exc: BaseException
        try:
            exc = cloudpickle.loads(payload) if payload is not None else PipelineError(text)
        except Exception:
            exc = PipelineError(text)
        exc.__cause__ = RemoteTraceback(remote_traceback)
        return exc

    def _worker_died(self, i: int) -> None:
        with self._lock:
            process = self._procs[i]
            if process is None or self._closed:
                return
            if i in self._stopping and i not in self._busy:
                self._stopped(i)
                return
            conn = self._conns[i]
            if self._drain(i) or process.exitcode != _FORKSERVER_LOST:
                process.join(timeout=1.0)
                how = _describe_exit(process.exitcode)
            else:
                how = self._orphaned(i, process)
            entry = self._busy.pop(i, None)
            self._stuck.discard(i)
            if entry is not None:
                entry[0].running = entry[0].waiting_for_worker = None
            if i in self._idle:
                self._idle.remove(i)
            conn.close()
            self._procs[i] = self._conns[i] = None
            if entry is not None and entry[4] is not None:
                self._release_now(entry[4])
            if i in self._stopping and self._restart:  # it was to exit anyway: no restart
                self._stopping.discard(i)
                if entry is not None:
                    future, task_id, epoch, item, _ = entry
                    self._waiting.appendleft((future, task_id, epoch, item, True))
                self._dispatch()
                return
            self._stopping.discard(i)
            if self._restart and self._restarts < _MAX_RESTARTS:
                self._restarts += 1
                logger.warning(
                    "jisu: %s worker %d (pid %s) %s; restarting it and re-running "
                    "its task (restart %d of %d)",
                    self.name,
                    i,
                    process.pid,
                    how,
                    self._restarts,
                    _MAX_RESTARTS,
                )
                self._start_worker(i)
                if entry is not None:
                    future, task_id, epoch, item, _ = entry
                    self._waiting.appendleft((future, task_id, epoch, item, True))
                self._dispatch()
                return
            error = WorkerDiedError(
                f"{self.name}: worker process {i} (pid {process.pid}) {how} while the pipeline "
                f"was running{' a task' if entry else ''}. If the OOM killer ended it, use fewer "
                "num_parallel_workers or less memory per sample; "
                "config.set_worker_restart(True) restarts dead workers instead."
            )
            self._fail_all(error, entry[0] if entry else None)

    def _drain(self, i: int) -> bool:
        """Take in the results worker ``i`` sent before it ended (they still count); True once
        its pipe is at its end, False while the worker still holds it (it is alive)."""
        conn = self._conns[i]
        while True:
            try:
                if not conn.poll():
                    return False
                message = conn.recv()
            except (EOFError, OSError):
                return True
            self._on_message(i, message)

    def _orphaned(self, i: int, process: Any) -> str:
        """The forkserver died, so worker ``i`` (alive: it holds its pipe) looked dead: stop it,
        and reap the dead forkserver (multiprocessing starts a new one for later workers)."""
        try:
            os.kill(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        with _start_lock:
            _reap_forkserver(self._forkservers.get(i))
        return (
            "was stopped: the forkserver process that starts jisu's workers ended (killed, or "
            "out of memory)"
        )

    def mark_stuck(self, future: Future) -> None:
        """The task of ``future`` was reported stuck: shutdown kills its worker at once."""
        with self._lock:
            for i, entry in self._busy.items():
                if entry[0] is future:
                    self._stuck.add(i)

    def _fail_all(self, error: BaseException, future: Future | None) -> None:
        """Break the pool: this future and every waiting one fail with ``error``."""
        self._broken = error
        if future is not None and not future.done():
            future.set_exception(error)
        while self._waiting:
            waiting, *_, resent = self._waiting.popleft()
            if resent or waiting.set_running_or_notify_cancel():
                waiting.set_exception(error)

    # ------------------------------------------------------------------ shutdown
    def shutdown(self, timeout: float) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            while self._waiting:
                waiting, *_, resent = self._waiting.popleft()
                if resent:
                    waiting.set_exception(PipelineError(f"{self.name}: the pool was shut down"))
                else:
                    waiting.cancel()
            for conn in self._conns:
                if conn is not None:
                    try:
                        conn.send(None)
                    except OSError:
                        pass
        if threading.current_thread() is not self._collector:
            self._collector.join(timeout)
        for i in self._stuck:  # a stuck task never ends: waiting for its worker is pointless
            if self._procs[i] is not None:
                self._procs[i].kill()
        for process in self._procs:
            if process is not None:
                process.join(timeout)
                if process.is_alive():
                    process.kill()
                    process.join(1.0)
        with self._lock:
            for conn in self._conns:
                if conn is not None:
                    conn.close()
            for future, *_ in self._busy.values():
                if not future.done():
                    future.set_exception(PipelineError(f"{self.name}: the pool was shut down"))
            self._busy.clear()
            for slab_id in list(self._free):
                self._retire(slab_id)
            self._free.clear()
            for slab in self._shared:  # every worker has its own mapping by now
                slab.close()
            self._shared = []
