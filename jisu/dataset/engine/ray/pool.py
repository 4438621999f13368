"""The pool of one stage under the Ray executor: Ray actors instead of local workers.

A :class:`.worker_pool.WorkerPool`. The stage's task is pickled once (the same picklable copy
a local worker process gets, :meth:`.tasks.StageTask.for_process`), put into Ray's object
store once, and each actor (:class:`.worker.StageActor`) fetches it once when it starts.
Then items go to actors one remote call each.

**Order and bounded work.** :func:`.stage.ordered_map` keeps the order: it holds the futures
of submitted items in submission order and hands out results in that order, whichever actor
finishes first; it submits at most its ``inflight`` items ahead of the consumer (raised by
:attr:`RayPool.extra_inflight` so that every actor can be kept busy). Inside the pool, an
actor is sent at most ``DEPTH`` (2) tasks at once: while it runs one, the next waits in its
mailbox, which hides the round trip to the driver; the rest wait in the pool's queue (not in
Ray) and go to whichever actor frees a slot. Only actors that Ray has placed and that have
loaded the stage get tasks, so an actor the cluster cannot place yet never holds one.

**Results** come back through Ray's object store: a large array is read in the driver
zero-copy from the node's shared memory, **read-only** (as rows mapped from record files are);
the engine never writes into a stage's results (a tensor handed to the user is a copy of a
read-only array, see :func:`.rows.to_output`). An op's exception comes back as a value and is
rebuilt with the actor's traceback as its cause, naming op, column and sample as locally.

**Death.** An actor that dies (its process killed, its node lost) fails the calls sent to it
with ``RayActorError``. With ``config.set_worker_restart(True)`` a new actor (placed by Ray on
any node) takes its place and its tasks run again (the same task gives the same output), at
most 3 times per stage; otherwise the pipeline fails with :class:`WorkerDiedError` naming the
stage, the actor, its node id and IP.

**Shutdown** kills the actors at once (``ray.kill``), waiting for nothing; a task reported
stuck needs no special care. Actors are not detached: they also end with the driver.

The parts: this module holds the pool (its state, ``submit``, the collector thread that takes
in what actors send back, and shutdown); :mod:`.dispatch` sends waiting tasks to actors;
:mod:`.actors` starts, readies, replaces and kills them.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

import cloudpickle

from ..errors import PipelineError, with_context
from ..processes.workers import WorkerDiedError, rebuild_error
from ..watchdog import stage_ops
from ..worker_pool import TaskFuture
from .actors import _actor_class, _ActorManagement, _reason
from .dispatch import DEPTH, _Actor, _settle, _Task
from .worker import run_time_settings

if TYPE_CHECKING:
    from ..context import ExecContext
    from ..tasks import StageTask
    from .executor import RayExecutor

logger = logging.getLogger("jisu.dataset")

TASK_TARGET_S = 0.02  # work per task: a remote call costs ~0.2-1 ms of driver time
_POLL_S = 0.1

__all__ = ["DEPTH", "RayPool", "WorkerDiedError"]


class RayPool(_ActorManagement):
    """Ray actors running one stage's task; a :class:`.worker_pool.WorkerPool`.

    Args:
        name: the stage, for messages.
        planned: the stage's local worker count (its in-flight bound is measured on it).
        actors: how many actors to run (see :meth:`.executor.RayExecutor.workers_for`).
        ctx: the iterator's context (seed and structural node ids go to the actors).
        task: the stage's task; it and the nodes it uses must pickle with cloudpickle.
        executor: the executor (Ray, connected; actor options).

    Raises:
        TypeError: the stage's ops or source cannot be pickled (names the ops).
    """

    #: how long a new actor takes before it serves tasks (AutoTune judges a resize after)
    start_seconds = 2.0
    #: work per task the stage's chunker aims at (:func:`.stage.ordered_map` reads it)
    task_target_s = TASK_TARGET_S

    def __init__(
        self,
        name: str,
        planned: int,
        actors: int,
        ctx: ExecContext,
        task: StageTask,
        executor: RayExecutor,
    ) -> None:
        self.name = name
        self.workers = actors
        self.busy_s = 0.0
        #: in-flight items beyond the plan's bound, so that every actor has DEPTH tasks
        self.extra_inflight = max(0, actors * DEPTH - planned)
        self._ctx = ctx
        self._stage_node = task.node
        self._ops = stage_ops(task)
        picklable, ids = task.for_process(ctx)
        stage = (picklable, ids, ctx.seed, ctx.prefetch_size, ctx.op_times is not None)
        stage += (run_time_settings(),)
        try:
            spec = cloudpickle.dumps(stage)
        except Exception as exc:
            raise TypeError(
                f"{name}: the Ray executor sends the stage's ops and source ({self._ops}) to "
                f"Ray actors, but they cannot be pickled: {type(exc).__name__}: {exc}. Use "
                "picklable ops and sources, or config.set_executor(None) to run locally."
            ) from exc
        self._ray = ray = executor.connect()
        self._exceptions = ray.exceptions
        self._spec_ref = ray.put(spec)  # once; every actor (and a replacement) fetches it
        self._actor_class = _actor_class(ray).options(**executor.actor_options())
        self._resources = executor.resources_per_worker
        self._restart = ctx.settings.worker_restart
        self._restarts = 0
        self._init_queue(threading.Lock())
        self._actors: list[_Actor] = []
        self._refs: dict[Any, tuple[_Actor, _Task | None]] = {}  # None: the actor's ready()
        self._wake = threading.Event()
        self._unplaced_since: float | None = None
        self._warned_at = 0.0
        with self._lock:
            for i in range(actors):
                self._start_actor(i)
        self._collector = threading.Thread(
            target=self._run, name=f"jisu-{name}-ray-collector", daemon=True
        )
        self._collector.start()

    @property
    def pids(self) -> list[int]:
        """Empty: actors are Ray's processes, maybe on other machines (not this one's pids)."""
        return []

    def resize(self, workers: int) -> None:
        """Kept as it is: a Ray stage runs ``num_workers`` actors (AutoTune's CPU budget is
        the driver's machine, not the cluster's)."""
        logger.debug("jisu: %s runs on Ray actors; resize(%d) ignored", self.name, workers)

    # ------------------------------------------------------------------ tasks
    def _new_task(self, future: TaskFuture, epoch: int, item: Any) -> _Task:
        return _Task(future, epoch, item)

    def mark_stuck(self, future: TaskFuture) -> None:
        """Nothing to do: shutdown kills every actor at once, stuck or not."""

    # ------------------------------------------------------------------ results
    def _run(self) -> None:
        """Collector thread: take in what actors send back (readiness, results, deaths)."""
        ray = self._ray
        while True:
            with self._lock:
                if self._closed:
                    return
                refs = list(self._refs)
            if not refs:
                self._wake.wait(_POLL_S)
                self._wake.clear()
                continue
            try:
                done, _ = ray.wait(refs, num_returns=1, timeout=_POLL_S)
                if done and len(refs) > 1:
                    more, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                    done = list(dict.fromkeys([*done, *more]))
            except Exception as exc:  # Ray shut down under the pipeline, or lost its head node
                with self._lock:
                    if not self._closed:
                        tasks = [t for a in self._actors for t in a.tasks]
                        error = PipelineError(
                            f"{self.name}: lost the connection to Ray while the pipeline was "
                            f"running: {type(exc).__name__}: {_reason(exc)}"
                        )
                        self._break(error, [task.future for task in tasks])
                return
            try:
                self._collect(done)
                self._check_placement()
            except Exception as exc:  # the collector failed: the tasks fail, never wait
                with self._lock:
                    if not self._closed:
                        tasks = [t for a in self._actors for t in a.tasks]
                        error = PipelineError(
                            f"{self._ops}: the collector thread of its Ray actors failed: "
                            f"{type(exc).__name__}: {exc}"
                        )
                        error.__cause__ = exc
                        self._break(error, [task.future for task in tasks])
                return

    def _collect(self, done: list) -> None:
        """Take in the results of the refs in ``done``: one ``ray.get`` for all of them, one
        each when that fails (an actor died: the others still count)."""
        with self._lock:
            entries = [(ref, self._refs.pop(ref, None)) for ref in done]
        entries = [(ref, entry) for ref, entry in entries if entry is not None]
        try:
            values = self._ray.get([ref for ref, _ in entries])
        except Exception:
            for ref, entry in entries:
                self._collect_one(ref, entry, None)
            return
        for (ref, entry), value in zip(entries, values):
            self._collect_one(ref, entry, (value,))

    def _collect_one(self, ref: Any, entry: tuple, got: tuple | None) -> None:
        """Take in one result (``got``: ``(value,)``, or None: get it now)."""
        actor, task = entry
        errors = self._exceptions
        try:
            value = self._ray.get(ref) if got is None else got[0]
        except (errors.RayActorError, errors.ObjectLostError) as exc:
            # an object lost with its node: the node (and the actor) is gone
            self._actor_died(actor, exc)
            return
        except Exception as exc:  # Ray could not deliver the result (it did not pickle ...)
            error = with_context(exc, f"{self.name}: {actor.name} could not return a result")
            if task is None:
                with self._lock:
                    self._break(error, [])
                return
            self._finished(actor, task, 0.0)
            _settle(task.future, error=error)
            return
        if task is None:
            self._on_ready(actor, value)
            return
        kind, seconds = value[0], value[1]
        self._finished(actor, task, seconds)
        future = task.future
        if future.done():  # run twice (its actor died as it answered): counted the first time
            return
        future.compute_s = seconds
        if kind == "ok":
            result, skipped, examples, op_times = value[2:]
            if op_times and self._ctx.op_times is not None:
                self._ctx.op_times.merge(op_times)  # the actor's op timings (profiler on)
            for k in range(skipped):  # samples dropped in "skip" mode count in the driver
                self._ctx.note_skip(
                    examples[k] if k < len(examples) else "", task.epoch, self._stage_node
                )
            _settle(future, result)
        else:
            _settle(future, error=rebuild_error(("err", None, *value[1:])))

    # ------------------------------------------------------------------ shutdown
    def shutdown(self, timeout: float) -> None:
        """Cancel waiting tasks, fail those sent, and kill the actors (waiting for none)."""
        with self._lock:
            if not self._close_queue():
                return
            actors, self._actors = self._actors, []
            self._refs.clear()
            for actor in actors:
                self._fail_sent([task.future for task in actor.tasks])
                actor.tasks.clear()
                self._kill(actor)
            self._spec_ref = None
        self._wake.set()
        if threading.current_thread() is not self._collector:
            self._collector.join(timeout)
