"""Batches for training: from a jisu Dataset or any iterable, onto the device.

:class:`BatchSource` reads batches (one pass per epoch, or endlessly for sink_size > 0) and
knows the iterator state after each batch, so a checkpoint resumes on exactly the next one.
:class:`DeviceFeeder` is sink mode's feeder: a thread that fetches batches ahead and copies
them to the device — pinned host memory, a separate CUDA stream and an event per batch, so
the copy overlaps the compute stream's work instead of sitting on its critical path. On CPU
it is a plain prefetch queue with the same semantics.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from .. import distributed
from ..dataset.core.ragged import RaggedArray
from .columns import column_error, column_names


def as_tensors(batch: Any, source: BatchSource | None = None) -> list[torch.Tensor]:
    """A batch (tuple/list/dict of tensors or arrays) as a list of tensors.

    A column of strings, bytes or objects (``jisu convert``'s ``file_name``) fails with a
    ``TypeError`` naming it (by ``source``'s column names when given) and saying how to drop
    it; the check runs only when a conversion fails, so converting costs nothing more.
    """
    columns = batch
    if isinstance(batch, dict):
        columns = list(batch.values())
    elif torch.is_tensor(batch) or isinstance(batch, np.ndarray):
        columns = [batch]
    out = []
    try:
        for value in columns:
            if isinstance(value, np.ndarray):
                value = torch.from_numpy(np.ascontiguousarray(value))
            elif isinstance(value, RaggedArray):
                value = value.to_torch()
            elif not torch.is_tensor(value):
                value = torch.as_tensor(value)
            out.append(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        op, names = ("Model", None) if source is None else (source.op, source.column_names())
        error = column_error(op, batch, len(out), names)
        if error is None:
            raise
        raise error from exc
    return out


#: integer label types that class-index losses refuse and that fit in int64
_INDEX_DTYPES = (torch.int32, torch.int16, torch.int8, torch.uint8, torch.uint16, torch.uint32)


def with_index_labels(batch: list[torch.Tensor]) -> list[torch.Tensor]:
    """The label (the batch's last tensor) widened to int64 when it is a narrower integer:
    PyTorch's losses take class indices as int64, and MindSpore-style pipelines commonly
    cast labels to int32 (the article does); MindSpore's MNIST and CIFAR sources give
    uint32 labels."""
    label = batch[-1]
    if label.dtype in _INDEX_DTYPES:
        batch = [*batch[:-1], label.long()]
    return batch


def to_device(batch: list[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    return [t if t.device == device else t.to(device) for t in batch]


class BatchSource:
    """Training batches from ``dataset`` (a jisu Dataset, or any iterable of batches); ``op``
    (the API reading them, e.g. "Model.eval") is named in errors about them."""

    def __init__(self, dataset: Any, state: dict | None = None, op: str = "Model.train") -> None:
        from ..dataset.core.node import Dataset

        self.dataset = dataset
        self.op = op
        self._iterator = None
        self._offload: Any = None  # the pipeline's offload module, when its maps left ops
        self._offload_on: torch.device | None = None  # where it was last moved
        if isinstance(dataset, Dataset):
            module = dataset.offload_module()
            self._offload = module if module.tails else None
            self._iterator = dataset.create_tuple_iterator(num_epochs=-1)
            self.size: int | None = dataset.get_dataset_size()
            if state is not None:
                if state["position"] >= self.size:  # saved after an epoch's last batch
                    state = dict(state, epoch=state["epoch"] + 1, position=0)
                self._iterator.set_state(state)
        else:
            if not hasattr(dataset, "__iter__"):
                raise TypeError(
                    "train_dataset must be a jisu Dataset or an iterable of batches (e.g. a "
                    f"DataLoader). Received {type(dataset).__name__}"
                )
            if state is not None:
                raise ValueError(
                    "resuming mid-epoch needs a jisu Dataset (its iterator state); this "
                    f"{type(dataset).__name__} has none"
                )
            self.size = _length(dataset)

    def one_pass(self) -> Iterator[Any]:
        """One epoch of batches."""
        return iter(self._iterator) if self._iterator is not None else iter(self.dataset)

    def endless(self) -> Iterator[Any]:
        """Batches across epochs without end (sink_size > 0: an "epoch" is sink_size steps)."""
        while True:
            empty = True
            for batch in self.one_pass():
                empty = False
                yield batch
            if empty:
                raise ValueError("train: the dataset yielded no batch")

    def to_device(
        self, batch: list[torch.Tensor], device: torch.device, non_blocking: bool = False
    ) -> list[torch.Tensor]:
        """``batch`` on ``device``, with the ops that the pipeline's maps left to the device
        (``offload=True``: the normalize tail, a device decode) applied there."""
        if self._offload is None:
            return [
                t if t.device == device else t.to(device, non_blocking=non_blocking) for t in batch
            ]
        if self._offload_on != device:  # "cuda" never equals the module's "cuda:0": once
            self._offload.to(device)
            self._offload_on = device
        batch = self._offload(batch)  # its columns: copied as uint8 (or bytes), then computed
        return [t if t.device == device else t.to(device, non_blocking=non_blocking) for t in batch]

    @property
    def prefetches(self) -> bool:
        """Whether reading ahead already happens elsewhere (a jisu pipeline's own threads)."""
        return self._iterator is not None

    def column_names(self) -> list[str] | None:
        """The dataset's column names (``get_col_names()``), None when it has none."""
        return column_names(self.dataset)

    def state(self) -> dict | None:
        """The iterator state after the last batch read (None for plain iterables)."""
        return self._iterator.get_state() if self._iterator is not None else None

    def close(self) -> None:
        if self._iterator is not None:
            self._iterator.close()


def _length(dataset: Any) -> int | None:
    """``len(dataset)``, None when it has none (a DataLoader over an IterableDataset has
    ``__len__`` but raises TypeError)."""
    try:
        return len(dataset)
    except TypeError:
        return None


_END = object()
_NOTHING = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class InlineFeeder:
    """:class:`DeviceFeeder`'s interface without a thread: batches are fetched and copied on
    the calling thread. Used by the eager loop, and by sink mode on CPU when the data is a
    jisu pipeline, which already reads ahead on its own threads (one more hand-off per batch
    would only cost time).

    With ``lookahead`` it fetches one batch ahead, so that ``exhausted`` says, as soon as a
    batch is returned, whether it was the data's last: the training loop's way to know the
    last step of an epoch whose size is unknown (an iterable without ``len``)."""

    def __init__(
        self,
        batches: Iterator[Any],
        source: BatchSource,
        device: torch.device,
        limit: int | None,
        lookahead: bool = False,
    ) -> None:
        self._batches, self._source, self.device, self._left = batches, source, device, limit
        self._lookahead = lookahead
        self._ahead: Any = _NOTHING  # the batch fetched ahead, and the state after it
        self.exhausted = False  # the data ended after the batch last returned (lookahead)
        self.waited = 0.0  # seconds waiting for the next batch
        self.copied = 0.0  # seconds copying batches to the device

    def _fetch(self) -> tuple[Any, dict | None]:
        """The next raw batch and the data state after it; StopIteration at the end."""
        if self._ahead is not _NOTHING:
            fetched, self._ahead = self._ahead, _NOTHING
            return fetched
        batch = next(self._batches)
        return batch, self._source.state()

    def get(self) -> tuple[list[torch.Tensor], dict | None, int]:
        if self._left == 0 or self.exhausted:
            raise StopIteration
        begin = time.perf_counter()
        try:
            raw, state = self._fetch()
            if self._lookahead:
                try:
                    self._ahead = (next(self._batches), self._source.state())
                except StopIteration:
                    self.exhausted = True
            batch = as_tensors(raw, self._source)
        finally:  # the wait for the end of the data counts too
            fetched = time.perf_counter()
            self.waited += fetched - begin
        tensors = with_index_labels(self._source.to_device(batch, self.device))
        self.copied += time.perf_counter() - fetched
        if self._left is not None:
            self._left -= 1
        samples = int(tensors[0].shape[0]) if tensors and tensors[0].dim() else 1
        return tensors, state, samples

    def close(self) -> None:
        """Nothing runs in the background."""


class DeviceFeeder:
    """Fetches batches from ``batches`` on a thread and moves them to ``device`` ahead of use
    (at most ``limit`` of them).

    ``get()`` returns ``(tensors on device, source state after the batch, samples)`` and
    raises StopIteration at the end; the seconds it spends waiting accumulate in ``waited``.
    """

    def __init__(
        self,
        batches: Iterator[Any],
        source: BatchSource,
        device: torch.device,
        depth: int = 2,
        limit: int | None = None,
    ) -> None:
        self.device = device
        self.exhausted = False  # InlineFeeder's: the end shows as StopIteration here
        self.waited = 0.0
        self.copied = 0.0  # copies overlap the steps on the feeder thread: not on the clock
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._cuda = device.type == "cuda"
        self._stream = torch.cuda.Stream(device) if self._cuda else None
        self._thread = threading.Thread(
            target=self._run, args=(batches, source, limit), name="jisu-feeder", daemon=True
        )
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, batches: Iterator[Any], source: BatchSource, limit: int | None) -> None:
        try:
            for count, batch in enumerate(batches, 1):
                state = source.state()
                tensors = as_tensors(batch, source)
                samples = int(tensors[0].shape[0]) if tensors and tensors[0].dim() else 1
                event = None
                if self._cuda:
                    with torch.cuda.stream(self._stream):
                        tensors = [t.pin_memory() for t in tensors]
                        tensors = source.to_device(tensors, self.device, non_blocking=True)
                        # on this stream too: the label's widening reads the copy made on it
                        tensors = with_index_labels(tensors)
                        event = torch.cuda.Event()
                        event.record(self._stream)
                else:
                    tensors = with_index_labels(source.to_device(tensors, self.device))
                if not self._put((tensors, event, state, samples)):
                    return
                if count == limit:  # never read ahead of the sink: the rest is the next one's
                    break
            self._put(_END)
        except BaseException as exc:  # handed to the training loop, which raises it
            self._put(_Failure(exc))

    def get(self) -> tuple[list[torch.Tensor], dict | None, int]:
        begin = time.perf_counter()
        item = self._next_item()
        self.waited += time.perf_counter() - begin
        if item is _END:
            self._queue.put(_END)  # stay at the end
            raise StopIteration
        if isinstance(item, _Failure):
            raise item.exc
        tensors, event, state, samples = item
        if event is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(event)
            for t in tensors:
                t.record_stream(stream)  # the allocator must not reuse it before the step
        return tensors, state, samples

    def _next_item(self) -> Any:
        """The queue's next item; an error, not a hang, when the thread has ended without
        leaving one (it died where its own failure could not be handed over)."""
        while True:
            try:
                return self._queue.get(timeout=0.5)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise RuntimeError(
                        "the device feeder thread (jisu-feeder) ended without handing over a "
                        "batch, the end of the data or its error"
                    ) from None

    def close(self) -> None:
        self._stop.set()
        while True:  # unblock the thread
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=5)


def shard_by_rank(dataset: Any) -> Any:
    """Under ``torchrun``, each rank's part of a jisu dataset: every world_size-th batch,
    equal counts (short parts wrap around). A dataset that shards itself anywhere (a source's
    ``num_shards``, a ``shard`` op), or a plain iterable, is left to the user."""
    from ..dataset.core.node import Dataset
    from ..dataset.ops.shard import ShardDataset

    world = distributed.get_group_size()
    if world <= 1 or not isinstance(dataset, Dataset):
        return dataset
    stack = [dataset]
    while stack:
        node = stack.pop()
        if isinstance(node, ShardDataset) or getattr(node, "shards", None) is not None:
            return dataset
        stack.extend(node.children)
    return dataset.shard(world, distributed.get_rank())
