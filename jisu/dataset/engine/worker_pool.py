"""What a stage needs of its pool of workers: threads (:class:`.thread_pool.ThreadPool`, the
default), processes (:class:`.processes.pool.ProcessPool`, ``python_multiprocessing``) or Ray
actors (:class:`.ray.pool.RayPool`, ``config.set_executor(RayExecutor(...))``)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol, runtime_checkable

from .errors import PipelineError


class TaskFuture(Future):
    """The future of one submitted item, and the record of its task that the watchdog and
    the stage read (each pool keeps it up to date)."""

    def __init__(self) -> None:
        super().__init__()
        #: ``(start, worker, epoch, item)`` while the task runs; None before and after
        self.started: tuple[float, Any, int, Any] | None = None
        #: ``(since, process)`` while the task waits for a worker process still loading
        self.waiting_for_worker: tuple[float, Any] | None = None
        #: the seconds the task took, once done
        self.compute_s = 0.0


def shut_down_error(name: str) -> PipelineError:
    """What a task submitted to (or left in) a pool that was shut down fails with."""
    return PipelineError(f"{name}: the pool was shut down")


@runtime_checkable
class WorkerPool(Protocol):
    """Workers that run one stage's task, ``task(ctx, epoch, item)``, on submitted items;
    each item's :class:`TaskFuture` records its task (for :mod:`.watchdog` and the stage)."""

    name: str
    #: the worker count (AutoTune reads it; :meth:`resize` changes it)
    workers: int
    #: seconds the workers spent running tasks, in all
    busy_s: float
    #: how long a new worker takes before it serves tasks (AutoTune judges a resize after)
    start_seconds: float
    #: items in flight beyond the plan's bound (a Ray pool running more actors than planned)
    extra_inflight: int
    #: the seconds a task should last at least (a remote pool: bigger tasks), 0 for no wish
    task_target_s: float

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers (none for threads, nor for Ray actors, which may run
        on other machines)."""
        ...

    def submit(self, epoch: int, item: Any) -> TaskFuture:
        """Run the task on ``item`` of ``epoch``; its result or exception goes to the future."""
        ...

    def resize(self, workers: int) -> None:
        """Run ``workers`` workers from now on; a surplus one stops after its task."""
        ...

    def mark_stuck(self, future: TaskFuture) -> None:
        """The task of ``future`` was reported stuck: :meth:`shutdown` does not wait for it."""
        ...

    def shutdown(self, timeout: float) -> None:
        """Cancel the tasks not started and stop the workers, waiting up to ``timeout`` s."""
        ...
