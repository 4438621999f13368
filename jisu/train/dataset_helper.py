"""MindSpore's ``DatasetHelper``: a data set's batches as tuples of tensors, for custom loops.

``for inputs in DatasetHelper(dataset, dataset_sink_mode=False): net(*inputs)``: each loop
over the helper is one epoch of the data set, up to ``epoch_num`` epochs. jisu has no device
queue to sink data into, so sink mode yields the same batches (sink mode's speed comes from
:class:`jisu.Model`'s captured train step, not from here).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["DatasetHelper"]


class DatasetHelper:
    """Iterates ``dataset`` as tuples of tensors, one epoch per loop, ``epoch_num`` epochs.

    ``sink_size`` (-1: the whole data set) is the steps of one loop in sink mode, as
    MindSpore; ``iter_first_order`` (THOR's) is accepted."""

    def __init__(
        self,
        dataset: Any,
        dataset_sink_mode: bool = True,
        sink_size: int = -1,
        epoch_num: int = 1,
        iter_first_order: int = 1,
    ) -> None:
        if not isinstance(dataset_sink_mode, bool):
            raise TypeError(
                f"DatasetHelper: dataset_sink_mode must be a bool. Received {dataset_sink_mode!r}"
            )
        if isinstance(sink_size, bool) or not isinstance(sink_size, int) or sink_size == 0:
            raise ValueError(f"DatasetHelper: sink_size must be -1 or > 0. Received {sink_size!r}")
        if isinstance(epoch_num, bool) or not isinstance(epoch_num, int) or epoch_num < 1:
            raise ValueError(
                f"DatasetHelper: epoch_num must be an int >= 1. Received {epoch_num!r}"
            )
        self._dataset = dataset
        self._sink_mode = dataset_sink_mode
        self._sink_size = sink_size
        self._epoch_num = epoch_num
        self._iterator: Any = None

    def __iter__(self) -> Iterator[tuple]:
        if self._iterator is None:
            self._iterator = self._dataset.create_tuple_iterator(num_epochs=self._epoch_num)
        for count, row in enumerate(self._iterator, 1):
            yield tuple(row)
            if self._sink_mode and self._sink_size > 0 and count == self._sink_size:
                return

    def sink_size(self) -> int:
        """Steps per loop: ``sink_size`` in sink mode when given, else the data set's size."""
        if self._sink_mode and self._sink_size > 0:
            return self._sink_size
        return self._dataset.get_dataset_size()

    def types_shapes(self) -> tuple[list, list]:
        """The columns' dtypes and shapes (as ``dataset.output_types()`` and
        ``output_shapes()``)."""
        return self._dataset.output_types(), self._dataset.output_shapes()

    def stop_send(self) -> None:
        """MindSpore stops feeding its device queue; jisu has none."""

    def continue_send(self) -> None:
        """MindSpore resumes feeding its device queue; jisu has none."""

    def release(self) -> None:
        """Stop the iterator's workers."""
        if self._iterator is not None:
            close = getattr(self._iterator, "close", None)
            if close is not None:
                close()
            self._iterator = None
