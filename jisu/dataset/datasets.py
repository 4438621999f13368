"""The top of :mod:`jisu.dataset`: :class:`Dataset` with its fluent methods bound.

The node contract and the fluent API are defined in :mod:`.core.node`, below every other
layer; what their methods build or run (the ops, the iterator, the plan, the record writer,
the offload module) lives above. This module, imported by the package's ``__init__`` before
any node exists, binds those implementations (:mod:`.core.bindings`), so the layers import
downwards only: ``core`` ← ``engine`` ← {``ops``, ``sources``, ``vision``, ``transforms``} ←
``datasets``.
"""

from __future__ import annotations

from typing import Any

from .core.bindings import bind
from .core.node import Dataset, Parallelism
from .engine.iterator import DatasetIterator
from .engine.plan import plan
from .engine.stage_runs import run_stream
from .ops.batch import BatchDataset
from .ops.bucket_batch import BucketBatchByLengthDataset
from .ops.columns import ProjectDataset, RenameDataset
from .ops.concat import ConcatDataset
from .ops.ds_callback import CallbackPointDataset, check_callbacks
from .ops.filter import FilterDataset
from .ops.map import MapDataset
from .ops.repeat import RepeatDataset
from .ops.shard import ShardDataset
from .ops.shuffle import ShuffleDataset
from .ops.split import split_dataset
from .ops.sync_wait import SyncWaitDataset, find_sync, nearest_sync
from .ops.take_skip import SkipDataset, TakeDataset
from .ops.zip import ZipDataset

__all__ = ["Dataset", "Parallelism"]


def _offload_module(dataset: Dataset):
    """``dataset.offload_module()``: imported when asked for (it builds torch modules, which
    worker processes never need)."""
    from .device.module import offload_module

    return offload_module(dataset)


def _write_dataset(*args: Any, **kwargs: Any) -> Any:
    """``dataset.save(...)``: the record writer (Arrow) imported when a pipeline is saved."""
    from .record.convert import write_dataset

    return write_dataset(*args, **kwargs)


bind(
    run_stream=run_stream,
    plan=plan,
    DatasetIterator=DatasetIterator,
    offload_module=_offload_module,
    write_dataset=_write_dataset,
    MapDataset=MapDataset,
    CallbackPointDataset=CallbackPointDataset,
    check_callbacks=check_callbacks,
    BatchDataset=BatchDataset,
    BucketBatchByLengthDataset=BucketBatchByLengthDataset,
    SyncWaitDataset=SyncWaitDataset,
    find_sync=find_sync,
    nearest_sync=nearest_sync,
    ShuffleDataset=ShuffleDataset,
    RepeatDataset=RepeatDataset,
    ShardDataset=ShardDataset,
    TakeDataset=TakeDataset,
    SkipDataset=SkipDataset,
    split_dataset=split_dataset,
    ProjectDataset=ProjectDataset,
    RenameDataset=RenameDataset,
    ZipDataset=ZipDataset,
    ConcatDataset=ConcatDataset,
    FilterDataset=FilterDataset,
)
