"""Stuck tasks: a warning while a task runs too long, and the opt-in timeout that fails it.

MindSpore logs a warning every ``config.set_multiprocessing_timeout_interval`` seconds (300 by
default) while its pipeline waits for a worker; jisu does the same, and names what is stuck: the
op, the worker (a thread's name, a process's pid) and the sample. ``config.set_sample_timeout``
turns a task that runs longer than that into a :class:`~.errors.TaskTimeoutError`.

Cost: nothing per task beyond one tuple the pool stores on the task's future when it starts
(``future.started = (start, worker, epoch, item)``, back to None when it ends). A task starts
when its worker begins it: a thread when it takes the task, a worker process when it is ready
(it has loaded the stage, which can take seconds for a large source) and has the task, so a
short timeout never fails a task that is still waiting for its worker to start. The check runs
in the stage's consumer (:func:`.stage.ordered_map`) only while it is already waiting for that
future (it wakes every ``POLL_S`` to look at the stop flag): no thread and no timer per task.

Where a task is in a thread, the thread's position slot (``core/position.py``, written by the
kernels) tells the op and the sample exactly (a map stage may run several maps and a whole
chunk of samples in one task), and its stack the user code that is running. A worker process's
slot and stack cannot be read from here; its task is named by the stage's ops and the samples
it was given (``py-spy dump --pid`` shows where the process is).
"""

from __future__ import annotations

import logging
import numbers
import os
import reprlib
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from ..core.operation import op_name
from ..core.position import position_of
from .errors import TaskTimeoutError
from .tasks import StreamCut

if TYPE_CHECKING:
    from .context import RunSettings
    from .tasks import StageTask
    from .worker_pool import TaskFuture

logger = logging.getLogger("jisu.dataset")

_USER_FRAMES = 3  # innermost frames of the stuck code shown in a message
_JISU_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def stage_ops(task: StageTask) -> str:
    """The ops a stage's task runs, bottom first: ``"NumpySlicesDataset -> map(decode)"``."""
    names = []
    for node in task.nodes():
        if node is task.cut or isinstance(node, StreamCut):  # the stream feeding it runs elsewhere
            continue
        names.append(node.describe())
    return " -> ".join(names)


def describe_items(item: Any, unit: str = "sample") -> str:
    """The samples (or batches) a task was given: ``"sample 3"``, ``"samples 8..15"``,
    ``"batch 2"``. Knows the items of the engine's tasks: index lists, ``(index, row)`` lists,
    and ``(batch number, rows)``."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], numbers.Integral):
        return f"batch {item[0]}"
    if isinstance(item, list):
        indices = [entry[0] if isinstance(entry, tuple) else entry for entry in item]
        if indices and all(isinstance(i, numbers.Integral) for i in indices):
            return _index_list(unit, [int(i) for i in indices])
    return f"item {reprlib.repr(item)}"


def _index_list(unit: str, indices: list[int]) -> str:
    if len(indices) == 1:
        return f"{unit} {indices[0]}"
    if indices == list(range(indices[0], indices[0] + len(indices))):
        return f"{unit}s {indices[0]}..{indices[-1]}"
    shown = ", ".join(map(str, indices[:6]))
    return f"{unit}s {shown}{', ...' if len(indices) > 6 else ''} ({len(indices)} in all)"


def thread_position(thread: threading.Thread) -> tuple[str | None, str | None]:
    """Where a pipeline thread is: ``(op and sample, innermost user frames)``.

    The op and sample come from the thread's :class:`~..core.position.Position`, which the
    kernels write as they read rows and run ops (None when the thread has not run one yet);
    the code from its stack: the innermost frames that are not jisu's own.
    """
    slot = position_of(thread.ident)
    where = None
    if slot is not None and slot.node is not None and isinstance(slot.index, numbers.Integral):
        where = _node_position(slot.node, slot.op, slot.epoch, slot.index)
    return where, _frames_text(sys._current_frames().get(thread.ident or -1))


def _node_position(node: Any, op: Any, epoch: Any, index: int) -> str:
    """``"map operation f on column(s) ['x'] at sample 3 of epoch 0"``."""
    what = node.op_name if op is None else f"{node.op_name} operation {op_name(op)}"
    columns = node.input_columns
    where = f" on column(s) {list(columns)}" if columns else ""
    unit = "batch" if node.op_name == "batch" else "sample"
    of_epoch = f" of epoch {epoch}" if isinstance(epoch, numbers.Integral) else ""
    return f"{what}{where} at {unit} {index}{of_epoch}"


def _frames_text(frame: Any) -> str | None:
    """The innermost frames of a stack that are not jisu's own, inside its outermost jisu
    frame (the pool's worker loop; what is outside it is the thread's start-up), outermost
    first, as ``function (file:line)``: the user code that is running and what it waits in."""
    stack = []  # innermost first
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    ours = [k for k, f in enumerate(stack) if f.f_code.co_filename.startswith(_JISU_DIR)]
    inside = stack[: ours[-1]] if ours else stack
    user = [f for f in inside if not f.f_code.co_filename.startswith(_JISU_DIR)]
    if not user:
        return None
    shown = reversed(user[:_USER_FRAMES])
    return " -> ".join(f"{f.f_code.co_name} ({f.f_code.co_filename}:{f.f_lineno})" for f in shown)


class StuckTaskWatch:
    """Watches the task a stage's consumer is waiting for (see the module doc).

    Args:
        name: the stage, for messages.
        task: the stage's task (its ops are named when a task's stack cannot be read).
        pool: the stage's pool; told (``mark_stuck``) about a task reported as stuck, so that
            its shutdown does not wait for it (a stuck thread is left to end by itself, a
            stuck process is killed).
        settings: the iterator's configuration (the warning interval and the timeout).
    """

    def __init__(self, name: str, task: StageTask, pool: Any, settings: RunSettings) -> None:
        self.name = name
        self.interval = settings.timeout_interval
        self.timeout = settings.sample_timeout
        self._task = task
        self._pool = pool
        self._unit = "batch" if task.node.op_name == "batch" else "sample"
        self._future: TaskFuture | None = None
        self._warnings = 0

    def check(self, future: TaskFuture) -> None:
        """Warn about ``future``'s task if it ran past the next multiple of the interval;
        raise :class:`TaskTimeoutError` if it ran past the timeout. Call it while waiting."""
        running = future.started  # None: not started yet (queued, or its worker still
        # starting), or just finished
        if future.done():
            return
        if not isinstance(running, tuple):
            self._check_worker_start(future)
            return
        seconds = self._seconds(future, running[0])
        if self.timeout is not None and seconds >= self.timeout:
            self._pool.mark_stuck(future)
            raise TaskTimeoutError(
                f"{self.name}: a task ran longer than the sample timeout of {self.timeout:g} s "
                f"(config.set_sample_timeout): {self.describe(running)}. The pipeline stopped."
            )
        if seconds >= self.interval * (self._warnings + 1):
            self._warnings = int(seconds // self.interval)
            self._pool.mark_stuck(future)
            logger.warning(
                "jisu: %s: a task has been running for %.1f s: %s. It may be stuck (a dead loop, "
                "a lock, a read that never returns) or very slow. This warning repeats every %g s "
                "(config.set_multiprocessing_timeout_interval); "
                "config.set_sample_timeout(seconds) makes such a task an error.",
                self.name,
                seconds,
                self.describe(running),
                self.interval,
            )

    def _seconds(self, future: TaskFuture, since: float) -> float:
        """Seconds since ``since``; a new future's warnings are counted afresh."""
        if future is not self._future:
            self._future, self._warnings = future, 0
        return time.perf_counter() - since

    def _check_worker_start(self, future: TaskFuture) -> None:
        """Warn (never time out: no sample runs yet) about a worker process that was sent
        ``future``'s task but has not finished loading the stage after the interval: the
        stage's ops or source block while they unpickle or import (a ``__setstate__`` that
        waits, a lock taken at import)."""
        starting = future.waiting_for_worker
        if not isinstance(starting, tuple):
            return
        seconds = self._seconds(future, starting[0])
        if seconds >= self.interval * (self._warnings + 1):
            self._warnings = int(seconds // self.interval)
            worker = starting[1]
            logger.warning(
                "jisu: %s: worker process %s (pid %s) has been loading the stage (%s) for "
                "%.1f s and a task waits for it: unpickling or importing the stage's ops or "
                "source may be stuck (`py-spy dump --pid %s` shows where). This warning repeats "
                "every %g s (config.set_multiprocessing_timeout_interval).",
                self.name,
                worker.name,
                worker.pid,
                stage_ops(self._task),
                seconds,
                worker.pid,
                self.interval,
            )

    def describe(self, running: tuple) -> str:
        """What a running task is doing: op, sample, worker, and the code it is in."""
        _, worker, epoch, item = running
        if isinstance(worker, threading.Thread):
            position, code = thread_position(worker)
            who = f"thread {worker.name}"
        else:
            position, code = None, None
            who = (
                f"worker process {worker.name} (pid {worker.pid}; "
                f"`py-spy dump --pid {worker.pid}` shows its stack)"
            )
        if position is None:
            samples = describe_items(item, self._unit)
            position = f"{stage_ops(self._task)} on {samples} of epoch {epoch}"
        stuck_in = f", in {code}" if code else ""
        return f"{position}, running in {who}{stuck_in}"
