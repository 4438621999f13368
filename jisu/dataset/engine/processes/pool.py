"""Worker processes for stages whose Python code holds the GIL (``python_multiprocessing``).

Start method: **forkserver**. ``fork`` would copy this process with its threads (jisu's own
stage threads, torch's intra-op pool) mid-flight, and a lock held by one of them at that moment
stays locked forever in the child; ``spawn`` is safe but re-imports torch and jisu in every
worker (seconds). The forkserver is a clean single-threaded process that has imported the
worker's module and the stage's, not all of jisu (:mod:`.start`); each worker is
forked from it in milliseconds. No worker re-runs ``__main__`` (scripts without an
``if __name__ == "__main__"`` guard work); the stage's ops and source travel to the workers
once, with cloudpickle (lambdas and local functions included).

Workers are started once per iterator and stage, on the pool's collector thread (tasks queue
meanwhile, and go to each worker as it comes up), and kept across epochs. Each runs one task at
a time; results come back through shared-memory slabs (:mod:`.slab_pool`) as zero-copy arrays,
or pickled when no slab is free or the result outgrew the slabs (which then grow). A worker
that dies (a signal, the OOM killer) is noticed at once through its process sentinel: its task
fails with :class:`WorkerDiedError`, or, with ``config.set_worker_restart(True)``, the worker
is replaced and its task re-run (the same task gives the same output).

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
import os
import signal
import threading
import time
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler
from typing import TYPE_CHECKING, Any

from ... import config
from ..errors import with_context
from ..queued_pool import QueuedPool
from ..watchdog import describe_items, stage_ops
from ..worker_pool import TaskFuture
from . import start as process_start
from .shared_arrays import dumps_sharing
from .shm import shared_memory_available
from .slab_pool import SlabPool
from .start import mp_context
from .workers import (
    RemoteTraceback,
    Task,
    Worker,
    WorkerDiedError,
    Workers,
    describe_exit,
    rebuild_error,
)

if TYPE_CHECKING:
    from ..context import ExecContext
    from ..tasks import StageTask

logger = logging.getLogger("jisu.dataset")

_MAX_RESTARTS = 3
_FORKSERVER_LOST = 255  # the exit code multiprocessing gives a worker whose forkserver died

__all__ = ["ProcessPool", "RemoteTraceback", "WorkerDiedError", "mp_context"]


class ProcessPool(QueuedPool):
    """``workers`` processes running one stage's task; a :class:`.worker_pool.WorkerPool`.

    Args:
        name: the stage, for messages.
        workers: process count.
        ctx: the iterator's context (seed and structural node ids go to the workers).
        task: the stage's task; it and the nodes it uses must pickle with cloudpickle.
    """

    #: how long a new worker may take before it serves tasks (AutoTune judges a resize after)
    start_seconds = 1.0
    extra_inflight = 0  # runs the planned width
    task_target_s = 0.0  # no wish for bigger tasks

    def __init__(self, name: str, workers: int, ctx: ExecContext, task: StageTask) -> None:
        self.name = name
        self.workers = workers
        self.busy_s = 0.0
        self._ctx = ctx
        self._stage_node = task.node  # the epoch of a task is this node's (for skip counts)
        self._ops = stage_ops(task)  # for messages
        self._unit = "batch" if task.node.op_name == "batch" else "sample"
        picklable, ids = task.for_process(ctx)
        modules: set[str] = set()
        try:
            # large arrays (a NumPy source's data) go to shared memory, not into every worker
            # the last item: whether to time the ops (the profiler is on), as threads do
            stage = (picklable, ids, ctx.seed, ctx.prefetch_size, ctx.op_times is not None)
            stage += (config.run_time_settings(),)  # what the forkserver's copy may lack
            spec, shared = dumps_sharing(stage, modules)
        except OSError:  # out of shared memory: dumps_sharing's message says so
            raise
        except Exception as exc:
            raise TypeError(
                f"{name}: python_multiprocessing=True sends the stage's ops and source to "
                f"worker processes, but they cannot be pickled: {type(exc).__name__}: {exc}"
            ) from exc
        process_start.preload(modules)  # for a forkserver not started yet
        self._restart = ctx.settings.worker_restart
        self._init_queue(threading.RLock())  # RLock: slab release may run from GC inside it
        self._task_ids = itertools.count()
        self._workers = Workers(name, workers, spec, shared)
        self._restarts = 0
        self._collector_failure: BaseException | None = None  # why the collector ended
        retired, shared = self._workers.slab_retired, ctx.settings.shared_mem
        self._slabs = SlabPool(name, workers, self._lock, shared_memory_available, retired, shared)
        self._started = threading.Event()  # the first workers are started
        self._collector = threading.Thread(
            target=self._run, name=f"jisu-{name}-collector", daemon=True
        )
        self._collector.start()

    @property
    def pids(self) -> list[int]:
        """The workers' process ids (once the first workers are started: they start in the
        background)."""
        self._started.wait()
        return [w.process.pid for w in self._workers.live()]

    # ------------------------------------------------------------------ workers
    def _start_all(self) -> None:
        """Start the first workers (on the collector thread, the lock not held while the
        forkserver starts, so that tasks can be queued meanwhile)."""
        for i in range(self.workers):
            if self._closed:
                return
            worker = self._workers.start_process(i)
            with self._lock:
                if self._closed:  # shutdown came first: let it exit (EOF) and be joined
                    self._workers.slots[i] = worker
                    worker.conn.close()
                    return
                self._workers.join(worker)
                self._dispatch()

    def resize(self, workers: int) -> None:
        """Run ``workers`` processes from now on (AutoTune): new ones start at once and get
        tasks when ready; a surplus one exits after the task it is running."""
        workers = max(1, workers)
        self._started.wait()
        with self._lock:
            if self._closed or self._broken is not None:
                return
            active = [w for w in self._workers.live() if not w.stopping]
            for _ in range(workers - len(active)):
                self._workers.add(self._workers.free_slot())
            surplus = sorted(active, key=lambda w: w.index, reverse=True)
            for worker in surplus[: max(0, len(active) - workers)]:
                worker.stopping = True
                if worker in self._workers.idle:  # busy ones stop when their result is in
                    self._workers.idle.remove(worker)
                    worker.tell_to_stop()
            self.workers = workers
            self._slabs.set_workers(workers)
            self._dispatch()

    # ------------------------------------------------------------------ tasks
    def _new_task(self, future: TaskFuture, epoch: int, item: Any) -> Task:
        return Task(future, next(self._task_ids), epoch, item)

    def _dispatch(self) -> None:
        """Send waiting tasks to idle workers (called with the lock held)."""
        idle = self._workers.idle
        while idle and self._waiting and self._broken is None and not self._closed:
            worker = idle.popleft()
            task = self._waiting.popleft()
            future = task.future
            if not task.resent and not future.set_running_or_notify_cancel():
                idle.appendleft(worker)
                continue
            try:
                task.slab_id = self._slabs.take()
            except (OSError, MemoryError) as exc:
                idle.appendleft(worker)
                self._break(exc, [future])
                return
            worker.task = task
            # The watchdog's clock starts when the worker begins the task: now if it is ready,
            # else when it says it is (see _on_message), so that a slow start never counts.
            if worker.ready:
                future.started = (time.perf_counter(), worker.process, task.epoch, task.item)
            else:  # the watchdog tells a worker that is slow to load apart from a stuck task
                future.waiting_for_worker = (time.perf_counter(), worker.process)
            try:
                worker.send_task(task, None if task.slab_id is None else self._slabs[task.slab_id])
            except OSError:  # the worker is gone; its sentinel will say how
                return
            except Exception as exc:  # the item did not pickle: this task fails, not the pool
                worker.task = None
                idle.appendleft(worker)
                self._put_back_slab(task)
                future.set_exception(exc)

    def _put_back_slab(self, task: Task) -> None:
        if task.slab_id is not None:
            self._slabs.put_back(task.slab_id)
            task.slab_id = None

    def mark_stuck(self, future: TaskFuture) -> None:
        """The task of ``future`` was reported stuck: shutdown kills its worker at once."""
        with self._lock:
            worker = self._workers.running(future)
            if worker is not None:
                worker.stuck = True

    # ------------------------------------------------------------------ results
    def _run(self) -> None:
        """Collector thread: start the workers, then take in results, errors and deaths of
        workers, as they happen. Should it fail itself, every task in flight fails with its
        error (naming the op and the sample): the iterator raises it instead of waiting."""
        try:
            self._collect()
        except BaseException as exc:
            self._collector_died(exc)

    def _collect(self) -> None:
        try:
            self._start_all()
        except BaseException as exc:  # no process could be started (out of memory, ...)
            with self._lock:
                if not self._closed:
                    self._break(exc, [])
        finally:
            self._started.set()
        while not self._closed:
            with self._lock:
                live = self._workers.live()
            conns = {w.conn: w for w in live}
            sentinels = {w.process.sentinel: w for w in live}
            try:
                ready = wait(list(conns) + list(sentinels), timeout=0.1)
            except OSError:
                continue  # a pipe closed under us during shutdown or restart
            for obj in ready:
                if obj in conns:
                    worker = conns[obj]
                    try:
                        message = self._receive(worker)
                    except (EOFError, OSError):
                        self._worker_died(worker)
                        continue
                    if message is not None:
                        self._on_message(worker, message)
            for obj in ready:
                if obj in sentinels and not self._closed:
                    worker = sentinels[obj]
                    if self._workers.is_current(worker) and not worker.process.is_alive():
                        self._worker_died(worker)

    def _receive(self, worker: Worker) -> tuple | None:
        """The next message of ``worker``, or None when it could not be taken in (then its
        task failed with an error naming the op and the sample).

        Raises:
            EOFError, OSError: the pipe is at its end (the worker ended).
        """
        try:
            data = worker.conn._recv_bytes().getbuffer()  # recv() without its unpickling
        except (EOFError, OSError):
            raise
        except Exception as exc:  # a MemoryError: the rest of the message is still in the pipe
            self._lose_worker(worker, exc)
            return None
        try:
            return ForkingPickler.loads(data)
        except Exception as exc:  # it pickled there but does not rebuild here
            self._unreadable_result(worker, exc)
            return None

    def _where(self, task: Task | None) -> str:
        """``"map(f) at sample 3 of epoch 0"``: the stage's ops and the samples of ``task``."""
        if task is None:
            return self._ops
        return f"{self._ops} at {describe_items(task.item, self._unit)} of epoch {task.epoch}"

    def _unreadable_result(self, worker: Worker, exc: BaseException) -> None:
        """A message of ``worker`` pickled there but cannot be rebuilt here: its task fails
        (the worker goes on: the pipe is in step)."""
        with self._lock:
            task, worker.task = worker.task, None
            worker.stuck = False
            if worker.stopping:
                worker.tell_to_stop()
            elif worker not in self._workers.idle:
                self._workers.idle.append(worker)
            if task is not None:
                self._put_back_slab(task)
        error = with_context(
            exc,
            f"{self._where(task)}: the result that worker process {worker.index} (pid "
            f"{worker.process.pid}) sent back cannot be rebuilt in this process "
            "(python_multiprocessing=True); return NumPy arrays, numbers or strings",
        )
        if task is not None:
            task.future.started = None
            task.future.set_exception(error)
        else:
            logger.warning("jisu: %s", error)
        with self._lock:
            self._dispatch()

    def _lose_worker(self, worker: Worker, exc: BaseException) -> None:
        """Reading a message of ``worker`` failed midway (a result too large for this
        process's memory): the pipe is out of step, so the worker is stopped and the pool
        fails with an error naming the op and the sample."""
        with self._lock:
            if self._closed or not self._workers.is_current(worker):
                return
            task, worker.task = worker.task, None
            self._workers.forget(worker)
            try:
                os.kill(worker.process.pid, signal.SIGKILL)
            except (ProcessLookupError, TypeError):
                pass
            if task is not None:
                self._put_back_slab(task)
            too_large = " (too large for this process's memory)" * isinstance(exc, MemoryError)
            error = with_context(
                exc,
                f"{self._where(task)}: the result of worker process {worker.index} (pid "
                f"{worker.process.pid}) could not be received{too_large}; the worker was "
                "stopped. Return smaller results (a smaller batch), or give the process more "
                "memory",
            )
            self._break(error, [task.future] if task is not None else [])
        worker.process.join(timeout=1.0)

    def _collector_died(self, exc: BaseException) -> None:
        """The collector thread failed: every task in flight or waiting fails, each with an
        error naming the op and its sample; later submits fail too."""
        with self._lock:
            if self._closed:
                return
            sent = [w.task for w in self._workers.live() if w.task is not None]
            waiting = list(self._waiting)
            self._waiting.clear()
            self._broken = self._collector_failure = exc
            for task in sent + waiting:
                started = task in sent or task.resent or task.future.set_running_or_notify_cancel()
                if started and not task.future.done():
                    task.future.set_exception(self._broken_error(task.epoch, task.item))
        self._started.set()

    def _broken_error(self, epoch: int, item: Any) -> BaseException:
        if self._broken is not self._collector_failure:
            return super()._broken_error(epoch, item)
        what = "the collector thread of its worker processes failed"
        return with_context(self._broken, f"{self._where(Task(None, 0, epoch, item))}: {what}")

    def _on_message(self, worker: Worker, message: tuple) -> None:
        if message[0] == "ready":  # the worker has loaded the stage: a task sent runs from now
            with self._lock:
                worker.ready = True
                task = worker.task
                if task is not None:
                    started = (time.perf_counter(), worker.process, task.epoch, task.item)
                    task.future.started = started
                    task.future.waiting_for_worker = None
            return
        kind, _task_id, seconds = message[:3]
        with self._lock:
            task, worker.task = worker.task, None
            worker.stuck = False
            if worker.stopping:
                worker.tell_to_stop()
            else:
                self._workers.idle.append(worker)
            self.busy_s += seconds
        if task is None:
            return
        future = task.future
        future.compute_s = seconds
        future.started = None
        if kind == "ok":
            payload, (skipped, examples), op_times = message[3], message[4], message[5]
            if op_times and self._ctx.op_times is not None:
                self._ctx.op_times.merge(op_times)  # the worker's op timings (profiler on)
            for k in range(skipped):  # samples dropped in "skip" mode count in this process
                self._ctx.note_skip(
                    examples[k] if k < len(examples) else "", task.epoch, self._stage_node
                )
            if payload[0] == "slab":
                result = self._slabs.unpack(task.slab_id, payload[2])
            else:
                result = payload[1]
                with self._lock:
                    self._slabs.grow(payload[2])
                    self._put_back_slab(task)
            future.set_result(result)
        else:
            with self._lock:
                self._put_back_slab(task)
            future.set_exception(rebuild_error(message))
        with self._lock:
            self._dispatch()

    def _worker_died(self, worker: Worker) -> None:
        with self._lock:
            if not self._workers.is_current(worker) or self._closed:
                return
            process = worker.process
            if worker.stopping and worker.task is None:  # a surplus worker exited as told
                self._workers.forget(worker)
                process.join(timeout=1.0)
                return
            drained = self._drain(worker)
            if not self._workers.is_current(worker):  # stopped while its results were read
                return
            if drained or process.exitcode != _FORKSERVER_LOST:
                process.join(timeout=1.0)
                how = describe_exit(process.exitcode)
            else:
                how = worker.stop_orphan()
            task, worker.task = worker.task, None
            if task is not None:
                task.future.started = task.future.waiting_for_worker = None
                self._put_back_slab(task)
                task.resent = True  # if it runs again: it cannot be cancelled any more
            self._workers.forget(worker)
            if worker.stopping and self._restart:  # it was to exit anyway: no restart
                if task is not None:
                    self._waiting.appendleft(task)
                self._dispatch()
                return
            if self._restart and self._restarts < _MAX_RESTARTS:
                self._restarts += 1
                logger.warning(
                    "jisu: %s worker %d (pid %s) %s; restarting it and re-running "
                    "its task (restart %d of %d)",
                    self.name,
                    worker.index,
                    process.pid,
                    how,
                    self._restarts,
                    _MAX_RESTARTS,
                )
                self._workers.add(worker.index)
                if task is not None:
                    self._waiting.appendleft(task)
                self._dispatch()
                return
            error = WorkerDiedError(
                f"{self.name}: worker process {worker.index} (pid {process.pid}) {how} while "
                f"the pipeline was running{' a task' if task else ''}. If the OOM killer ended "
                "it, use fewer num_parallel_workers or less memory per sample; "
                "config.set_worker_restart(True) restarts dead workers instead."
            )
            self._break(error, [task.future] if task else [])

    def _drain(self, worker: Worker) -> bool:
        """Take in the results ``worker`` sent before it ended (they still count); True once
        its pipe is at its end, False while the worker still holds it (it is alive)."""
        while True:
            try:
                if not worker.conn.poll():
                    return False
                message = worker.conn.recv()
            except (EOFError, OSError):
                return True
            self._on_message(worker, message)

    # ------------------------------------------------------------------ shutdown
    def shutdown(self, timeout: float) -> None:
        with self._lock:
            if not self._close_queue():
                return
            self._slabs.closed = True
            for worker in self._workers.live():
                worker.tell_to_stop()
        if threading.current_thread() is not self._collector:
            self._collector.join(timeout)  # it may be starting a worker: wait for that too
        with self._lock:
            workers = self._workers.live()
        Workers.stop(workers, timeout)
        with self._lock:
            held = []
            for worker in workers:
                worker.conn.close()
                task, worker.task = worker.task, None
                if task is not None:
                    held.append(task.future)
            self._fail_sent(held)
            self._slabs.close()
            self._workers.close_shared()
