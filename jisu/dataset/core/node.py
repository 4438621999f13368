"""Dataset: the lazy, immutable description of a pipeline — the node contract the engine
uses, and the fluent methods (their implementations bound by :mod:`.bindings`).

A :class:`Dataset` is a node in a DAG. Methods such as :meth:`map` or :meth:`batch` return new
nodes; nothing runs until an iterator is created. A node is of one of two kinds, by type (as
grain separates ``MapDataset`` from ``IterDataset``):

* a **stream** computes the rows of one epoch in order: ``_stream_rows(ctx, epoch, start)`` for
  a node that runs inline, or the kernels of the stage it declares in ``stream_stage`` (see
  ``engine/plan.py``);
* a :class:`RandomAccess` node computes row ``index`` of an epoch independently of all other
  rows: ``_fetch(ctx, epoch, index)``, and ``_fetch_columns`` for a node that can gather a whole
  batch at once (NumPy arrays). A chain of them (source, shuffle, map, batch, ...) runs as one
  fused task per output row (or batch) on a worker pool, with sources read in parallel by index.

An op that can be either (a map is random access when its child is) declares its random-access
kernels as a :class:`RandomAccess` subclass in ``random_access_kernels``; its class then has an
``Indexed`` variant (the kernels mixed in), which is built instead when the node's inputs allow
(:meth:`Dataset._random_access`, checked by :meth:`Dataset._settle_kind`). Iterable sources
(generators) and row-dropping ops (filter, a map in "skip" error mode) are streams: after them
the per-row work (maps, batch assembly) is still done in parallel, in order.

Every random decision is drawn from an RNG keyed by (seed, epoch, row index, op), where the row
index is the row's position in the op's input for that epoch; so a seed gives the same output
whatever the number of workers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .. import config
from .access import RandomAccess, is_random_access
from .bindings import bound
from .fluent import PipelineOps
from .operation import op_name
from .validation import resolve_workers

if TYPE_CHECKING:
    from ..engine.context import ExecContext
    from ..engine.iterator import DatasetIterator


@dataclass(frozen=True)
class Parallelism:
    """How a node asks to run in parallel (the plan decides; see ``engine/plan.py``).

    Attributes:
        requested: the ``num_parallel_workers`` a user gave (None: left to jisu).
        workers: threads for the node's own parallel work (1 for a node that has none).
        processes: whether it asked for worker processes (``python_multiprocessing``).
        serial_reads: a source whose reads must not overlap (one reader at a time).
    """

    requested: int | None
    workers: int
    processes: bool
    serial_reads: bool


class Dataset(PipelineOps):
    """Base of every pipeline node. See the module docstring for the engine contract."""

    #: the op's random-access kernels (a :class:`RandomAccess` subclass), None for an op that
    #: is always a stream; a class with kernels gets an ``Indexed`` variant
    random_access_kernels: ClassVar[type[RandomAccess] | None] = None
    #: the random-access variant of this class (built from ``random_access_kernels``)
    Indexed: ClassVar[type[Dataset]]
    #: whether the node does parallel work of its own (and takes ``num_parallel_workers``)
    has_workers: bool = False
    #: workers when ``num_parallel_workers`` is None (None: ``config``'s default)
    default_workers: int | None = None
    #: the kind of stage the node runs as a stream (``"map"``, ``"batch"``, ``"filter"``; see
    #: ``engine/plan.py``), None: inline
    stream_stage: str | None = None
    #: the repeat count a node folds its input's epochs by (``repeat``), None for other ops
    epoch_fold: int | None = None
    #: whether the node may drop rows (a map or a source in error samples mode "skip")
    skip_errors: bool = False
    #: the columns the node's user code reads (a map's, a filter's), None: not such a node
    input_columns: Sequence[str] | None = None
    #: whether the node asked for worker processes
    python_multiprocessing: bool = False
    #: a source whose reads must not overlap (a generator)
    serial_reads: bool = False
    #: whether the node holds rows back until the training loop releases them (``sync_wait``):
    #: the stages above it take one item per task, as a bigger chunk could wait for an item
    #: that only comes out after the loop has seen the ones before it
    holds_rows: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kernels = cls.random_access_kernels
        if kernels is None or issubclass(cls, RandomAccess):
            return
        # same name as the op (errors and labels use it); found by pickle as ``<op>.Indexed``
        cls.Indexed = type(
            cls.__name__,
            (kernels, cls),
            {
                "__module__": cls.__module__,
                "__qualname__": f"{cls.__qualname__}.Indexed",
                "__doc__": cls.__doc__,
            },
        )

    def __new__(cls, *args: Any, **kwargs: Any) -> Dataset:
        # The kind is chosen here, before ``__init__`` sets any attribute: an object whose
        # class is changed afterwards loses CPython's fast attribute layout (measured 2x
        # slower attribute reads), and the per-row kernels read many attributes.
        if (
            cls.random_access_kernels is not None
            and not issubclass(cls, RandomAccess)
            and (args or kwargs)
            and cls._random_access(*args, **kwargs)
        ):
            cls = cls.Indexed
        return super().__new__(cls)

    @classmethod
    def _random_access(cls, *args: Any, **kwargs: Any) -> bool:
        """Whether a node built with these arguments is random access. By default: when its
        inputs (the first argument, a dataset or a list of datasets) all are."""
        inputs = args[0] if args else kwargs.get("child", kwargs.get("datasets"))
        if isinstance(inputs, (list, tuple)):
            return bool(inputs) and all(is_random_access(d) for d in inputs)
        return is_random_access(inputs)

    def _settle_kind(self, random_access: bool) -> None:
        """End of ``__init__``: the node's kind, now known for sure. It is normally the class
        :meth:`_random_access` chose; if that guess was wrong (a user's subclass of a source
        with other arguments), the class is corrected here (right, only slower)."""
        if random_access != isinstance(self, RandomAccess):
            kind = type(self).Indexed if random_access else type(self).__bases__[-1]
            self.__class__ = kind

    @property
    def rows_per_item(self) -> int:
        """Source rows behind one output row (a batch's size; 1 for row ops)."""
        return 1

    def __init__(self, children: Sequence[Dataset] = (), num_parallel_workers: int | None = None):
        self.children: tuple[Dataset, ...] = tuple(children)
        self.num_parallel_workers = num_parallel_workers
        self._columns: tuple[str, ...] = ()
        self._size_cache: int | None = None
        self._output_spec: tuple[list, list] | None = None

    # ----------------------------------------------------------------- engine contract
    @property
    def op_name(self) -> str:
        return type(self).__name__

    def _row_count(self) -> int | None:
        """Rows per epoch when known without running the pipeline; None otherwise."""
        raise NotImplementedError  # every node class defines it

    def _workers(self) -> int:
        """Threads for this node's own parallel work."""
        default = self.default_workers or config.get_num_parallel_workers()
        return resolve_workers(self.op_name, self.num_parallel_workers, default)

    def _stream(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        """Rows of one epoch from row ``start`` on (run as the plan says)."""
        return bound("run_stream")(ctx, self, epoch, start)

    def _stream_rows(self, ctx: ExecContext, epoch: int, start: int) -> Iterator[tuple]:
        """Rows of one epoch, for a node that runs inline as a stream (shuffle, repeat …)."""
        raise NotImplementedError  # every node that can run inline defines it

    @property
    def parallelism(self) -> Parallelism:
        """What the node asks for: workers, processes, serial reads."""
        requested = self.num_parallel_workers
        return Parallelism(
            requested if isinstance(requested, int) else None,
            self._workers() if self.has_workers else 1,
            bool(self.python_multiprocessing),
            bool(self.serial_reads),
        )

    def work_holds_gil(self) -> bool:
        """Whether this node's own work in a fetch task holds the GIL nearly all the time
        (index arithmetic, reads of small rows from local files, assembling batches of such
        rows), so that more threads would only take turns running it. The plan runs a fetch
        stage made only of such nodes on one thread unless a user asks for more (see
        ``engine/plan.py``). Nodes without parallel work of their own say yes; the others say
        no unless they know better (threads pay off for decoders, OpenCV and NumPy kernels,
        I/O waits)."""
        return not self.has_workers

    def functions(self) -> tuple[Any, ...]:
        """The user code the node runs (a map's operations, a filter's predicate …)."""
        return ()

    def describe(self, node_id: int | str | None = None) -> str:
        """The one label of the node in plans, profiles, the watchdog and worker errors: its
        op, structural id when given, and what it runs (``map#3(decode, resize)``)."""
        label = self.op_name if node_id is None else f"{self.op_name}#{node_id}"
        args = self._describe_args()
        return f"{label}({args})" if args else label

    def _describe_args(self) -> str:
        return ", ".join(op_name(f) for f in self.functions())

    def _own_batch_size(self) -> int | None:
        """The batch size of this node when it batches (``get_batch_size``), else None."""
        return None

    def _own_repeat_count(self) -> int | None:
        """The count of this node when it repeats (``get_repeat_count``), else None."""
        return None

    # ----------------------------------------------------------------- introspection
    def get_col_names(self) -> list[str]:
        """Names of the output columns."""
        return list(self._columns)

    def get_dataset_size(self) -> int:
        """Rows (batches, after ``batch``) per epoch. Runs the pipeline once if it must count."""
        size = self._row_count()
        if size is not None:
            return size
        if self._size_cache is None:
            iterator = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
            count = 0
            try:
                for _ in iterator:
                    count += 1
            finally:
                iterator.close()
            self._size_cache = count
        return self._size_cache

    def __len__(self) -> int:
        """Rows (batches, after ``batch``) per epoch, when known without running the pipeline
        (every random-access pipeline; a generator with ``__len__``). Otherwise a TypeError
        that names :meth:`get_dataset_size`, which counts by running one epoch."""
        size = self._row_count()
        if size is None:
            raise TypeError(
                f"len(): the size of this {self.op_name} pipeline is not known without running "
                "it (a stream, a filter, a callable batch size); get_dataset_size() counts it"
            )
        return size

    def __bool__(self) -> bool:
        return True  # a pipeline is a description: never falsy, even when empty or unsized

    def _spec(self, empty_ok: bool = False) -> tuple[list, list]:
        """The first row's shapes and dtypes, asked once and kept; ``([], [])`` for a pipeline
        that yields no row when ``empty_ok``, else a ValueError (a caller that needs a row to
        take a schema from)."""
        if self._output_spec is None:
            iterator = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
            try:
                row = next(iterator, None)
            finally:
                iterator.close()
            row = () if row is None else row  # a row has a column at least: () is no row
            self._output_spec = ([list(a.shape) for a in row], [a.dtype for a in row])
        if not self._output_spec[0] and not empty_ok:
            raise ValueError(f"{self.op_name}: the dataset is empty; it has no shapes")
        return self._output_spec

    def output_shapes(self, estimate: bool = False) -> list[list[int | None]]:
        """Shape of each output column, from the first row (MindSpore semantics); with
        ``estimate``, from every row of an epoch, a dimension that varies given as None.
        ``[]`` for a pipeline that yields no row, as MindSpore gives (a column of empty
        arrays has a shape with a 0 in it: ``[0]``)."""
        if not estimate:
            return [list(s) for s in self._spec(empty_ok=True)[0]]
        shapes: list[list[int | None]] | None = None
        iterator = self.create_tuple_iterator(num_epochs=1, output_numpy=True)
        try:
            for row in iterator:
                if shapes is None:
                    shapes = [list(a.shape) for a in row]
                    continue
                for k, a in enumerate(row):
                    if a.ndim != len(shapes[k]):
                        raise ValueError(
                            f"output_shapes: column '{self._columns[k]}' changes rank "
                            f"({len(shapes[k])} then {a.ndim}); it has no one shape"
                        )
                    shapes[k] = [d if d == e else None for d, e in zip(shapes[k], a.shape)]
        finally:
            iterator.close()
        # no row: no shapes (MindSpore 2.10 gives [] too after a batch, and without one fails
        # with its engine's "EOF buffer encountered")
        return [] if shapes is None else shapes

    def output_types(self) -> list[np.dtype]:
        """NumPy dtype of each output column, from the first row (``[]`` when no row)."""
        return list(self._spec(empty_ok=True)[1])

    def explain(self) -> str:
        """How this pipeline runs, as text: its parallel stages in data order, the ops each
        runs (a function by its name), their workers (threads or processes), the ops limited
        below their stage's width, and the fusion rule behind each stage (as Spark's or
        Polars' ``explain``)."""
        return bound("plan")(self).explain()

    def get_batch_size(self) -> int:
        """The batch size of the nearest ``batch`` below (1 if none; -1 for a callable batch
        size, as in MindSpore)."""
        node: Dataset = self
        while True:
            size = node._own_batch_size()
            if size is not None:
                return size
            if len(node.children) != 1:
                return 1
            node = node.children[0]

    def get_class_indexing(self) -> dict:
        """The class-name-to-label mapping of the source below (``{}`` when it has none)."""
        node: Dataset = self
        while len(node.children) == 1:
            node = node.children[0]
        own = type(node).get_class_indexing
        return (
            {} if node is self or own is Dataset.get_class_indexing else node.get_class_indexing()
        )

    def num_classes(self) -> int | None:
        """How many classes the source below has (None when it does not say)."""
        indexing = self.get_class_indexing()
        return len(indexing) if indexing else None

    def reset(self) -> None:
        """MindSpore's ``reset``: nothing to do in jisu, where a dataset is a description and
        every iterator starts from its own beginning (or from ``set_state``)."""

    def get_repeat_count(self) -> int:
        """The count of the nearest ``repeat`` below (1 if none, -1 if infinite)."""
        node: Dataset = self
        while True:
            count = node._own_repeat_count()
            if count is not None:
                return count
            if len(node.children) != 1:
                return 1
            node = node.children[0]

    # ----------------------------------------------------------------- iteration
    def create_tuple_iterator(
        self,
        columns: Sequence[str] | None = None,
        num_epochs: int = -1,
        output_numpy: bool = False,
        do_copy: bool = True,
    ) -> DatasetIterator:
        """An iterator over rows as lists of tensors (or NumPy arrays).

        The iterator ends (``StopIteration``) at the end of each epoch; iterating it again
        continues with the next epoch, up to ``num_epochs`` (-1: no limit). Workers keep
        preparing the next epoch meanwhile. Close it (or let it be garbage-collected) to stop
        its threads.
        """
        return bound("DatasetIterator")(self, columns, num_epochs, output_numpy, as_dict=False)

    def create_dict_iterator(
        self, num_epochs: int = -1, output_numpy: bool = False, do_copy: bool = True
    ) -> DatasetIterator:
        """Like :meth:`create_tuple_iterator`, with rows as ``{column: value}`` dicts."""
        return bound("DatasetIterator")(self, None, num_epochs, output_numpy, as_dict=True)

    def __iter__(self) -> Iterator[list]:
        return self.create_tuple_iterator(num_epochs=1)

    def __repr__(self) -> str:
        return f"<{self.op_name} columns={list(self._columns)}>"
