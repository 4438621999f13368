"""``Dataset.split``: disjoint parts of a dataset, by sizes or fractions (MindSpore's rules).

Where the rows come straight from a random-access source through row-for-row ops (map,
project, rename), the split is made on the source's indices, as MindSpore does: each part is
a copy of the pipeline whose source reads only its indices (in a new order every epoch when
the source shuffles), so the parts stay disjoint in every epoch. Any other random-access
pipeline is split on the positions of its rows (:class:`PickDataset`); a stream only into
consecutive parts (``take``/``skip``).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import config
from ..core.access import is_random_access
from ..core.error_types import PipelineValueError
from ..core.node import Dataset
from ..engine.context import ExecContext
from .index_map import IndexMapKernels

if TYPE_CHECKING:
    from ..sources.generator import Source


def split_sizes(sizes: Sequence[int | float], total: int) -> list[int]:
    """Absolute part sizes: ints summing to ``total``, or fractions summing to 1, each rounded
    (Python's rounding) and the rounding error given to the first part that stays positive
    (MindSpore's rule)."""
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise ValueError(f"split: sizes must be a non-empty list. Received: sizes={sizes!r}")
    if all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        if any(s <= 0 for s in sizes):
            raise ValueError(f"split: int sizes must be positive. Received: sizes={sizes}")
        if sum(sizes) != total:  # MindSpore: a RuntimeError
            raise PipelineValueError(
                f"split: the sizes sum to {sum(sizes)} but the dataset has {total} rows. "
                f"Received: sizes={sizes}"
            )
        return list(sizes)
    if not all(isinstance(s, float) for s in sizes):
        raise TypeError(f"split: sizes must be all ints or all floats. Received: sizes={sizes}")
    if any(not 0 < s <= 1 for s in sizes) or abs(sum(sizes) - 1) > 1e-9:
        raise ValueError(
            f"split: float sizes must be in (0, 1] and sum to 1. Received: sizes={sizes}"
        )
    absolute = [round(s * total) for s in sizes]
    for s, size in zip(sizes, absolute):
        if size == 0:
            raise ValueError(
                f"split: fraction {s} of {total} rows rounds to an empty part. Received: "
                f"sizes={sizes}"
            )
    error = total - sum(absolute)
    for k, size in enumerate(absolute):
        if size + error > 0:
            absolute[k] += error
            break
    return absolute


class _PickKernels(IndexMapKernels):
    """Random access: row ``i`` is the child's row ``positions[i]``."""

    def child_indices(self, ctx: ExecContext, epoch: int, indices: np.ndarray) -> np.ndarray:
        return self.positions[indices]


class PickDataset(Dataset):
    """The child's rows at fixed ``positions`` (a part of a split), in that order."""

    op_name = "split"
    random_access_kernels = _PickKernels

    def __init__(self, child: Dataset, positions: np.ndarray) -> None:
        super().__init__([child])
        self.positions = np.asarray(positions, dtype=np.int64)
        self._columns = child._columns
        self._settle_kind(is_random_access(child))
        if not is_random_access(self):
            raise ValueError("split: picking rows by position needs a random-access dataset")

    def _row_count(self) -> int | None:
        return len(self.positions)


def _split_rng() -> np.random.Generator:
    """The split's own generator: drawn from the seed once, whatever the epoch."""
    return np.random.default_rng([config.pipeline_seed(), _SPLIT_STREAM])


_SPLIT_STREAM = 0x5B117  # keeps the split's draws apart from the engine's streams


def _source_chain(root: Dataset) -> list[Dataset] | None:
    """``root`` down to a random-access source through row-for-row ops, or None."""
    from ..sources.generator import Source
    from .columns import ProjectDataset, RenameDataset
    from .map import MapDataset

    chain = [root]
    while isinstance(chain[-1], (MapDataset, ProjectDataset, RenameDataset)):
        chain.append(chain[-1].children[0])
    bottom = chain[-1]
    if isinstance(bottom, Source) and is_random_access(bottom) and bottom.order.sampler is None:
        return chain if bottom.order.shards is None else None
    return None


def _with_source_indices(chain: list[Dataset], indices: np.ndarray) -> Dataset:
    """A copy of ``chain`` (root first) whose source reads only ``indices``."""
    from ..sources.options import EpochOrder
    from ..sources.samplers import SubsetRandomSampler, SubsetSampler

    source: Source = copy.copy(chain[-1])
    sampler = SubsetRandomSampler if source.order.shuffle is not None else SubsetSampler
    source.order = EpochOrder(sampler=sampler(indices.tolist()))
    node: Dataset = source
    for parent in reversed(chain[:-1]):
        clone = copy.copy(parent)
        clone.children = (node,)
        node = clone
    return node


def split_dataset(data: Dataset, sizes: Sequence[int | float], randomize: bool) -> list[Dataset]:
    """See :meth:`Dataset.split`."""
    if not isinstance(randomize, bool):
        raise TypeError(f"split: randomize must be a bool. Received: randomize={randomize!r}")
    total = data.get_dataset_size()
    parts = split_sizes(sizes, total)
    bounds = np.cumsum([0, *parts])
    chain = _source_chain(data)
    if chain is not None:
        source: Source = chain[-1]  # type: ignore[assignment]
        rows = np.arange(source._source_len(), dtype=np.int64)[:total]  # num_samples: the first
        if randomize:  # drawn once: the parts stay the same in every epoch
            rows = _split_rng().permutation(rows)
        return [_with_source_indices(chain, rows[a:b]) for a, b in itertools.pairwise(bounds)]
    if is_random_access(data):
        positions = np.arange(total, dtype=np.int64)
        if randomize:
            positions = _split_rng().permutation(total)
        return [PickDataset(data, positions[a:b]) for a, b in itertools.pairwise(bounds)]
    if randomize:
        raise ValueError(
            "split: randomize=True needs a random-access dataset; this one is a stream "
            "(an iterable source or a filter): use randomize=False for consecutive parts"
        )
    return [data.skip(int(a)).take(int(b - a)) for a, b in itertools.pairwise(bounds)]
