"""The pool of one stage under the Ray executor: Ray actors instead of local workers.

A :class:`.worker_pool.WorkerPool`. The stage's task is pickled once (the same picklable copy
a local worker process gets, :meth:`.tasks.StageTask.for_process`), put into Ray's object
store once, and each actor (:class:`.ray_worker.StageActor`) fetches it once when it starts.
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
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import cloudpickle

from . import ray_worker
from .errors import PipelineError, with_context
from .process_workers import WorkerDiedError, rebuild_error
from .ray_worker import StageActor, run_time_settings
from .watchdog import stage_ops

if TYPE_CHECKING:
    from .context import ExecContext
    from .ray_executor import RayExecutor
    from .tasks import StageTask

logger = logging.getLogger("jisu.dataset")

DEPTH = 2  # tasks sent to one actor at once (one running, one waiting in its mailbox)
TASK_TARGET_S = 0.02  # work per task: a remote call costs ~0.2-1 ms of driver time
_MAX_RESTARTS = 3
_PLACEMENT_WARN_S = 30.0  # warn while tasks wait and no actor of the stage is placed
_POLL_S = 0.1

__all__ = ["DEPTH", "RayPool", "WorkerDiedError"]

_remote_class: Any = None
_class_lock = threading.Lock()


def _actor_class(ray: Any) -> Any:
    """:class:`.ray_worker.StageActor` as a Ray actor class (made once per process), its
    module's code pickled by value: an actor that imported it by name would run the
    ``__init__`` of jisu first (see :func:`.ray_worker.defer_jisu_packages`)."""
    global _remote_class
    with _class_lock:
        if _remote_class is None:
            ray.cloudpickle.register_pickle_by_value(ray_worker)
            _remote_class = ray.remote(StageActor)
        return _remote_class


@dataclass(eq=False)
class _Task:
    future: Future
    epoch: int
    item: Any
    resent: bool = False  # it ran on an actor that died and waits to run again


@dataclass(eq=False)
class _Actor:
    """One actor of the pool, and what the pool knows about it."""

    index: int
    stage: str
    handle: Any
    ready: bool = False  # placed, and it has loaded the stage
    dead: bool = False
    node_id: str | None = None
    ip: str | None = None
    pid: int | None = None
    tasks: deque = field(default_factory=deque)  # sent, result not in yet (in order)

    @property
    def name(self) -> str:
        """How messages (and :mod:`.watchdog`) name it."""
        return f"Ray actor {self.index} of {self.stage} {self.where()}"

    def where(self) -> str:
        if self.node_id is None:
            return "(not placed on a node yet)"
        return f"on node {self.node_id} ({self.ip})"


def _reason(exc: BaseException) -> str:
    """Ray's account of a death on one line, without the actor's ids (the message names the
    actor already) and Ray's list of common causes."""
    text = " ".join(str(exc).split())
    text = text.split(" Some common causes")[0]
    start, end = text.find(" class_name:"), text.find(" The actor is dead")
    if 0 <= start < end:
        text = text[:start] + text[end:]
    return text if len(text) <= 400 else text[:400] + " ..."


class RayPool:
    """Ray actors running one stage's task; a :class:`.worker_pool.WorkerPool`.

    Args:
        name: the stage, for messages.
        planned: the stage's local worker count (its in-flight bound is measured on it).
        actors: how many actors to run (see :meth:`.ray_executor.RayExecutor.workers_for`).
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
        self._lock = threading.Lock()
        self._closed = False
        self._broken: BaseException | None = None
        self._waiting: deque[_Task] = deque()  # not sent yet
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

    def actor_nodes(self) -> list[tuple[str | None, str | None]]:
        """``(node id, IP)`` of each live actor (None before Ray placed it)."""
        with self._lock:
            return [(a.node_id, a.ip) for a in self._actors]

    # ------------------------------------------------------------------ actors
    def _start_actor(self, index: int) -> None:
        """Start an actor (lock held); it gets tasks once its ``ready`` call is back."""
        handle = self._actor_class.remote(self._spec_ref)
        actor = _Actor(index, self.name, handle)
        self._actors.append(actor)
        self._refs[handle.ready.remote()] = (actor, None)
        self._wake.set()

    def resize(self, workers: int) -> None:
        """Kept as it is: a Ray stage runs ``num_workers`` actors (AutoTune's CPU budget is
        the driver's machine, not the cluster's)."""
        logger.debug("jisu: %s runs on Ray actors; resize(%d) ignored", self.name, workers)

    # ------------------------------------------------------------------ tasks
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
            self._waiting.append(_Task(future, epoch, item))
            self._dispatch()
        return future

    def _dispatch(self) -> None:
        """Send waiting tasks to ready actors, filling each to 1 task, then to ``DEPTH``
        (lock held)."""
        for depth in range(1, DEPTH + 1):
            for actor in self._actors:
                while (
                    self._waiting
                    and actor.ready
                    and len(actor.tasks) < depth
                    and self._broken is None
                    and not self._closed
                ):
                    self._send(actor, self._waiting.popleft())
                if not self._waiting:
                    return

    def _send(self, actor: _Actor, task: _Task) -> None:
        future = task.future
        if not task.resent and not future.set_running_or_notify_cancel():
            return  # cancelled while it waited
        try:
            ref = actor.handle.run.remote(task.epoch, task.item)
        except Exception as exc:  # the item does not pickle: this task fails, not the pool
            future.set_exception(
                with_context(exc, f"{self.name}: an item could not be sent to a Ray actor")
            )
            return
        actor.tasks.append(task)
        self._refs[ref] = (actor, task)
        if len(actor.tasks) == 1:  # it runs now; a second one waits behind it
            future.running = (time.perf_counter(), actor, task.epoch, task.item)
        self._wake.set()

    def mark_stuck(self, future: Future) -> None:
        """Nothing to do: shutdown kills every actor at once, stuck or not."""

    def _fail_all(self, error: BaseException, tasks: list[_Task]) -> None:
        """Break the pool (lock held): ``tasks`` and every waiting task fail with ``error``."""
        self._broken = error
        for task in tasks:
            if not task.future.done():
                task.future.set_exception(error)
        while self._waiting:
            task = self._waiting.popleft()
            if task.resent or task.future.set_running_or_notify_cancel():
                task.future.set_exception(error)

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
                        self._fail_all(error, tasks)
                return
            self._collect(done)
            self._check_placement()

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
                    self._fail_all(error, [])
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

    def _finished(self, actor: _Actor, task: _Task, seconds: float) -> None:
        """``task`` is back from ``actor``: the next task in its mailbox runs from now."""
        with self._lock:
            try:
                actor.tasks.remove(task)
            except ValueError:
                pass
            task.future.running = None
            self.busy_s += seconds
            if actor.tasks:
                following = actor.tasks[0]
                if following.future.running is None:
                    following.future.running = (
                        time.perf_counter(),
                        actor,
                        following.epoch,
                        following.item,
                    )
            self._dispatch()

    def _on_ready(self, actor: _Actor, value: tuple) -> None:
        actor.node_id, actor.ip, actor.pid = value[1], value[2], value[3]
        if value[0] == "ok":
            with self._lock:
                if not actor.dead:
                    actor.ready = True
                    self._dispatch()
            return
        cause = rebuild_error(("err", None, None, *value[4:]))
        error = with_context(
            cause,
            f"{self.name}: {actor.name} could not load the stage ({self._ops}); every node "
            "needs jisu and the modules of the pipeline's ops and source installed",
        )
        with self._lock:
            tasks = [t for a in self._actors for t in a.tasks]
            self._fail_all(error, tasks)

    def _actor_died(self, actor: _Actor, exc: BaseException) -> None:
        with self._lock:
            if actor.dead or self._closed:
                return
            actor.dead = True
            tasks = list(actor.tasks)
            actor.tasks.clear()
            for ref in [r for r, (a, _) in self._refs.items() if a is actor]:
                del self._refs[ref]
            for task in tasks:
                task.future.running = None
                task.resent = True  # if it runs again: it cannot be cancelled any more
            self._actors.remove(actor)
            self._kill(actor)  # an object lost with a node that is still reachable, say
            # Ray calls an actor on a lost node "unavailable": it might come back if it could
            # restart, which jisu's actors never do (their tasks move to a new one instead)
            unreachable = isinstance(exc, getattr(self._exceptions, "ActorUnavailableError", ()))
            how = (
                "became unreachable (its node died, or the network failed)"
                if unreachable
                else "died"
            )
            if self._restart and self._restarts < _MAX_RESTARTS:
                self._restarts += 1
                logger.warning(
                    "jisu: %s %s (%s); starting a new actor and re-running its %d task(s) "
                    "(restart %d of %d)",
                    actor.name,
                    how,
                    _reason(exc),
                    len(tasks),
                    self._restarts,
                    _MAX_RESTARTS,
                )
                self._start_actor(actor.index)
                self._waiting.extendleft(reversed(tasks))
                self._dispatch()
                return
            restarts = (
                f" after {self._restarts} restarts"
                if self._restart
                else "; config.set_worker_restart(True) re-runs the tasks of a dead actor on "
                "a new one"
            )
            error = WorkerDiedError(
                f"{self.name}: {actor.name} (pid {actor.pid}) {how} while the pipeline was "
                f"running{' a task' if tasks else ''} of the stage {self._ops}{restarts}. "
                f"Ray says: {_reason(exc)}"
            )
            self._fail_all(error, tasks)

    def _check_placement(self) -> None:
        """Warn while tasks wait and Ray has placed no actor of this stage (the cluster is
        busy or too small; an autoscaler may still add nodes)."""
        with self._lock:
            stalled = bool(self._waiting) and not any(a.ready for a in self._actors)
            if not stalled or self._broken is not None:
                self._unplaced_since = None
                return
            now = time.monotonic()
            if self._unplaced_since is None:
                self._unplaced_since = self._warned_at = now
                return
            if now - self._warned_at < _PLACEMENT_WARN_S:
                return
            self._warned_at = now
            waited = now - self._unplaced_since
        try:
            available = self._ray.available_resources()
        except Exception:
            available = "unknown"
        logger.warning(
            "jisu: %s: tasks have waited %.0f s and Ray has placed none of the stage's %d "
            "actors (each asks for %s; the cluster has %s available). Other stages or jobs may "
            "hold the cluster: lower num_workers or resources_per_worker, or add nodes.",
            self.name,
            waited,
            self.workers,
            self._resources,
            available,
        )

    # ------------------------------------------------------------------ shutdown
    def _kill(self, actor: _Actor) -> None:
        try:
            self._ray.kill(actor.handle, no_restart=True)
        except Exception:  # already gone, or Ray shut down first
            pass

    def shutdown(self, timeout: float) -> None:
        """Cancel waiting tasks, fail those sent, and kill the actors (waiting for none)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            while self._waiting:
                task = self._waiting.popleft()
                if task.resent:
                    task.future.set_exception(_shut_down(self.name))
                else:
                    task.future.cancel()
            actors, self._actors = self._actors, []
            self._refs.clear()
            for actor in actors:
                for task in actor.tasks:
                    if not task.future.done():
                        task.future.set_exception(_shut_down(self.name))
                actor.tasks.clear()
                self._kill(actor)
            self._spec_ref = None
        self._wake.set()
        if threading.current_thread() is not self._collector:
            self._collector.join(timeout)


def _settle(future: Future, result: Any = None, error: BaseException | None = None) -> None:
    """Complete ``future`` unless shutdown already failed it (a result that came in late)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass


def _shut_down(name: str) -> PipelineError:
    return PipelineError(f"{name}: the pool was shut down")
