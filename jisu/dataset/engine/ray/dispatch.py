"""Task dispatch of a :class:`.pool.RayPool`: which waiting task goes to which actor.

The pool keeps its tasks (:class:`_Task`) in its own queue, not in Ray, and sends one to an
actor only when the actor is ready (placed, the stage loaded) and holds fewer than
:data:`DEPTH` tasks: each ready actor is filled to one task first, then to ``DEPTH``, so while
it runs one the next waits in its mailbox (hiding the round trip to the driver) and the rest
go to whichever actor frees a slot. :class:`_Actor` is the pool's record of an actor and of
the tasks sent to it, in order; a task that comes back (:meth:`_TaskDispatch._finished`)
starts the clock of the one behind it, which :mod:`.watchdog` reads. Breaking the pool fails
every task it holds (:meth:`QueuedPool._break`).

Kept apart from the actors' lifecycle (:mod:`.actors`) and the collector thread
(:mod:`.pool`): this part only moves tasks between the queue and the actors' mailboxes.
``_dispatch``, ``_send`` and ``_break`` run with the pool's lock held; ``_finished`` takes it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from ..errors import with_context
from ..queued_pool import QueuedPool
from ..worker_pool import TaskFuture

DEPTH = 2  # tasks sent to one actor at once (one running, one waiting in its mailbox)


@dataclass(eq=False)
class _Task:
    future: TaskFuture
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


class _TaskDispatch(QueuedPool):
    """The task queue and the sending of tasks to actors, a base of :class:`.pool.RayPool`
    (which sets the state below in its ``__init__``)."""

    busy_s: float
    _actors: list[_Actor]
    _refs: dict[Any, tuple[_Actor, _Task | None]]  # None: the actor's ready()
    _wake: threading.Event

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
            future.started = (time.perf_counter(), actor, task.epoch, task.item)
        self._wake.set()

    def _finished(self, actor: _Actor, task: _Task, seconds: float) -> None:
        """``task`` is back from ``actor``: the next task in its mailbox runs from now."""
        with self._lock:
            try:
                actor.tasks.remove(task)
            except ValueError:
                pass
            task.future.started = None
            self.busy_s += seconds
            if actor.tasks:
                following = actor.tasks[0]
                if following.future.started is None:
                    following.future.started = (
                        time.perf_counter(),
                        actor,
                        following.epoch,
                        following.item,
                    )
            self._dispatch()


def _settle(future: TaskFuture, result: Any = None, error: BaseException | None = None) -> None:
    """Complete ``future`` unless shutdown already failed it (a result that came in late)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass
