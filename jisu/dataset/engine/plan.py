"""The plan: which stages a pipeline runs, which ops each runs, on how many workers, and why.

:func:`plan` turns a pipeline (a DAG of :class:`~jisu.dataset.datasets.Dataset` nodes) into
stages once per iterator run; the nodes that start stages ask the plan for theirs
(``ctx.plan.stage(node, kind)``) instead of deciding for themselves, and the profiler, ``explain()``
and ``jisu doctor`` describe the same plan. The fusion rules live here, one function each:

* **fetch** — a random-access subtree (sources read by index, and the maps, batch, shuffle,
  shard, zip, concat … above them) runs fused: one task computes whole output rows or
  batches, so a sample crosses no queue between its read and its batch.
* **map** — consecutive maps after a stream (a generator, a filter) run as one task per chunk
  of rows.
* **batch** — a batch after a stream runs the maps right below it inside its task (one task
  per batch), unless one of them may drop samples (error samples mode "skip"): the batch must
  then be filled after them.
* **filter** — a filter runs its predicate in a stage of its own.
* **read** — a random-access source in "skip" mode reads by index in a stage of its own (rows
  that fail to read vanish, so the nodes above see a stream).

Everything else (shuffle, repeat, shard, take, skip, project, rename, zip or concat of streams,
an iterable source) runs inline on the thread that pulls its rows: the driver, or the feeder
thread of the stage above. Each op declares the kind of stage it runs as a stream
(``stream_stage``, None: inline); :mod:`.stage_runs` runs each kind.

Workers: a stage runs as wide as the widest of its ops. An op given an explicit
``num_parallel_workers`` narrower than its stage is never run by more than that many workers
at once: in a thread stage its calls are limited inside the stage (the other ops still run
wide); a stage of worker processes is narrowed to it (a limit cannot span processes cheaply).
A fetch stage of threads whose every op's work holds the GIL (``Dataset.work_holds_gil``:
reads of small rows from local files, batch assembly, index ops) runs on one thread, or as many
as an op's explicit ``num_parallel_workers`` asks: more threads would only take turns (on 2
cores two threads read 4 KiB record rows at 0.6x the rate of one).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.access import is_random_access
from ..core.cpus import available_cpus
from ..core.tuning import tuned_stage
from .tasks import walk

if TYPE_CHECKING:
    from ..core.node import Dataset

FETCH, MAP, BATCH, FILTER, READ = "fetch", "map", "batch", "filter", "read"

_WHY = {
    FETCH: "random access: the source is read by index and the ops above it run fused, "
    "one task per output row (or batch)",
    MAP: "maps after a stream: consecutive maps run fused, one task per chunk of rows",
    BATCH: "batch after a stream: the maps right below run inside its task, one task per batch",
    FILTER: "filter: its predicate runs in a stage of its own",
    READ: 'a random-access source in error samples mode "skip": read by index in a stage of '
    "its own (a row that fails to read vanishes, so the ops above see a stream)",
}


# ---------------------------------------------------------------------- fusion rules
def _is_map(node: Dataset) -> bool:
    return node.stream_stage == MAP


def stream_map_chain(node: Dataset) -> tuple[list[Dataset], Dataset]:
    """Rule **map**: the consecutive stream maps ending at ``node`` (bottom first), and the
    node that feeds them."""
    chain = [node]
    below = node.children[0]
    while _is_map(below) and not is_random_access(below):
        chain.append(below)
        below = below.children[0]
    chain.reverse()
    return chain, below


def batch_map_chain(node: Dataset) -> tuple[list[Dataset], Dataset]:
    """Rule **batch**: the stream maps run inside a stream batch's task, and the node that
    feeds them (none when one of them may drop samples)."""
    child = node.children[0]
    if _is_map(child) and not is_random_access(child):
        chain, base = stream_map_chain(child)
        if not any(m.skip_errors for m in chain):
            return chain, base
    return [], child


def fetch_maps(node: Dataset) -> tuple[list[Dataset], Dataset]:
    """Inside a fetch task, the maps right below a random-access batch are applied per row by
    the batch (so it can write their last elementwise op straight into the batch array);
    returns them (bottom first) and the node below them."""
    chain, below = [], node.children[0]
    while _is_map(below):
        chain.append(below)
        below = below.children[0]
    chain.reverse()
    return chain, below


def fetch_nodes(root: Dataset) -> list[Dataset]:
    """Rule **fetch**: the nodes a fetch task rooted at ``root`` computes (post-order)."""
    return [n for n in walk(root) if is_random_access(n)]


# ---------------------------------------------------------------------- structure
def node_ids(root: Dataset) -> dict[int, int]:
    """Structural ids: each node's position in a post-order walk (children before parents).

    A node's id depends only on the nodes below it and on its left, so adding ops on top of a
    pipeline (a batch, a take) does not change the random draws of the ops below.
    """
    ids: dict[int, int] = {}

    def visit(node: Dataset) -> None:
        if id(node) in ids:
            return
        for child in node.children:
            visit(child)
        ids[id(node)] = len(ids) + 1

    visit(root)
    return ids


def epoch_folds(root: Dataset) -> dict[int, tuple[int, ...]]:
    """For every node below a ``repeat``: the repeat counts between it and the root, innermost
    first (see :meth:`ExecContext.iterator_epoch`). A node reached by two paths (``s +
    s.repeat(2)``) keeps the folds of the first: its skips on the other path are then counted
    in another epoch (a known limit; counts stay right for every tree-shaped pipeline)."""
    folds: dict[int, tuple[int, ...]] = {}

    def visit(node: Dataset, above: tuple[int, ...]) -> None:
        if id(node) in folds:
            return
        if above:
            folds[id(node)] = above
        fold = node.epoch_fold
        for child in node.children:
            visit(child, above if fold is None else (fold, *above))

    visit(root, ())
    return folds


def batch_rows(root: Dataset) -> dict[int, int]:
    """For every node: the rows of one batch of the nearest batch above it along single-child
    links (1 when none, or above a ``zip``/``concat``, or for a batch of callable size). A
    ``sync_wait`` point counts the batches it lets through in these rows."""
    rows: dict[int, int] = {}

    def visit(node: Dataset, size: int) -> None:
        if id(node) in rows:
            return
        rows[id(node)] = size
        own = node._own_batch_size()  # -1 for a callable size: counted as rows
        single = size if len(node.children) == 1 else 1
        below = single if own is None else max(own, 1)
        for child in node.children:
            visit(child, below)

    visit(root, 1)
    return rows


# ---------------------------------------------------------------------- the plan
def explicit_workers(node: Dataset) -> int | None:
    """The ``num_parallel_workers`` a user gave ``node`` (None when left to jisu)."""
    return node.parallelism.requested


def op_label(node: Dataset, ids: dict[int, int] | None) -> str:
    """How plans and profiles name a node: :meth:`Dataset.describe` with its structural id
    (none when ``ids`` is None)."""
    return node.describe(None if ids is None else ids.get(id(node), "?"))


@dataclass
class Stage:
    """One parallel stage of a plan.

    Attributes:
        kind: the fusion rule that made it (``fetch``, ``map``, ``batch``, ``filter``, ``read``).
        owner: the node whose task method the stage runs.
        ops: the nodes whose code runs in the stage's tasks, in data order.
        feed: the stream node whose rows feed the stage (None: it reads by index).
        inline: nodes run on the stage's feeder thread while it pulls ``feed``'s rows.
        workers: how many tasks run at once.
        processes: whether they run in worker processes (else threads).
        limits: ``id(node)`` -> the most calls of that node's code at once, for ops whose
            explicit ``num_parallel_workers`` is below ``workers``.
        reasons: why it runs as it does, for :meth:`Plan.explain`.
        call_limits: ``id(node)`` -> the most calls at once for every op that has such a
            limit, also those at the stage's width (enforced when AutoTune may widen it).
        max_workers: the most workers AutoTune (or a saved tuning) may give a stage of worker
            processes (an op's explicit ``num_parallel_workers``; threads are limited inside).
    """

    kind: str
    owner: Any
    ops: list[Any]
    feed: Any
    workers: int
    processes: bool
    limits: dict[int, int] = field(default_factory=dict)
    inline: list[Any] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    name: str = ""
    call_limits: dict[int, int] = field(default_factory=dict)
    max_workers: int | None = None
    #: the smallest explicit ``num_parallel_workers`` of its ops (None: none has one); an
    #: executor never runs more workers than that
    explicit: int | None = None

    def inflight(self, prefetch_size: int) -> int:
        """The most items submitted to the stage's workers but not yet consumed: its workers'
        worth and about ``prefetch_size`` rows ahead (a batch stage: one batch ahead)."""
        if self.kind == FETCH:
            return self.workers + -(-prefetch_size // self.owner.rows_per_item)
        if self.kind == BATCH:
            return self.workers + 1
        if self.kind == READ:
            return self.workers + prefetch_size
        return self.owner.parallelism.workers + prefetch_size  # map, filter: the op's own


@dataclass
class Plan:
    """The stages of one pipeline, in data order (a stage's feed comes from earlier ones), and
    the nodes the driver thread runs inline."""

    stages: list[Stage]
    driver: list[Any]
    ids: dict[int, int]  # structural id of every node (see :func:`node_ids`)
    folds: dict[int, tuple[int, ...]] = field(default_factory=dict)  # see :func:`epoch_folds`
    batch_rows: dict[int, int] = field(default_factory=dict)  # see :func:`batch_rows`

    def __post_init__(self) -> None:
        self._by_owner = {(id(s.owner), s.kind): s for s in self.stages}
        self.limits = {k: v for s in self.stages for k, v in s.limits.items()}
        self.call_limits = {k: v for s in self.stages for k, v in s.call_limits.items()}
        self._op_stage = {id(n): s for s in self.stages for n in s.ops}
        self._owner_stage = {id(s.owner): s for s in self.stages}

    def stage(self, owner: Any, kind: str) -> Stage:
        """The stage of ``kind`` whose task ``owner`` runs (planned when not in the plan: a
        node run outside its planned position, as ``get_dataset_size`` counting a part)."""
        found = self._by_owner.get((id(owner), kind))
        if found is None:
            found = _make_stage(kind, owner, self.ids)
            self._by_owner[(id(owner), kind)] = found
            self._owner_stage.setdefault(id(owner), found)
        return found

    def owned_by(self, owner: Any) -> Stage | None:
        """The stage whose task ``owner`` runs (None when it runs none)."""
        return self._owner_stage.get(id(owner))

    def rows_per_batch(self, node: Any) -> int:
        """The rows of one batch of the nearest batch above ``node`` (1 when none)."""
        return self.batch_rows.get(id(node), 1)

    def shape(
        self, stage: Stage, prefetch_size: int, tuned: dict[str, int] | None, cpus: int
    ) -> tuple[int, int]:
        """``(workers, inflight)`` of one run of ``stage``: as planned, or as a saved AutoTune
        result ``tuned`` has them (checked when it was loaded; clamped to ``cpus`` and to the
        ops' explicit ``num_parallel_workers``). The one place a run's width is decided."""
        workers, inflight = stage.workers, stage.inflight(prefetch_size)
        if tuned is None:
            return workers, inflight
        return tuned_stage(stage.name, tuned, workers, inflight, stage.max_workers, cpus)

    def stage_of_op(self, node: Any) -> Stage | None:
        """The stage that runs ``node``'s code (None for nodes run inline)."""
        return self._op_stage.get(id(node))

    def label(self, node: Any) -> str:
        return op_label(node, self.ids)

    def title(self, stage: Stage) -> str:
        """A stage named by its ops, in data order: ``GeneratorDataset -> map(decode) ->
        batch(32)``."""
        return " -> ".join(op_label(n, None) for n in stage.ops)

    def explain(self) -> str:
        """The plan as text: each stage with its ops, workers and the rule that made it."""
        owners = {id(s.owner): s for s in self.stages}
        count = len(self.stages)
        lines = [f"Plan: {count} parallel stage{'s' if count != 1 else ''}, in data order"]
        for k, s in enumerate(self.stages, 1):
            kind = "worker process" if s.processes else "thread"
            if s.workers > 1:
                kind += "es" if s.processes else "s"
            lines.append(f"{k}. stage {s.name} ({s.kind}): {s.workers} {kind}")
            for node in s.ops:
                lines.append(f"     runs    {self.label(node)}{_limit_note(s, node)}")
            if s.inline:
                names = " -> ".join(self.label(n) for n in s.inline)
                lines.append(f"     feeder  one thread runs {names}")
            elif s.feed is not None and id(s.feed) in owners:
                lines.append(f"     fed by  stage {owners[id(s.feed)].name}")
            for reason in s.reasons:
                lines.append(f"     why     {reason}")
        if self.driver:
            names = " -> ".join(self.label(n) for n in self.driver)
            lines.append(f"driver thread runs {names}, and hands rows to the iterator")
        else:
            lines.append("driver thread hands the last stage's rows to the iterator")
        return "\n".join(lines)


def _limit_note(stage: Stage, node: Any) -> str:
    limit = stage.limits.get(id(node))
    if limit is None:
        return ""
    return (
        f"  [at most {limit} at once: its num_parallel_workers]"
        if explicit_workers(node) is not None
        else f"  [at most {limit} at once: reads of a Python source are serial]"
    )


def _width(node: Dataset) -> int:
    return node.parallelism.workers


def _make_stage(kind: str, owner: Any, ids: dict[int, int]) -> Stage:
    """The stage of ``kind`` run by ``owner``: its ops, feed, width and limits."""
    if kind == FETCH:
        ops, feed = fetch_nodes(owner), None
    elif kind == MAP:
        ops, feed = stream_map_chain(owner)
    elif kind == BATCH:
        chain, feed = batch_map_chain(owner)
        ops = [*chain, owner]
    elif kind == FILTER:
        ops, feed = [owner], owner.children[0]
    else:  # READ
        ops, feed = [owner], None
    widths = [_width(n) for n in ops]
    workers = max(widths)
    processes = any(n.parallelism.processes for n in ops)
    reasons = [_WHY[kind]]
    if kind == FETCH and not processes and workers > 1 and all(n.work_holds_gil() for n in ops):
        asked = max((w for w in map(explicit_workers, ops) if w is not None), default=1)
        if asked < workers:
            workers = asked
            reasons.append(
                f"{asked} thread{'s' if asked > 1 else ''}, not {max(widths)}: its work holds "
                "the GIL (reads of small rows from local files, batch assembly), so more "
                "threads would take turns, not run at once; num_parallel_workers asks for more"
            )
    maps = [explicit_workers(n) for n in ops if n.op_name == "map"]
    if not processes and maps and None not in maps and max(maps) < workers:
        # the maps are the stage's work: more threads than they may use would only take
        # turns at their limit, once per row (two threads for a map of 1 at 32x32 JPEGs
        # took 7.2-7.7 ms of CPU and 6.3-6.7 ms a batch, one thread 3.6-4.3 and 3.5-4.3)
        workers = max(maps)
        reasons.append(
            f"{workers} thread{'s' if workers > 1 else ''}, not {max(widths)}: every map in it "
            "names its num_parallel_workers, and the other ops follow the maps"
        )
    stage = Stage(kind, owner, ops, feed, workers, processes, reasons=reasons)
    stage.name = f"{owner.op_name}#{ids.get(id(owner), '?')}"
    explicit = [w for w in map(explicit_workers, ops) if w is not None]
    stage.explicit = min(explicit) if explicit else None
    call_limits = {id(n): _call_limit(n) for n in ops}
    call_limits = {k: v for k, v in call_limits.items() if v is not None}
    limits = {k: v for k, v in call_limits.items() if v < workers}
    if processes:
        # Each worker process has its own copy of the ops (a Python source's reads are then
        # not shared), and a limit cannot span processes cheaply: an explicit
        # num_parallel_workers below the stage's width narrows the stage instead.
        chosen = [n for n in ops if explicit_workers(n) is not None and id(n) in limits]
        if chosen:
            narrow = min(limits[id(n)] for n in chosen)
            names = [op_label(n, ids) for n in chosen if limits[id(n)] == narrow]
            processes_text = "1 worker process" if narrow == 1 else f"{narrow} worker processes"
            stage.reasons.append(
                f"{processes_text}, not {workers}: {', '.join(names)} asked for "
                f"num_parallel_workers={narrow}"
            )
            stage.workers = narrow
        stage.max_workers = stage.explicit
        return stage
    stage.call_limits = call_limits
    if limits:
        stage.limits = limits
        widest = [op_label(n, ids) for n, w in zip(ops, widths) if w == workers]
        stage.reasons.append(
            f"{workers} workers, as its widest op ({', '.join(widest)}); the ops marked "
            "'at most' are limited inside the stage"
        )
    return stage


def _call_limit(node: Any) -> int | None:
    """The most calls of ``node``'s code at once that its user allows: an explicit
    ``num_parallel_workers``; a Python source's reads are serial unless told otherwise."""
    explicit = explicit_workers(node)
    if explicit is not None:
        return explicit
    return 1 if node.parallelism.serial_reads else None


#: pipelines whose reduced worker counts were logged (once per pipeline, not per iterator)
_CLAMPS_LOGGED: weakref.WeakSet = weakref.WeakSet()


def log_clamped_workers(root: Dataset) -> None:
    """One line (logger ``jisu.dataset``, WARNING) naming the ops of ``root``'s pipeline whose
    ``num_parallel_workers`` exceeds the CPUs this process may use and which run with that
    many instead (MindSpore refuses such a count; jisu reduces it, so code written for a
    bigger machine runs): said once per pipeline, when it is first planned."""
    if root in _CLAMPS_LOGGED:
        return
    _CLAMPS_LOGGED.add(root)
    cpus = available_cpus()
    clamped = [
        f"{op_label(node, None)} asked for {node.parallelism.requested}"
        for node in walk(root)
        if (node.parallelism.requested or 0) > cpus
    ]
    if clamped:
        logging.getLogger("jisu.dataset").warning(
            "num_parallel_workers reduced to the %d CPUs this process may use: %s",
            cpus,
            "; ".join(clamped),
        )


def plan(root: Dataset) -> Plan:
    """The stages of the pipeline ``root``, run once per iterator."""
    log_clamped_workers(root)
    ids = node_ids(root)
    stages: list[Stage] = []
    seen: set[int] = set()

    def pull(node: Dataset, inline: list[Any]) -> None:
        """``node``'s rows are pulled as a stream by the thread whose inline list is given."""
        if id(node) in seen:
            return
        seen.add(id(node))
        kind = FETCH if is_random_access(node) else node.stream_stage
        if kind is None:  # run inline by the thread that pulls its rows
            inline.append(node)
            for child in node.children:
                pull(child, inline)
            return
        stage = _make_stage(kind, node, ids)
        if stage.feed is not None:
            pull(stage.feed, stage.inline)
        stages.append(stage)

    driver: list[Any] = []
    pull(root, driver)
    for stage in stages:
        stage.inline.reverse()  # data order: the feed's source first
    driver.reverse()
    return Plan(stages, driver, ids, epoch_folds(root), batch_rows(root))
