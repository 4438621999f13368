"""MindSpore's ``mindspore.train.data_sink``: a step function fed from a data set, ``sink_size``
steps per call.

MindSpore compiles the loop into its device graph; jisu runs it in Python (``jit_config``
asks for graph mode: the step is wrapped by :func:`jisu.jit`, which compiles it in
GRAPH_MODE). The data set cycles: a call continues where the previous one stopped, and the
next epoch starts when an epoch ends, as in MindSpore."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["data_sink"]


def data_sink(fn: Callable, dataset: Any, sink_size: int = 1, jit_config: Any = None,
              input_signature: Any = None) -> Callable[..., Any]:  # fmt: skip
    """A function that, called with no arguments, runs ``fn(*batch)`` on the next
    ``sink_size`` batches of ``dataset`` and returns the last call's output.

    Raises:
        TypeError: ``sink_size`` is not an int.
        ValueError: ``sink_size`` is not positive.
    """
    if isinstance(sink_size, bool) or not isinstance(sink_size, int):
        raise TypeError(f"data_sink: sink_size must be an int. Received: {sink_size!r}")
    if sink_size <= 0:
        raise ValueError(f"data_sink: sink_size must be positive. Received: sink_size={sink_size}")
    step = fn
    if jit_config is not None:
        from .._jit import jit

        step = jit(fn)
    iterator: Any = None
    batches: Iterator | None = None

    def next_batch() -> tuple:
        nonlocal iterator, batches
        if iterator is None:
            iterator = dataset.create_tuple_iterator(num_epochs=-1)
        for _ in range(2):  # an epoch ended: the next one starts
            if batches is None:
                batches = iter(iterator)
            try:
                return next(batches)
            except StopIteration:
                batches = None
        raise ValueError("data_sink: the dataset has no rows")

    @functools.wraps(fn)
    def sink_process(*args: Any, **kwargs: Any) -> Any:
        out = None
        for _ in range(sink_size):
            out = step(*next_batch())
        return out

    return sink_process
