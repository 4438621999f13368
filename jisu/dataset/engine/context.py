"""Per-iterator execution context: stop flag, worker pools, helper threads, shared caches."""

from __future__ import annotations

import logging
import math
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .policies import Tuner
    from .tasks import StageTask
    from .worker_pool import WorkerPool

from .. import config
from .buffers import batch_buffers
from .interrupts import interrupts_deferred
from .plan import Plan
from .stats import OpTimes, StageStats
from .thread_pool import ThreadPool

#: builds a stage's local pool: ``(name, workers, ctx, task) -> WorkerPool``
PoolFactory = Callable[[str, int, "ExecContext", "StageTask"], "WorkerPool"]

logger = logging.getLogger("jisu.dataset")

POLL_S = 0.05  # how often blocked engine threads look at the stop flag


@dataclass(frozen=True)
class RunSettings:
    """The configuration an iterator runs with: read once, when the iterator is created, so
    that a ``config.set_*`` call after that changes only iterators created later."""

    prefetch_size: int
    profile: bool
    autotune: bool
    autotune_path: str | None
    tuned: dict[str, dict[str, int]] | None
    worker_restart: bool
    timeout_interval: float  # inf: no stuck-task warnings (watchdog off)
    sample_timeout: float | None
    shared_mem: bool
    executor: Any = None  # a RayExecutor (config.set_executor), None: local workers
    pipeline_process: bool = False  # run the pipeline in a child process (pipeline_host)

    @classmethod
    def from_config(cls) -> RunSettings:
        return cls(
            prefetch_size=config.get_prefetch_size(),
            profile=config.get_enable_profiler(),
            autotune=config.get_enable_autotune(),
            autotune_path=config.get_autotune_filepath(),
            tuned=config.get_autotune_config(),
            worker_restart=config.get_worker_restart(),
            timeout_interval=config.get_multiprocessing_timeout_interval()
            if config.get_enable_watchdog()
            else math.inf,
            sample_timeout=config.get_sample_timeout(),
            shared_mem=config.get_enable_shared_mem(),
            executor=config.get_executor(),
            pipeline_process=config.get_pipeline_process(),
        )


def _slots(count: int) -> Any:
    """At most ``count`` holders at once (a plain lock for one: cheaper)."""
    return threading.Lock() if count == 1 else threading.BoundedSemaphore(count)


def _thread_pool(name: str, workers: int, ctx: ExecContext, task: StageTask) -> WorkerPool:
    """The pools of a context that runs tasks only (a worker process's): threads; worker
    processes cannot start processes of their own."""
    if task.processes:
        raise RuntimeError(f"{name}: this context cannot start worker processes")
    return ThreadPool(name, workers, ctx, task)


class Stopped(Exception):
    """Raised inside engine threads when their iterator is being closed."""


class ExecContext:
    """Everything one running iterator owns; :meth:`shutdown` releases all of it.

    Args:
        seed: the seed every random decision of this run derives from.
        prefetch_size: rows each stage may hold ahead of its consumer.
        node_ids: structural id of every pipeline node (its DFS position), used to key RNGs so
            that the same pipeline built twice draws the same numbers.
        epoch_folds: for nodes below a ``repeat``, how to turn the epoch they run in back
            into the iterator's epoch: the repeat counts on the way up (innermost first;
            -1 for an endless repeat). Nodes not listed run in the iterator's epochs.
        settings: the iterator's configuration (read from ``config`` now when None).
        plan: the pipeline's stages (see :mod:`.plan`); None in a worker process, which only
            runs tasks (stages are then planned when asked for, with no limits inside).
    """

    def __init__(
        self,
        seed: int,
        prefetch_size: int,
        node_ids: dict[int, int],
        profile: bool = False,
        tuner: Tuner | None = None,
        tuned: dict[str, dict[str, int]] | None = None,
        epoch_folds: dict[int, tuple[int, ...]] | None = None,
        settings: RunSettings | None = None,
        plan: Plan | None = None,
        make_pool: PoolFactory | None = None,
    ) -> None:
        self.seed = seed
        self._make_pool = make_pool or _thread_pool
        self.settings = settings or RunSettings.from_config()
        self.plan = plan if plan is not None else Plan([], [], node_ids)
        #: whether this context runs a whole pipeline (not a worker process's tasks): a
        #: source may then act on a whole epoch (reading its data ahead)
        self.drives = plan is not None
        # ops limited below their stage's width (an explicit num_parallel_workers): id -> slots;
        # when AutoTune or a saved tuning may widen stages, every op that has a limit
        limits = self.plan.call_limits if tuner is not None or tuned else self.plan.limits
        self.slots = {key: _slots(n) for key, n in limits.items()}
        self._epoch_folds = epoch_folds or {}
        # statistics are kept when profiling, and for AutoTune, which decides on them
        self.stats: dict[Any, StageStats] | None = {} if profile or tuner else None
        self.op_times = OpTimes(self.node_id) if profile else None  # ops in fused stages
        self.tuner = tuner
        self.tuned = tuned or {}  # stage id -> {"workers", "inflight"} from a saved tuning
        self.prefetch_size = prefetch_size
        self.stop = threading.Event()
        self._node_ids = node_ids
        self._pools: dict[Any, WorkerPool] = {}
        self._threads: list[threading.Thread] = []
        self._pid = os.getpid()  # a forked copy of this run owns none of its threads or workers
        self._lock = threading.Lock()
        self._cache: dict[Any, Any] = {}
        self._done_once: set[Any] = set()
        self._closers: list[Callable[[], None]] = []  # what stops with the run
        self.buffers = batch_buffers  # batch arrays, reused once the consumer drops them
        self.skipped = 0  # samples dropped by ops and source reads in "skip" error mode
        self.skipped_by_epoch: dict[int, int] = {}
        self.skip_examples: list[str] = []

    def node_id(self, node: object) -> int:
        return self._node_ids[id(node)]

    def pool(self, key: Any, name: str, workers: int, task: StageTask) -> Any:
        """The pool of one stage, created on first use and kept across epochs: threads, or
        worker processes when a node of the stage asked for ``python_multiprocessing``.

        Under a Ray executor (``config.set_executor``) every parallel stage runs on Ray actors,
        also one the plan gives a single local worker: a cluster may give it many."""
        processes = task.processes
        executor = self.settings.executor
        if executor is not None:
            return self._remote_pool(executor, (key, workers, processes), name, workers, task)
        with self._lock:
            if self.stop.is_set():  # shutting down: a pool made now would never be stopped
                raise Stopped
            pool = self._pools.get((key, workers, processes))
            if pool is None:
                pool = self._make_pool(name, workers, self, task)
                self._pools[(key, workers, processes)] = pool
            return pool

    def _remote_pool(
        self, executor: Any, key: Any, name: str, workers: int, task: StageTask
    ) -> Any:
        """The executor's pool of one stage, made outside the lock: connecting to a cluster
        may take seconds, and :meth:`shutdown` must not wait for that."""
        with self._lock:
            if self.stop.is_set():
                raise Stopped
            pool = self._pools.get(key)
        if pool is not None:
            return pool
        made = executor.pool(name, workers, self, task)
        with self._lock:
            pool = self._pools.get(key) if not self.stop.is_set() else None
            if pool is None and not self.stop.is_set():
                self._pools[key] = pool = made
        if pool is not made:  # another thread made it first, or the run is shutting down
            made.shutdown(0.0)
            if pool is None:
                raise Stopped
        return pool

    def stage_stats(self, key: Any, name: str, workers: int) -> StageStats | None:
        """The statistics of one stage (kept across epochs), or None when not profiling."""
        if self.stats is None:
            return None
        with self._lock:
            stats = self.stats.get(key)
            if stats is None:
                stats = self.stats[key] = StageStats(name, workers)
            return stats

    def worker_pids(self) -> list[int]:
        with self._lock:
            return [pid for pool in self._pools.values() for pid in getattr(pool, "pids", [])]

    def spawn(
        self,
        target: Callable[[], None],
        name: str,
        on_death: Callable[[BaseException], None] | None = None,
    ) -> threading.Thread:
        """Start a thread of this run running ``target``. Should it raise (anything but
        :class:`Stopped`), ``on_death(exc)`` hands the error to whoever waits on the thread
        (the iterator raises it instead of waiting forever); without one it is logged."""

        def guarded() -> None:
            try:
                target()
            except Stopped:
                pass
            except BaseException as exc:
                if on_death is None:
                    logger.error("jisu: thread jisu-%s failed", name, exc_info=exc)
                    return
                try:
                    on_death(exc)
                except Stopped:
                    pass

        thread = threading.Thread(target=guarded, name=f"jisu-{name}", daemon=True)
        with self._lock:
            if self.stop.is_set():
                raise Stopped
            self._threads.append(thread)
        thread.start()
        return thread

    def cached(self, key: Any, compute: Callable[[], Any], keep: int = 4) -> Any:
        """Thread-safe memo for per-epoch values (index orders); keeps the newest ``keep``."""
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        value = compute()
        with self._lock:
            self._cache.setdefault(key, value)
            while len(self._cache) > keep * 8:
                self._cache.pop(next(iter(self._cache)))
            return self._cache[key]

    def first_time(self, key: Any) -> bool:
        """True for the first caller with ``key`` in this run, False for every later one."""
        with self._lock:
            if key in self._done_once:
                return False
            self._done_once.add(key)
            return True

    def iterator_epoch(self, node: object, epoch: int) -> int:
        """The iterator's epoch that ``node``'s ``epoch`` belongs to: below a ``repeat`` each
        pass is a child epoch of its own (see ``repeat``'s ``child_epoch``)."""
        for count in self._epoch_folds.get(id(node), ()):
            epoch = epoch >> 32 if count < 0 else epoch // count
        return epoch

    def note_skip(self, message: str, epoch: int, node: object) -> None:
        """Count a sample dropped in "skip" error mode by ``node`` while it ran ``epoch`` (the
        first few messages are kept). Counts are kept per iterator epoch: workers run ahead
        into the next epoch, and the iterator reports an epoch's count only once it has
        reached that epoch."""
        epoch = self.iterator_epoch(node, epoch)
        with self._lock:
            self.skipped += 1
            self.skipped_by_epoch[epoch] = self.skipped_by_epoch.get(epoch, 0) + 1
            if len(self.skip_examples) < 3:
                self.skip_examples.append(message)

    def check(self) -> None:
        if self.stop.is_set():
            raise Stopped

    def put(self, q: queue.Queue, item: Any) -> None:
        """Put into a bounded queue, giving up when the iterator stops."""
        while True:
            try:
                q.put(item, timeout=POLL_S)
                return
            except queue.Full:
                self.check()

    def get(self, q: queue.Queue | queue.SimpleQueue) -> Any:
        """Get from a queue, giving up when the iterator stops."""
        while True:
            try:
                return q.get(timeout=POLL_S)
            except queue.Empty:
                self.check()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop every thread of this run and wait for them (idempotent). Nothing in a
        process forked from the one that started the run (its exit must not stop the
        parent's workers, nor wait on a lock a thread of the parent held at the fork)."""
        if os.getpid() != self._pid:
            return
        with interrupts_deferred():  # a Ctrl-C part way would leave threads running
            self._shutdown(timeout)

    def _shutdown(self, timeout: float) -> None:
        self.stop.set()
        with self._lock:
            threads, self._threads = self._threads, []
            pools, self._pools = list(self._pools.values()), {}
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(timeout)
                if thread.is_alive():
                    logger.warning(
                        "jisu: thread %s did not stop within %.0fs", thread.name, timeout
                    )
        for pool in pools:
            pool.shutdown(timeout)
        with self._lock:
            closers, self._closers = self._closers, []
        for close in closers:
            close()

    def on_shutdown(self, close: Callable[[], None]) -> None:
        """Run ``close()`` when this run shuts down (at once if it has already)."""
        with self._lock:
            if not self.stop.is_set():
                self._closers.append(close)
                return
        close()
