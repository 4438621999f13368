"""Actor management of a :class:`.pool.RayPool`: starting, readiness, death, placement.

Each actor (:class:`.worker.StageActor`, made a Ray actor class once per process,
:func:`_actor_class`) is started with a reference to the stage's pickled spec and gets tasks
only once its ``ready`` call is back (:meth:`_ActorManagement._on_ready`): then Ray has placed
it and it has loaded the stage. An actor that dies (its process killed, its node lost) is
replaced, with ``config.set_worker_restart(True)``, by a new one that runs its tasks again, at
most :data:`_MAX_RESTARTS` times per stage; otherwise the pool breaks with
:class:`..processes.workers.WorkerDiedError` naming the stage, the actor, its node and IP.
While tasks wait and Ray has placed no actor of the stage, a warning is logged every
:data:`_PLACEMENT_WARN_S` seconds. Actors are killed with ``ray.kill``, waiting for nothing.

Kept apart from task dispatch (:mod:`.dispatch`, the base class it builds on) and the
collector thread (:mod:`.pool`), which reports readiness and deaths here.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..errors import with_context
from ..processes.workers import WorkerDiedError, rebuild_error
from . import worker as ray_worker
from .dispatch import _Actor, _TaskDispatch
from .worker import StageActor

logger = logging.getLogger("jisu.dataset")

_MAX_RESTARTS = 3
_PLACEMENT_WARN_S = 30.0  # warn while tasks wait and no actor of the stage is placed

_remote_class: Any = None
_class_lock = threading.Lock()


def _actor_class(ray: Any) -> Any:
    """:class:`.worker.StageActor` as a Ray actor class (made once per process), its
    module's code pickled by value: an actor that imported it by name would run the
    ``__init__`` of jisu first (see :func:`.worker.defer_jisu_packages`)."""
    global _remote_class
    with _class_lock:
        if _remote_class is None:
            ray.cloudpickle.register_pickle_by_value(ray_worker)
            _remote_class = ray.remote(StageActor)
        return _remote_class


def _reason(exc: BaseException) -> str:
    """Ray's account of a death on one line, without the actor's ids (the message names the
    actor already) and Ray's list of common causes."""
    text = " ".join(str(exc).split())
    text = text.split(" Some common causes")[0]
    start, end = text.find(" class_name:"), text.find(" The actor is dead")
    if 0 <= start < end:
        text = text[:start] + text[end:]
    return text if len(text) <= 400 else text[:400] + " ..."


class _ActorManagement(_TaskDispatch):
    """Starting, readying, replacing and killing the actors, a base of
    :class:`.pool.RayPool` (which sets the state below in its ``__init__``)."""

    workers: int
    _ray: Any
    _exceptions: Any
    _actor_class: Any
    _spec_ref: Any
    _ops: str
    _resources: Any
    _restart: bool
    _restarts: int
    _unplaced_since: float | None
    _warned_at: float

    def _start_actor(self, index: int) -> None:
        """Start an actor (lock held); it gets tasks once its ``ready`` call is back."""
        handle = self._actor_class.remote(self._spec_ref)
        actor = _Actor(index, self.name, handle)
        self._actors.append(actor)
        self._refs[handle.ready.remote()] = (actor, None)
        self._wake.set()

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
            self._break(error, [task.future for task in tasks])

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
                task.future.started = None
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
            self._break(error, [task.future for task in tasks])

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

    def _kill(self, actor: _Actor) -> None:
        try:
            self._ray.kill(actor.handle, no_restart=True)
        except Exception:  # already gone, or Ray shut down first
            pass
