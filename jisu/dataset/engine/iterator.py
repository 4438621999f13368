"""The user-facing iterator: runs a pipeline (a :mod:`.run` in this process, or a pipeline
process) and hands rows out in order, keeping the state a resume needs."""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ... import compat
from .. import config
from ..core.ragged import RaggedArray
from ..core.request_counts import REQUESTS, since
from ..core.rows import to_output
from ..core.tuning import check_stages
from . import policies
from .context import ExecContext, RunSettings
from .errors import EpochsExhaustedError, PipelineError, as_pipeline_error
from .plan import Plan
from .plan import plan as build_plan
from .row_queue import Rows
from .run import Failure, live_runs, start_run
from .stage import EPOCH_END
from .stats import OpTimes

if TYPE_CHECKING:
    from ..core.node import Dataset


class DatasetIterator:
    """Iterator over a pipeline's rows, epoch after epoch.

    ``next()`` raises ``StopIteration`` at the end of each epoch; iterating again continues with
    the next epoch, until ``num_epochs`` epochs are done. Rows are lists of torch tensors
    sharing memory with the pipeline's arrays (NumPy arrays with ``output_numpy=True``), or
    dicts with ``as_dict=True``.

    The iterator owns threads, started when the first row is asked for (so a
    :meth:`set_state` right after creation reads nothing before its position), with the
    configuration in force when it was created; :meth:`close` stops them (also called on
    garbage collection, on KeyboardInterrupt while waiting for a row, and at interpreter
    exit).

    :meth:`get_state` / :meth:`set_state` save and restore the position (seed, epoch and rows
    consumed). Random-access pipelines restore in constant time; pipelines with an iterable
    source, or with a node that may drop rows (filter, a source or map in error samples mode
    "skip"), restore by re-reading the epoch up to the position.
    """

    def __init__(
        self,
        dataset: Dataset,
        columns: Sequence[str] | None,
        num_epochs: int,
        output_numpy: bool,
        as_dict: bool,
    ) -> None:
        from ..core.error_types import PipelineValueError
        from ..core.validation import check_columns, check_int

        check_int("create_tuple_iterator", "num_epochs", num_epochs)
        if not isinstance(output_numpy, bool):  # MindSpore 2.10: a TypeError (a truthy 123 too)
            raise TypeError(
                "create_tuple_iterator: output_numpy must be a bool. "
                f"Received: output_numpy={output_numpy!r}"
            )
        if num_epochs == 0 or num_epochs < -1:  # MindSpore: a RuntimeError
            raise PipelineValueError(
                "create_tuple_iterator: num_epochs must be -1 (no limit) or a positive int. "
                f"Received: num_epochs={num_epochs}"
            )
        if columns is not None:
            columns = check_columns(
                "create_tuple_iterator", "columns", columns, dataset.get_col_names()
            )
            dataset = dataset.project(columns)
        if not output_numpy:
            compat.add_asnumpy()  # MindSpore loops call .asnumpy() on every output
        self._root = dataset
        self._columns = dataset.get_col_names()
        self._num_epochs = num_epochs
        self._output_numpy = output_numpy
        self._as_dict = as_dict
        self._seed = config.pipeline_seed()
        self._settings = RunSettings.from_config()  # the configuration it runs with
        self._plan = build_plan(dataset)  # the stages each run starts
        if not output_numpy and _has_ragged_batch(dataset):
            RaggedArray.warm_torch()  # torch's first nested tensor imports for ~1 s
        if self._settings.tuned:  # saved AutoTune settings: for this pipeline's stages only
            check_stages(self._settings.tuned, [stage.name for stage in self._plan.stages])
        self._epoch = 0
        self._position = 0
        self._skipped_done = 0  # samples skipped in finished epochs
        self._skipped_closed = 0  # ... and in the epoch in progress when close() stopped it
        self._ctx: ExecContext | None = None
        self._rows = Rows()  # rows of the last chunk taken from the output queue, not read yet
        # a closed iterator's stage summaries and op times (when profiling)
        self._closed_profile: tuple[list, OpTimes | None] | None = None
        self._stopped = 0.0
        self._finalizer: weakref.finalize | None = None
        # Threads start at the first row asked for, not here: a set_state() right after
        # creation (a resumed run) then reads nothing before its position.
        self._pending = True
        self._exhausted = False  # every epoch consumed: next() raises EpochsExhaustedError

    @property
    def offload_model(self) -> Any:
        """The pipeline's offloaded op tails as a ``torch.nn.Module`` (MindSpore's
        ``iterator.offload_model``, whose ``transform_list[k].col_idxs`` say which output
        column each tail takes), or None when no map offloads. Unlike MindSpore's iterator,
        this one does not apply it: call it on the batches (see ``Dataset.offload_module``)."""
        module = self._root.offload_module()
        return module if module.tails else None

    # ------------------------------------------------------------- lifecycle
    def _ensure_started(self) -> None:
        if self._pending:
            self._pending = False
            self._start()

    def _start(self) -> None:
        self._requests_before = REQUESTS.snapshot()  # for the profile
        if self._settings.pipeline_process:
            from .processes.pipeline_host import ChildPipeline

            args = (self._seed, self._settings, self._epoch, self._position, self._num_epochs)
            child = ChildPipeline(self._root, *args)
            self._ctx, self._out = child, child
            live_runs.add(child)  # type: ignore[arg-type]  # shut down at exit too
        else:
            self._ctx, self._out = start_run(
                self._root,
                self._seed,
                self._settings,
                self._epoch,
                self._position,
                self._num_epochs,
                self._plan,
            )
        self._started = time.perf_counter()
        # per item, when profiling: (wait, was ready, time, output queue length after)
        self._waits: list[tuple[float, bool, float, int]] = []
        self._finalizer = weakref.finalize(self, self._ctx.shutdown)

    def close(self) -> None:
        """Stop every thread of this iterator and release its buffers (idempotent)."""
        self._pending = False
        if self._ctx is not None and self._position > 0:  # keep the epoch in progress' skips
            self._skipped_closed = self._ctx.skipped_by_epoch.get(self._epoch, 0)
        if self._ctx is not None and self._ctx.stats is not None:  # kept for profile()
            self._stopped = time.perf_counter()
            before = self._requests_before
            self._closed_profile = _profile_parts(self._ctx, self._stopped, before)
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._ctx = None
        self._rows.clear()

    def stop(self) -> None:
        """Stop the pipeline now (MindSpore's ``stop``): :meth:`close`."""
        self.close()

    def __enter__(self) -> DatasetIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------- iteration
    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        try:
            return self._next_row()
        except (KeyboardInterrupt, SystemExit):  # a Ctrl-C anywhere in here, not only while
            self.close()  # waiting for a row: leave nothing running
            raise

    def _next_row(self) -> Any:
        self._ensure_started()
        ctx = self._ctx
        if ctx is None:
            if self._exhausted:
                raise EpochsExhaustedError(
                    f"the iterator's {self._num_epochs} epoch(s) are consumed: create it with "
                    "a larger num_epochs (-1: no limit) to read more (MindSpore: 'User tries "
                    "to fetch data beyond the specified number of epochs')"
                )
            raise StopIteration  # closed (stop()/close()) or failed
        profiling = ctx.stats is not None
        if profiling:
            begin, ready = time.perf_counter(), len(self._rows) > 0 or self._out.qsize() > 0
        try:
            item = self._rows.next(lambda: ctx.get(self._out))
        except BaseException:  # the run stopped, or failed outside its guards
            self.close()
            raise
        if profiling:
            now = time.perf_counter()
            queued = len(self._rows) + self._out.qsize()
            self._waits.append((now - begin, ready, now - self._started, queued))
        if item is EPOCH_END:
            if ctx.tuner is not None:
                ctx.tuner.finish()
            self._skipped_done += ctx.skipped_by_epoch.get(self._epoch, 0)
            self._skipped_closed = 0
            self._epoch += 1
            self._position = 0
            if self._num_epochs > 0 and self._epoch >= self._num_epochs:
                self.close()
                self._exhausted = True
            raise StopIteration
        if isinstance(item, Failure):
            self.close()
            # MindSpore raises every failure of a running pipeline as a RuntimeError: one that
            # no op gave context to (batch, a sampler) is made one too, of its own class as well
            raise as_pipeline_error(item.exc)
        self._position += 1
        values = [to_output(a, self._output_numpy) for a in item]
        if self._as_dict:
            return dict(zip(self._columns, values))
        return values

    def get_col_names(self) -> list[str]:
        return list(self._columns)

    @property
    def dataset(self) -> Dataset:
        """The pipeline this iterator runs (MindSpore's ``Iterator.dataset``): the dataset it
        was created from, behind a projection when ``columns`` was given."""
        return self._root

    def plan(self) -> Plan:
        """The stages this iterator runs (see :meth:`Dataset.explain`)."""
        return self._plan

    @property
    def skipped_samples(self) -> int:
        """Samples dropped because an op or a source read failed on them (error samples mode
        "skip"), over this iterator's life: all the epochs it has finished (also after the
        last one, :meth:`close` and :meth:`set_state`), plus the epoch in progress once a row
        of it has been consumed (also after :meth:`close`).

        The epoch in progress is always counted from its start. A pipeline that may drop rows
        restores a position by reading its epoch again up to it, so after :meth:`set_state`
        the samples skipped before the position are found and counted again, as in a run from
        the epoch's start; the count of the unfinished epoch that :meth:`set_state` leaves is
        dropped, so no sample is counted twice for one pass over an epoch.

        A finished epoch's count is exact; within an epoch the count can run ahead of the rows
        consumed, as workers prepare rows in advance."""
        in_progress = self._skipped_closed
        if self._ctx is not None and self._position > 0:
            in_progress = self._ctx.skipped_by_epoch.get(self._epoch, 0)
        return self._skipped_done + in_progress

    def worker_pids(self) -> list[int]:
        """PIDs of the worker processes of this iterator's ``python_multiprocessing`` stages;
        with ``config.set_pipeline_process(True)``, the pipeline process's first."""
        self._ensure_started()
        return [] if self._ctx is None else self._ctx.worker_pids()

    # ------------------------------------------------------------- profile
    def profile(self) -> dict[str, Any]:
        """Per-stage statistics since this iterator started (``config.set_enable_profiler``
        must have been on when it was created) and the bottleneck, with a suggestion."""
        self._ensure_started()
        running = self._ctx is not None
        if (self._ctx.stats if running else self._closed_profile) is None:
            raise RuntimeError(
                "profile: this iterator was created without the profiler; call "
                "jisu.dataset.config.set_enable_profiler(True) before creating it"
            )
        now = time.perf_counter() if running else self._stopped
        if running:
            stages, times, storage = _profile_parts(self._ctx, now, self._requests_before)
        else:
            stages, times, storage = self._closed_profile
        wall = max(now - self._started, 1e-9)
        waited = sum(w[0] for w in self._waits)
        empty = sum(1 for w in self._waits if not w[1])
        every = max(1, len(self._waits) // 500)  # at most ~500 points over time
        output = {
            "batches": len(self._waits),
            "consumer_wait_share": min(1.0, waited / wall),
            "queue_empty_share": empty / max(len(self._waits), 1),
            "queue_capacity": self._out.max_items,
            "occupancy": [(w[2], w[3]) for w in self._waits[::every]],
            "storage": storage,  # requests to object storage: count, bytes, seconds
        }
        return policies.analyse(stages, output, self._plan, times)

    # ------------------------------------------------------------- state
    def get_state(self) -> dict[str, int]:
        """Where this iterator stands: ``{"seed", "epoch", "position"}`` (rows consumed)."""
        return {"seed": self._seed, "epoch": self._epoch, "position": self._position}

    def set_state(self, state: dict[str, int]) -> None:
        """Continue from a state returned by :meth:`get_state` (of this or an equal pipeline)."""
        try:
            seed, epoch, position = (
                int(state["seed"]),
                int(state["epoch"]),
                int(state["position"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                "set_state: state must be a dict with int 'seed', 'epoch' and 'position' as "
                f"returned by get_state(). Received: state={state!r}"
            ) from exc
        if epoch < 0 or position < 0:
            raise ValueError(f"set_state: epoch and position must be >= 0. Received: {state!r}")
        self.close()
        # the run restored reads its epoch from the start: the partial epoch left is not kept
        self._skipped_closed = 0
        self._seed, self._epoch, self._position = seed, epoch, position
        self._pending = self._num_epochs < 0 or epoch < self._num_epochs
        self._exhausted = not self._pending


def _profile_parts(ctx: Any, now: float, before: dict) -> tuple[list, OpTimes | None, dict]:
    """A run's stage summaries at ``now``, its op times and its requests to object storage
    (this process's since ``before``); a pipeline process's from it."""
    if ctx.stats is None:
        return [], None, since(before)
    if hasattr(ctx, "profile_parts"):  # a pipeline process (ChildPipeline)
        try:
            return ctx.profile_parts()
        except (PipelineError, OSError):  # it has failed or gone: nothing more to learn
            return [], None, since(before, before)
    stages = [stage.summary(now) for stage in list(ctx.stats.values())]
    return stages, ctx.op_times, since(before)


def _has_ragged_batch(node: Any) -> bool:
    """Whether a batch with ragged columns is in the pipeline of ``node``."""
    return bool(getattr(node, "ragged", None)) or any(
        _has_ragged_batch(child) for child in node.children
    )
