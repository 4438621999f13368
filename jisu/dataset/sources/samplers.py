"""Samplers: which source indices an epoch reads, in which order (MindSpore's samplers)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from enum import Enum
from typing import Any

import numpy as np

from ..core.error_types import PipelineValueError, checked_at_run_time
from ..core.rng import epoch_rng_origin
from ..core.validation import check_int, resolve_shards
from .std_random import StdMt19937


def check_bool(op: str, name: str, value: Any) -> bool:
    """``value`` is a bool (MindSpore 2.10 refuses 1 or "a" with a TypeError)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {name} must be a bool. Received: {name}={value!r}")
    return bool(value)


def check_indices(op: str, indices: Any) -> np.ndarray:
    """A list (or 1-D array) of row indices as int64, every one an int as MindSpore requires.

    Raises:
        TypeError: an index that is not an int (``1.5``, ``"a"``, a nested list or row).
    """
    values = indices if isinstance(indices, np.ndarray) else list(indices)
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    for k, i in enumerate(values):
        if not isinstance(i, (int, np.integer)):
            raise TypeError(
                f"{op}: every index must be an int. Received: indices[{k}]={i!r} "
                f"({type(i).__name__})"
            )
    return np.asarray(values, dtype=np.int64).reshape(-1)


class Shuffle(str, Enum):
    """Shuffle levels of a file-backed source (``mindspore.dataset.Shuffle``)."""

    GLOBAL = "global"  #: every row in a new random order each epoch
    FILES = "files"  #: the files in a new random order; rows in file order
    INFILE = "infile"  #: the files in order; rows shuffled within each file


class Sampler:
    """Chooses the indices of a random-access source for one epoch.

    Subclasses define ``_all(n, rng)`` (every index of an epoch, in order) and
    ``_count_all(n)`` (how many); ``indices(n, rng)`` must be a pure function of ``n`` and
    ``rng`` (the engine passes a generator keyed by seed and epoch), so that every worker and
    every restart agrees.

    A user's sampler (MindSpore's way) subclasses this and defines only ``__iter__``, reading
    ``self.dataset_size``; its indices are then the user's to make deterministic.

    ``add_child(sampler)`` chains samplers as MindSpore does: the child picks from the source,
    and this sampler picks positions in the child's output.
    """

    #: whether :meth:`indices` needs the source's class labels (``labels``)
    needs_labels = False

    def __init__(self, num_samples: int | None = None) -> None:
        self.num_samples = (
            check_int(type(self).__name__, "num_samples", num_samples, minimum=0, allow_none=True)
            or None
        )
        self.child: Sampler | None = None
        self.dataset_size: int | None = None  # what a user's __iter__ reads
        self._counted: dict[tuple, int] = {}  # (n, id(labels)) -> rows per epoch

    def add_child(self, sampler: Sampler) -> None:
        """Sample from ``sampler``'s output instead of from the source directly."""
        if not isinstance(sampler, Sampler):
            raise TypeError(
                f"{type(self).__name__}.add_child: sampler must be a jisu Sampler. "
                f"Received: {sampler!r}"
            )
        if self.child is not None:
            raise ValueError(f"{type(self).__name__}.add_child: the sampler has a child already")
        chain = sampler
        while chain is not None:
            if chain is self:
                raise ValueError(f"{type(self).__name__}.add_child: that would make a cycle")
            chain = chain.child
        self.child = sampler

    def get_child(self) -> Sampler | None:
        return self.child

    def parse(self) -> Sampler:
        """The sampler the engine runs: this one (MindSpore's ``parse()`` builds its C++
        sampler object, which scripts only pass back to MindSpore; jisu's engine runs the
        Python sampler itself)."""
        return self

    @property
    def uses_labels(self) -> bool:
        """Whether this sampler or one it chains to needs the source's class labels."""
        return self.needs_labels or (self.child is not None and self.child.uses_labels)

    def _user_iter(self) -> bool:
        return type(self).__iter__ is not Sampler.__iter__

    @property
    def stateful(self) -> bool:
        """Whether this sampler or one it chains to is a user's (its own ``__iter__``), whose
        indices may change after :meth:`reset`: the engine then draws its epochs in turn."""
        return self._user_iter() or (self.child is not None and self.child.stateful)

    def reset(self) -> None:
        """Called after every epoch (every pass of a ``repeat``) has drawn its indices, as in
        MindSpore; a user's sampler overrides it to change what its next ``__iter__`` gives.
        Each iterator resets its own copy of the sampler, never the object passed in."""

    def reset_chain(self) -> None:
        """:meth:`reset` this sampler, then the ones it chains to (MindSpore's order)."""
        self.reset()
        if self.child is not None:
            self.child.reset_chain()

    def __iter__(self):
        raise TypeError(f"{type(self).__name__} is a jisu sampler; the engine draws its indices")

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self._user_iter():  # a user's sampler: its __iter__ gives the indices
            self.dataset_size = n
            return np.fromiter((int(i) for i in iter(self)), dtype=np.int64)
        raise NotImplementedError  # each sampler defines its order

    def _count_all(self, n: int) -> int:
        raise NotImplementedError  # each sampler defines its count

    def indices(
        self, n: int, rng: np.random.Generator, labels: np.ndarray | None = None
    ) -> np.ndarray:
        """Source indices of one epoch of a source of ``n`` rows (``labels``: the source's
        class label per row, for samplers that need them)."""
        if self.child is not None:
            child_rng, rng = (np.random.default_rng(s) for s in rng.integers(0, 2**63, 2))
            base = self.child.indices(n, child_rng, labels)
            positions = self._own(len(base), rng, None if labels is None else labels[base])
            return base[positions]
        return self._own(n, rng, labels)

    def _own(self, n: int, rng: np.random.Generator, labels: np.ndarray | None) -> np.ndarray:
        order = self._draw(n, rng, labels)
        return order if self.num_samples is None else order[: self.num_samples]

    def _draw(self, n: int, rng: np.random.Generator, labels: np.ndarray | None) -> np.ndarray:
        return np.asarray(self._all(n, rng), dtype=np.int64)

    def count(self, n: int, labels: np.ndarray | None = None) -> int:
        """Rows per epoch for a source of ``n`` rows (cheap: called per row by the engine, so
        computed once per source)."""
        key = (n, None if labels is None else id(labels))
        counted = self._counted.get(key)
        if counted is None:
            if self.child is not None or self.uses_labels or self._user_iter():
                counted = len(self.indices(n, np.random.default_rng(0), labels))  # drawn once
            else:
                total = self._count_all(n)
                counted = total if self.num_samples is None else min(total, self.num_samples)
            self._counted[key] = counted
        return counted


class SequentialSampler(Sampler):
    """Indices ``start_index, start_index + 1, ...``."""

    def __init__(self, start_index: int | None = None, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        with checked_at_run_time():  # MindSpore checks it when the pipeline runs
            self.start_index = check_int("SequentialSampler", "start_index", start_index or 0, 0)

    def _check_start(self, n: int) -> None:
        if self.start_index and self.start_index >= n:  # MindSpore 2.10: a RuntimeError
            raise PipelineValueError(
                f"SequentialSampler: start_index must be less than the source's {n} rows. "
                f"Received: start_index={self.start_index}"
            )

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        self._check_start(n)
        return np.arange(self.start_index, n)

    def _count_all(self, n: int) -> int:
        self._check_start(n)
        return max(0, n - self.start_index)


class RandomSampler(Sampler):
    """A random permutation (or draws with replacement), new every epoch."""

    def __init__(
        self,
        replacement: bool = False,
        num_samples: int | None = None,
        shuffle: Shuffle = Shuffle.GLOBAL,
    ) -> None:
        """``shuffle``: a :class:`Shuffle` level, as MindSpore 2.10's (a bool is a TypeError).
        ``Shuffle.GLOBAL`` (default) permutes all rows; ``FILES`` and ``INFILE`` give a source
        made of files (MindDataset) that file-level shuffle instead, and are refused with a
        RuntimeError when any other source is built with the sampler."""
        super().__init__(num_samples)
        self.replacement = check_bool("RandomSampler", "replacement", replacement)
        if isinstance(shuffle, bool) or shuffle not in tuple(Shuffle):  # MindSpore: TypeError
            raise TypeError(
                f"RandomSampler: shuffle must be a Shuffle level (Shuffle.GLOBAL, FILES, "
                f"INFILE). Received: shuffle={shuffle!r}"
            )
        self.shuffle = shuffle

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.replacement:
            return rng.integers(0, n, size=self.num_samples or n)
        return rng.permutation(n)

    def _count_all(self, n: int) -> int:
        return (self.num_samples or n) if self.replacement else n


class DistributedSampler(Sampler):
    """One shard of (optionally shuffled) indices.

    With ``offset=-1`` (the default) every shard gets ``ceil(n / num_shards)`` indices, short
    shards wrapping around to the first ones, so that all ranks run the same number of steps.
    With ``offset >= 0`` (MindSpore's meaning) position ``i`` goes to shard
    ``(i + offset) % num_shards`` and nothing wraps: shards may differ by one.
    """

    def __init__(
        self,
        num_shards: int,
        shard_id: int,
        shuffle: bool = True,
        num_samples: int | None = None,
        offset: int = -1,
    ) -> None:
        super().__init__(num_samples)
        with checked_at_run_time():  # MindSpore checks them when the pipeline runs
            shards = resolve_shards("DistributedSampler", num_shards, shard_id)
        self.num_shards, self.shard_id = shards
        self.shuffle = check_bool("DistributedSampler", "shuffle", shuffle)
        self.offset = check_int("DistributedSampler", "offset", offset, minimum=-1)
        if self.offset > self.num_shards:  # MindSpore 2.10: a RuntimeError when it runs
            raise PipelineValueError(
                f"DistributedSampler: offset must be no more than num_shards ({self.num_shards})."
                f" Received: offset={offset}"
            )

    def _positions(self, n: int) -> np.ndarray:
        if self.offset < 0:
            from ..core.order import shard_positions

            return shard_positions(n, self.num_shards, self.shard_id)
        first = (self.shard_id - self.offset) % self.num_shards
        return np.arange(first, n, self.num_shards, dtype=np.int64)

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        return order[self._positions(n)]

    def _count_all(self, n: int) -> int:
        return len(self._positions(n))


class SubsetSampler(Sampler):
    """The given indices, in the given order."""

    def __init__(self, indices: Sequence[int], num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.subset = check_indices("SubsetSampler", indices)

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.subset

    def _count_all(self, n: int) -> int:
        return len(self.subset)


class SubsetRandomSampler(SubsetSampler):
    """The given indices in a new random order every epoch."""

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.permutation(self.subset)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    def __init__(
        self, weights: Sequence[float], num_samples: int | None = None, replacement: bool = True
    ) -> None:
        super().__init__(num_samples)
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or len(w) == 0 or np.any(w < 0) or w.sum() <= 0:
            raise PipelineValueError(  # MindSpore: a RuntimeError when the pipeline runs
                "WeightedRandomSampler: weights must be a non-empty list of "
                f"non-negative numbers with a positive sum. Received: {weights!r}"
            )
        self.weights = w / w.sum()
        self.replacement = bool(replacement)

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        size = self.num_samples or len(self.weights)
        return rng.choice(len(self.weights), size=size, replace=self.replacement, p=self.weights)

    def _count_all(self, n: int) -> int:
        return self.num_samples or len(self.weights)


class PKSampler(Sampler):
    """``num_val`` samples of every class (MindSpore's rule): the classes in label order (a
    random order with ``shuffle``, drawn once per iterator), each sample drawn uniformly, with
    replacement, among the rows of its class. For sources that know their rows' classes
    without reading them (Mnist, Cifar, ImageFolder …); ``class_column`` names the label
    column. In a pipeline the draws are MindSpore 2.10's own for the seed (its C++
    ``std::mt19937``, seeded with the seed plus the epoch): the same rows as MindSpore."""

    needs_labels = True

    def __init__(
        self,
        num_val: int,
        num_class: int | None = None,
        shuffle: bool = False,
        class_column: str = "label",
        num_samples: int | None = None,
    ) -> None:
        super().__init__(num_samples)
        self.num_val = check_int("PKSampler", "num_val", num_val, minimum=1)
        if num_class is not None:
            raise NotImplementedError("PKSampler: num_class is not supported (as in MindSpore)")
        if not isinstance(shuffle, bool):
            raise TypeError(f"PKSampler: shuffle must be a bool. Received: shuffle={shuffle!r}")
        if not isinstance(class_column, str):
            raise TypeError(
                f"PKSampler: class_column must be a str. Received: class_column={class_column!r}"
            )
        self.shuffle = shuffle
        self.class_column = class_column

    def _draw(self, n: int, rng: np.random.Generator, labels: np.ndarray | None) -> np.ndarray:
        if labels is None:
            raise ValueError("PKSampler: the source gives no class labels")
        classes, inverse = np.unique(np.asarray(labels)[:n], return_inverse=True)
        members = np.argsort(inverse, kind="stable")  # rows grouped by class, in row order
        bounds = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(classes)))])
        origin = epoch_rng_origin(rng)
        if origin is not None:  # an epoch of a pipeline: MindSpore's own draws for its seed
            seed, epoch = origin
            return self._mindspore_draw(members, bounds, seed, epoch)
        order = rng.permutation(len(classes)) if self.shuffle else range(len(classes))
        picks = [
            members[bounds[c] + rng.integers(0, bounds[c + 1] - bounds[c], self.num_val)]
            for c in order
        ]
        return np.concatenate(picks) if picks else np.zeros(0, dtype=np.int64)

    def _mindspore_draw(
        self, members: np.ndarray, bounds: np.ndarray, seed: int, epoch: int
    ) -> np.ndarray:
        """MindSpore 2.10's rows: a ``std::mt19937`` seeded with the seed orders the classes
        once (sorted, or shuffled with ``shuffle``) and draws epoch 0's rows; epoch ``e``
        draws from one seeded with ``seed + e``, in that same class order."""
        gen = StdMt19937(seed)
        order = range(len(bounds) - 1)
        if self.shuffle:
            order = gen.shuffle(order)
        if epoch:
            gen = StdMt19937(seed + epoch)
        picks = [
            members[bounds[c] + gen.uniform(0, int(bounds[c + 1] - bounds[c]) - 1)]
            for c in order
            for _ in range(self.num_val)
        ]
        return np.asarray(picks, dtype=np.int64)


class IterableSampler(Sampler):
    """Any iterable of indices (a list, a ``torch.utils.data.Sampler``), read each epoch; with
    ``num_samples``, its first ``num_samples`` indices (MindSpore's ``sampler=[...]`` with a
    source's ``num_samples``)."""

    def __init__(self, source: Iterable[int], num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.source = source
        self._length: int | None = None

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.fromiter((int(i) for i in self.source), dtype=np.int64)

    def _count_all(self, n: int) -> int:
        if hasattr(self.source, "__len__"):
            return len(self.source)
        if self._length is None:  # an iterable without a length: count it once
            self._length = sum(1 for _ in self.source)
        return self._length


class IndexedIndices:
    """A user's object with ``__getitem__`` and ``__len__`` (no ``__iter__``) read as the
    indices ``obj[0], ..., obj[len(obj) - 1]``, anew each epoch: MindSpore 2.10 takes such an
    object as a sampler (its ``test_sampler_with_getitem_method``)."""

    def __init__(self, source: Any) -> None:
        self.source = source

    def __len__(self) -> int:
        return len(self.source)

    def __iter__(self) -> Iterator[int]:
        return (self.source[i] for i in range(len(self.source)))


class IterSampler(IterableSampler):
    """A user's iterable of indices as a sampler (``mindspore.dataset.IterSampler``): an
    object whose ``__iter__`` yields row indices, read anew each epoch; ``num_samples`` keeps
    its first ones (None: all).

    Example:
        >>> sampler = ds.IterSampler(sampler=range(9, -1, -2))  # rows 9, 7, 5, 3, 1
    """

    def __init__(self, sampler: Iterable[int], num_samples: int | None = None) -> None:
        if not hasattr(sampler, "__iter__") or isinstance(sampler, (str, bytes)):
            raise TypeError(
                f"IterSampler: sampler must be an iterable of indices. Received: {sampler!r}"
            )
        super().__init__(
            sampler, check_int("IterSampler", "num_samples", num_samples, 0, allow_none=True)
        )


def as_sampler(sampler: Any, num_samples: int | None = None) -> Sampler:
    """Accept a jisu sampler or any iterable of indices (of which ``num_samples``, when given,
    keeps the first ``num_samples``; a sampler object takes its own ``num_samples``)."""
    if isinstance(sampler, Sampler):
        return sampler
    if isinstance(sampler, (list, tuple, np.ndarray)):  # MindSpore: a SubsetSampler
        return IterableSampler(check_indices("sampler", sampler), num_samples)
    if hasattr(sampler, "__iter__") and not isinstance(sampler, (str, bytes)):
        return IterableSampler(sampler, num_samples)
    if (
        hasattr(sampler, "__getitem__")
        and hasattr(sampler, "__len__")
        and not isinstance(sampler, (str, bytes, Mapping))
    ):
        return IterableSampler(IndexedIndices(sampler), num_samples)
    raise TypeError(
        f"sampler must be a jisu Sampler or an iterable of indices. Received: sampler={sampler!r}"
    )
