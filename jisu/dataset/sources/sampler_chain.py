"""``add_sampler``'s chain: a new sampler that picks positions in what a source read so far.

A source built with a sampler chains to it (MindSpore's ``new_sampler.add_child(sampler)``);
one built with ``shuffle``/``num_shards``/``num_samples`` chains to a sampler that draws
that same order (:class:`OrderSampler`), so that ``add_sampler`` keeps every row choice the
source made before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .options import EpochOrder
from .samplers import Sampler, as_sampler


class OrderSampler(Sampler):
    """The order of a source's ``shuffle``, shards and ``num_samples`` as a sampler."""

    def __init__(self, order: EpochOrder) -> None:
        super().__init__(None)
        self.order = order

    def indices(
        self, n: int, rng: np.random.Generator, labels: np.ndarray | None = None
    ) -> np.ndarray:
        """The source's indices of one epoch, drawn as the source itself drew them."""
        return self.order.indices(n, rng, labels=labels)

    def count(self, n: int, labels: np.ndarray | None = None) -> int:
        """Rows per epoch, as the source counted them."""
        return self.order.count(n, labels)


def chained(op: str, order: EpochOrder, new_sampler: Any) -> Sampler:
    """``new_sampler`` with the source's current order (``order``) as its child.

    Raises:
        TypeError: ``new_sampler`` is not a sampler (or an iterable of indices).
        ValueError: ``new_sampler`` has a child already.
    """
    if new_sampler is None:
        raise TypeError(f"{op}.add_sampler: new_sampler must be a sampler. Received: None")
    sampler = as_sampler(new_sampler)
    previous = order.sampler if order.sampler is not None else OrderSampler(order)
    sampler.add_child(previous)
    return sampler
