"""ReadOptions: the arguments every MindSpore source takes, as one object, and the epoch order
they give.

Every source of ``mindspore.dataset`` repeats the same parameters (``num_samples``,
``num_parallel_workers``, ``shuffle``, ``sampler``, ``num_shards``, ``shard_id``). jisu's
sources keep MindSpore's signatures, gather them into a :class:`ReadOptions` and hand that to
:class:`~jisu.dataset.sources.generator.Source`, which checks them once
(:meth:`ReadOptions.resolve`) into an :class:`EpochOrder`: which rows an epoch reads, in which
order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.cache import DatasetCache
from ..core.error_types import PipelineValueError
from ..core.order import shard_positions
from ..core.validation import check_int, resolve_shards
from .samplers import RandomSampler, Sampler, Shuffle, as_sampler


def check_cache(op: str, cache: Any) -> None:
    """MindSpore's ``cache`` argument: None or a :class:`~jisu.dataset.DatasetCache`, which is
    accepted and changes nothing (jisu has no cache server; a cache never changes which rows
    come or in which order)."""
    if cache is not None and not isinstance(cache, DatasetCache):
        raise ValueError(
            f"{op}: cache is not supported except as a DatasetCache (jisu has no cache server; "
            "a DatasetCache is accepted and the pipeline runs without it). "
            f"Received: cache={cache!r}"
        )


@dataclass(frozen=True)
class ReadOptions:
    """How a source reads its rows each epoch (MindSpore's common source arguments).

    Args:
        num_samples: read at most this many rows per epoch (per shard); None or 0: all.
        num_parallel_workers: workers reading rows (None: the source's default).
        shuffle: None (the source's default), True/False, or a :class:`Shuffle` level for
            sources made of files.
        sampler: a sampler or an iterable of indices (random-access sources; not with
            ``shuffle``, shards or ``num_samples``, except that GeneratorDataset and
            NumpySlicesDataset read the first ``num_samples`` indices of an iterable, as in
            MindSpore).
        num_shards / shard_id: read one of ``num_shards`` equal shards (short shards wrap
            around); default from ``torch.distributed`` when it is initialized.
        python_multiprocessing: read in worker processes, with the maps fused with the read.
        list_num_samples: whether a list of indices as ``sampler`` takes ``num_samples`` (its
            first ones), as in MindSpore's GeneratorDataset and NumpySlicesDataset; other
            sources refuse a sampler with ``num_samples``.
    """

    num_samples: int | None = None
    num_parallel_workers: int | None = None
    shuffle: bool | Shuffle | None = None
    sampler: Any = None
    num_shards: int | None = None
    shard_id: int | None = None
    python_multiprocessing: bool = False
    list_num_samples: bool = False

    def resolve(self, op: str, *, indexed: bool, files: bool = False) -> EpochOrder:
        """Check the options for source ``op`` (``indexed``: read by index, else iterated;
        ``files``: the source is made of files, so the :class:`Shuffle` levels apply)."""
        num_samples = check_int(op, "num_samples", self.num_samples, minimum=0, allow_none=True)
        shuffle = self.shuffle
        if isinstance(shuffle, Shuffle):
            if not files:
                raise TypeError(
                    f"{op}: shuffle must be a bool or None; Shuffle levels apply to sources "
                    f"made of files. Received: shuffle={shuffle!r}"
                )
        elif shuffle is not None and not isinstance(shuffle, bool):
            allowed = "a bool, a Shuffle level or None" if files else "a bool or None"
            raise TypeError(f"{op}: shuffle must be {allowed}. Received: shuffle={shuffle!r}")
        shards = resolve_shards(op, self.num_shards, self.shard_id)
        sampler = None
        if self.sampler is not None:
            if not indexed:
                raise ValueError(
                    f"{op}: a sampler needs a random-access source (__getitem__ and "
                    "__len__); this source is iterable"
                )
            if self.shuffle is not None or self.num_shards is not None:
                raise ValueError(
                    f"{op}: sampler cannot be combined with shuffle or num_shards; use a "
                    "shuffling or distributed sampler instead"
                )
            if self.num_samples is not None and (
                isinstance(self.sampler, Sampler) or not self.list_num_samples
            ):  # MindSpore: a ValueError (GeneratorDataset's family), else a RuntimeError
                allowed = ", except with a list of indices" if self.list_num_samples else ""
                raise PipelineValueError(
                    f"{op}: sampler cannot be combined with num_samples{allowed}; give the "
                    f"sampler its own num_samples. Received: num_samples={self.num_samples}"
                )
            sampler = as_sampler(self.sampler, num_samples or None)  # a list: its first ones
            level = getattr(sampler, "shuffle", Shuffle.GLOBAL)
            if isinstance(sampler, RandomSampler) and level is not Shuffle.GLOBAL:
                # (a string equal to a level passes the sampler's check: MindSpore's, too)
                if (
                    not (files and isinstance(level, Shuffle))
                    or sampler.replacement
                    or (sampler.child is not None)
                ):
                    raise PipelineValueError(  # MindSpore 2.10: a RuntimeError when built
                        f"{op}: RandomSampler(shuffle={level}) is not supported here; the "
                        "Shuffle levels FILES and INFILE apply to sources made of files "
                        "(MindDataset, TFRecordDataset), without replacement or a child sampler"
                    )
                # the source's own file-level shuffle, as MindSpore's MindDataset does
                return EpochOrder(sampler.num_samples, None, level, None)
        if shuffle is None:  # MindSpore's default: shuffled when read by index
            level = Shuffle.GLOBAL if indexed and sampler is None else None
        elif shuffle is True:
            level = Shuffle.GLOBAL
        else:
            level = shuffle or None
        return EpochOrder(num_samples or None, sampler, level, shards)


@dataclass(frozen=True)
class EpochOrder:
    """Which rows of a source an epoch reads, in which order: checked :class:`ReadOptions`.

    ``shuffle`` is None (rows in order) or a :class:`Shuffle` level; ``shards`` is
    ``(num_shards, shard_id)`` or None.
    """

    num_samples: int | None = None
    sampler: Sampler | None = None
    shuffle: Shuffle | None = None
    shards: tuple[int, int] | None = None

    def indices(
        self,
        n: int,
        rng: np.random.Generator,
        files: list[np.ndarray] | None = None,
        labels: np.ndarray | None = None,
    ) -> np.ndarray:
        """Source indices of one epoch of a source of ``n`` rows, drawn from ``rng`` (keyed by
        seed and epoch). ``files``: the row indices of each file, for the FILES and INFILE
        levels (without them, both act as GLOBAL); ``labels``: each row's class, for a
        sampler that needs them."""
        if self.sampler is not None:
            return self.sampler.indices(n, rng, labels)
        if self.shuffle is None:
            order = np.arange(n, dtype=np.int64)
        elif self.shuffle is Shuffle.GLOBAL or files is None:
            order = rng.permutation(n)
        else:
            if self.shuffle is Shuffle.FILES:
                parts = [files[k] for k in rng.permutation(len(files))]
            else:
                parts = [rng.permutation(p) for p in files]
            covered = sum(len(p) for p in files)  # rows after the files (padding) stay last
            order = np.concatenate([*parts, np.arange(covered, n, dtype=np.int64)])
        if self.shards is not None:
            order = order[shard_positions(n, *self.shards)]
        return order if self.num_samples is None else order[: self.num_samples]

    def count(self, n: int, labels: np.ndarray | None = None) -> int:
        """Rows per epoch for a source of ``n`` rows (cheap: called per row by the engine)."""
        if self.sampler is not None:
            return self.sampler.count(n, labels)
        if self.shards is not None:
            n = -(-n // self.shards[0]) if n else 0
        return n if self.num_samples is None else min(n, self.num_samples)
