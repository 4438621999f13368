"""One run of a pipeline in this process: its context, its driver thread, its output queue.

The iterator starts one per pass (:class:`.iterator.DatasetIterator`), and so does the pipeline
process for the parent it serves (:mod:`.processes.pipeline_child`); every run still going at
interpreter exit is stopped here.
"""

from __future__ import annotations

import atexit
import os
import weakref
from typing import TYPE_CHECKING, Any

from ..core.cpus import available_cpus
from . import policies
from .context import ExecContext, RunSettings, Stopped, logger
from .errors import with_context
from .plan import Plan
from .plan import plan as build_plan
from .pools import local_pool
from .row_queue import OUTPUT_QUEUE_BYTES, RowQueue
from .stage import EPOCH_END
from .stage_runs import run_epochs

if TYPE_CHECKING:
    from ..core.node import Dataset

#: runs (and pipeline processes) to stop at exit
live_runs: weakref.WeakSet[Any] = weakref.WeakSet()


class Failure:
    """What a run puts in its queue instead of a row when it fails."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def drive(
    root: Dataset, ctx: ExecContext, out: RowQueue, epoch: int, start: int, num_epochs: int
) -> None:
    """Driver thread: run epoch after epoch into ``out``, with an end marker after each."""
    try:
        stream = run_epochs(ctx, root, epoch, start, num_epochs, handoff=True)
        try:
            for row in stream:
                if row is EPOCH_END:
                    skipped = ctx.skipped_by_epoch.get(epoch, 0)
                    if skipped:
                        logger.warning(
                            "jisu: %d sample(s) skipped in epoch %d because an op or a source "
                            "read failed on them (error samples mode 'skip'); first: %s",
                            skipped,
                            epoch,
                            ctx.skip_examples[0],
                        )
                    epoch += 1
                ctx.put(out, row)
        finally:
            stream.close()
    except Stopped:
        pass
    except BaseException as exc:
        try:
            ctx.put(out, Failure(exc))
        except Stopped:
            pass


def start_run(
    root: Dataset,
    seed: int,
    settings: RunSettings,
    epoch: int,
    position: int,
    num_epochs: int,
    run_plan: Plan | None = None,
) -> tuple[ExecContext, RowQueue]:
    """Start running ``root`` in this process from ``epoch``/``position``: its context (the
    threads, pools and statistics of the run) and the queue its rows arrive in. The
    iterator's, and the pipeline process's (:mod:`.processes.pipeline_child`)."""
    run_plan = build_plan(root) if run_plan is None else run_plan
    tuner = None
    if settings.autotune and epoch == 0:  # tuning is a first-epoch job
        tuner = policies.make_tuner(available_cpus(), _autotune_budget(), settings.autotune_path)
    ctx = ExecContext(
        seed,
        settings.prefetch_size,
        run_plan.ids,
        profile=settings.profile,
        tuner=tuner,
        tuned=settings.tuned,
        epoch_folds=run_plan.folds,
        settings=settings,
        plan=run_plan,
        make_pool=local_pool,
    )
    out = RowQueue(max(2, ctx.prefetch_size), OUTPUT_QUEUE_BYTES)
    # the driver must not reference an iterator, so that it can be garbage-collected
    # should the driver itself fail, the iterator gets its error instead of waiting forever
    ctx.spawn(
        lambda: drive(root, ctx, out, epoch, position, num_epochs),
        "driver",
        lambda exc: ctx.put(out, Failure(with_context(exc, "the pipeline's driver thread failed"))),
    )
    if tuner is not None:  # a failed AutoTune is logged: the pipeline runs on as it is
        ctx.spawn(lambda: tuner.run(ctx.stop), "autotune")
    live_runs.add(ctx)
    return ctx, out


def _autotune_budget() -> int:
    """Bytes AutoTune may keep in flight: a quarter of the physical memory (1 GiB if
    unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4
    except (ValueError, OSError, AttributeError):
        return 1 << 30


@atexit.register
def _close_all() -> None:
    for ctx in list(live_runs):
        ctx.shutdown(timeout=1.0)
