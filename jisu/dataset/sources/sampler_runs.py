"""A random-access source's order of each epoch, and a user's sampler drawn epoch after epoch.

Built-in samplers are pure functions of the row count and an RNG keyed by seed and epoch, so
any thread, worker process or restart may draw any epoch's order in any order. A user's
``Sampler`` subclass (its own ``__iter__``) is different: MindSpore calls its ``reset()`` after
every epoch (every pass of a ``repeat``), and a sampler may give other indices after a
reset. As MindSpore does, each iterator works on its own copy of the sampler (MindSpore copies
the pipeline when it makes an iterator), so the user's object never changes and a second
iterator starts where the first one did; that copy draws pass 0, is reset, draws pass 1, is
reset, and so on, in that order, whatever order the engine asks for them in. A worker process
holds its own copy of the source and replays the same draws from the same start.
"""

from __future__ import annotations

import copy
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.rng import epoch_rng
from .samplers import Sampler

#: run (an ExecContext) -> {node id: its sampler's draws in that run}
_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RUNS_LOCK = threading.Lock()
_KEEP = 8  # orders kept per run: the engine asks for the current epoch and the next ones
_MAX_REPLAY = 1 << 16  # farther ahead than this is an endless repeat's next epoch: no replay


def epoch_order(source: Any, ctx: Any, epoch: int) -> np.ndarray:
    """Source indices that ``source`` (a random-access :class:`Source`) reads in ``epoch``, in
    order (after sampler, shuffle, shards), computed once per epoch of a run."""
    key = ctx.node_id(source)
    sampler = source.order.sampler
    if sampler is None or not sampler.stateful:
        return ctx.cached(
            (key, "order", epoch),
            lambda: source._order(source._source_len(), epoch_rng(ctx.seed, epoch, key)),
        )

    def draw(run_sampler: Sampler, pass_: int) -> np.ndarray:
        rng = epoch_rng(ctx.seed, pass_, key)
        return run_sampler.indices(source._source_len(), rng, source._sampler_labels())

    with _RUNS_LOCK:
        draws = _RUNS.setdefault(ctx, {}).get(key)
        if draws is None:
            draws = _RUNS[ctx][key] = PassDraws(sampler, draw)
    return draws.order(epoch)


class PassDraws:
    """One run's draws of a sampler chain that holds a user's sampler: pass ``k`` is drawn by
    the run's copy after ``k`` draws, each followed by ``reset()`` (thread-safe).

    Args:
        sampler: the user's sampler (copied; the object itself is never drawn or reset here).
        draw: ``draw(sampler, k)`` gives pass ``k``'s indices from ``sampler``.
    """

    def __init__(self, sampler: Sampler, draw: Callable[[Sampler, int], np.ndarray]) -> None:
        self._original = sampler
        self._draw = draw
        self._lock = threading.Lock()
        self._sampler = _copy_of(sampler)
        self._next = 0  # the pass the run's copy draws next
        self._drawn: dict[int, np.ndarray] = {}

    def order(self, k: int) -> np.ndarray:
        """Pass ``k``'s indices (drawing the passes before it first, in order)."""
        with self._lock:
            if k in self._drawn:
                return self._drawn[k]
            if k < self._next:  # dropped long ago: replay a fresh copy up to it
                replay = _copy_of(self._original)
                for earlier in range(k):
                    self._draw(replay, earlier)
                    replay.reset_chain()
                return self._draw(replay, k)
            first = self._next if k - self._next <= _MAX_REPLAY else k
            for p in range(first, k + 1):
                self._drawn[p] = self._draw(self._sampler, p)
                self._sampler.reset_chain()  # MindSpore: at the end of every pass
            self._next = k + 1
            for old in sorted(self._drawn)[:-_KEEP]:
                del self._drawn[old]
            return self._drawn[k]


def _copy_of(sampler: Sampler) -> Sampler:
    """The run's own copy of ``sampler`` (and its children), as MindSpore's iterator copies the
    pipeline; a sampler that cannot be deep-copied (it holds a lock, an open file) is used
    as it is, so its resets then reach the user's object."""
    try:
        return copy.deepcopy(sampler)
    except Exception:  # any failure to copy: fall back to the object itself
        return sampler
