"""The one place where a stage's local pool is chosen and built.

A stage runs on threads (:class:`.thread_pool.ThreadPool`), or on worker processes
(:class:`.processes.pool.ProcessPool`) when one of its nodes asked for
``python_multiprocessing``; under an executor (``config.set_executor``) the executor builds the
pool instead (``ExecContext.pool``). The iterator hands :func:`local_pool` to its
:class:`~.context.ExecContext`; a worker process's context runs tasks only and keeps the
default, threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .processes.pool import ProcessPool
from .thread_pool import ThreadPool

if TYPE_CHECKING:
    from .context import ExecContext
    from .tasks import StageTask
    from .worker_pool import WorkerPool


def local_pool(name: str, workers: int, ctx: ExecContext, task: StageTask) -> WorkerPool:
    """The pool of one stage on this machine: processes when its task asks, else threads."""
    if task.processes:
        return ProcessPool(name, workers, ctx, task)
    return ThreadPool(name, workers, ctx, task)
