"""Samplers: which source indices an epoch reads, in which order (MindSpore's samplers)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..validation import check_int, resolve_shards


class Sampler:
    """Chooses the indices of a random-access source for one epoch.

    ``indices(n, rng)`` must be a pure function of ``n`` and ``rng`` (the engine passes a
    generator keyed by seed and epoch), so that every worker and every restart agrees.
    """

    def __init__(self, num_samples: int | None = None) -> None:
        self.num_samples = (
            check_int(type(self).__name__, "num_samples", num_samples, minimum=0, allow_none=True)
            or None
        )

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # each sampler defines its order

    def indices(self, n: int, rng: np.random.Generator) -> np.ndarray:
        order = np.asarray(self._all(n, rng), dtype=np.int64)
        return order if self.num_samples is None else order[: self.num_samples]

    def _count_all(self, n: int) -> int:
        """Length of ``_all(n, rng)``, without building it."""
        raise NotImplementedError  # each sampler defines its count

    def count(self, n: int) -> int:
        """Rows per epoch for a source of ``n`` rows (cheap: called per row by the engine)."""
        total = self._count_all(n)
        return total if self.num_samples is None else min(total, self.num_samples)


class SequentialSampler(Sampler):
    """Indices ``start_index, start_index + 1, ...``."""

    def __init__(self, start_index: int | None = None, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.start_index = check_int("SequentialSampler", "start_index", start_index or 0, 0)

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.arange(self.start_index, n)

    def _count_all(self, n: int) -> int:
        return max(0, n - self.start_index)


class RandomSampler(Sampler):
    """A random permutation (or draws with replacement), new every epoch."""

    def __init__(self, replacement: bool = False, num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.replacement = bool(replacement)

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.replacement:
            return rng.integers(0, n, size=self.num_samples or n)
        return rng.permutation(n)

    def _count_all(self, n: int) -> int:
        return (self.num_samples or n) if self.replacement else n


class DistributedSampler(Sampler):
    """One shard of (optionally shuffled) indices; short shards wrap around."""

    def __init__(
        self,
        num_shards: int,
        shard_id: int,
        shuffle: bool = True,
        num_samples: int | None = None,
        offset: int = -1,
    ) -> None:
        super().__init__(num_samples)
        self.num_shards, self.shard_id = resolve_shards("DistributedSampler", num_shards, shard_id)
        self.shuffle = bool(shuffle)
        if offset != -1:
            raise ValueError(f"DistributedSampler: offset is not supported. Received: {offset}")

    def _all(self, n: int, rng: np.random.Generator) -> np.ndarray:
        from ..ops.shard import shard_positions

        order = rng.permutation(n) if self.shuffle else np.arange(n)
        return order[shard_positions(n, self.num_shards, self.shard_id)]

    def _count_all(self, n: int) -> int:
        return -(-n // self.num_shards) if n else 0


class SubsetSampler(Sampler):
    """The given indices, in the given order."""

    def __init__(self, indices: Sequence[int], num_samples: int | None = None) -> None:
        super().__init__(num_samples)
        self.subset = np.asarray(list(indices), dtype=np.int64)

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
            raise ValueError(
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


class IterableSampler(Sampler):
    """Any iterable of indices (a list, a ``torch.utils.data.Sampler``), read each epoch."""

    def __init__(self, source: Iterable[int]) -> None:
        super().__init__(None)
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


def as_sampler(sampler: Any) -> Sampler:
    """Accept a jisu sampler or any iterable of indices."""
    if isinstance(sampler, Sampler):
        return sampler
    if hasattr(sampler, "__iter__"):
        return IterableSampler(sampler)
    raise TypeError(
        f"sampler must be a jisu Sampler or an iterable of indices. Received: sampler={sampler!r}"
    )
