"""Argument checks shared by sources and ops; every message names the op and the argument."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .cpus import available_cpus
from .error_types import ArgumentError, PipelineValueError

#: the largest value MindSpore 2.10 takes for an int32 argument such as ``max_rowsize``
INT32_MAX = 2**31 - 1


def check_int(
    op: str, name: str, value: Any, minimum: int | None = None, allow_none: bool = False
) -> Any:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{op}: {name} must be an int. Received: {name}={value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{op}: {name} must be >= {minimum}. Received: {name}={value}")
    return value


def check_source_columns(op: str, column_names: Any) -> list[str]:
    """A source's ``column_names`` as a list, checked as MindSpore 2.10 checks them when the
    source is built: a str or a non-empty list/tuple of non-empty, distinct strs. A name that
    is not a str is an :class:`ArgumentError` (MindSpore's TypeError, jisu's earlier
    ValueError); an empty list, an empty name or a duplicate a ValueError."""
    if isinstance(column_names, str):
        column_names = [column_names]
    if not isinstance(column_names, (list, tuple)):
        raise TypeError(
            f"{op}: column_names must be a str or a list of str. "
            f"Received: column_names={column_names!r}"
        )
    for i, name in enumerate(column_names):
        if not isinstance(name, str):
            raise ArgumentError(
                f"{op}: column_names[{i}] must be a str. Received: column_names={column_names!r}"
            )
        if not name:
            raise ValueError(f"{op}: column_names[{i}] is an empty name. Received: {column_names}")
    if not column_names:
        raise ValueError(f"{op}: column_names must be a non-empty list of str. Received: []")
    if len(set(column_names)) != len(column_names):
        raise ValueError(f"{op}: column_names has duplicates. Received: {column_names}")
    return list(column_names)


def check_columns(
    op: str, name: str, columns: str | Sequence[str] | None, available: Sequence[str] | None = None
) -> list[str] | None:
    """Normalize a column argument to a list, checking names against ``available``."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [columns]
    if not isinstance(columns, (list, tuple)) or not all(isinstance(c, str) for c in columns):
        raise TypeError(
            f"{op}: {name} must be a str or a list of str. Received: {name}={columns!r}"
        )
    columns = list(columns)
    if not columns:
        raise ValueError(f"{op}: {name} must not be empty. Received: {name}=[]")
    if len(set(columns)) != len(columns):
        raise ValueError(f"{op}: {name} has duplicate names. Received: {name}={columns}")
    if available is not None:
        unknown = [c for c in columns if c not in available]
        if unknown:  # MindSpore finds it when the pipeline runs: a RuntimeError there
            raise PipelineValueError(
                f"{op}: unknown column(s) {unknown} in {name}; the dataset has columns "
                f"{list(available)}. Received: {name}={columns}"
            )
    return columns


def resolve_workers(op: str, value: int | None, default: int) -> int:
    """Worker count for a stage: the value asked for, clamped to the CPUs this process may use.

    Asking for more workers than CPUs is not an error (the article's own code asks for 4 on a
    2-core machine); the count is clamped, said once per pipeline when it is planned
    (:func:`jisu.dataset.engine.plan.log_clamped_workers`).
    """
    if value is None:
        value = default
    check_int(op, "num_parallel_workers", value, minimum=1)
    cpus = available_cpus()
    return min(value, cpus)


def resolve_shards(op: str, num_shards: int | None, shard_id: int | None) -> tuple[int, int] | None:
    """Validate ``num_shards``/``shard_id``; default to the torch.distributed group if any."""
    if num_shards is None and shard_id is None:
        try:
            import torch.distributed as dist

            if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                return dist.get_world_size(), dist.get_rank()
        except Exception:  # no usable process group: not sharded
            pass
        return None
    if num_shards is None or shard_id is None:
        raise ValueError(
            f"{op}: num_shards and shard_id must be given together. "
            f"Received: num_shards={num_shards}, shard_id={shard_id}"
        )
    check_int(op, "num_shards", num_shards, minimum=1)
    if num_shards > INT32_MAX:  # MindSpore's interval [1, 2**31 - 1], checked when built
        raise ValueError(
            f"{op}: num_shards must be <= {INT32_MAX}. Received: num_shards={num_shards}"
        )
    check_int(op, "shard_id", shard_id, minimum=0)
    if shard_id >= num_shards:
        raise ValueError(
            f"{op}: shard_id must be in [0, num_shards). "
            f"Received: num_shards={num_shards}, shard_id={shard_id}"
        )
    return num_shards, shard_id


def check_max_rowsize(op: str, value: Any) -> Any:
    """MindSpore's ``max_rowsize``: None, an int in [-1, 2**31 - 1] (MB of shared memory per
    row), or a list ``[in_rowsize, out_rowsize]`` of two. jisu takes it and sizes its worker
    processes' shared memory from the data itself (MindSpore's -1/None), so only the checks
    are MindSpore's.

    Raises:
        TypeError: not None, an int or a list of two ints (a tuple is refused, as MindSpore
            2.10 refuses it).
        ValueError: an int below -1 or above 2**31 - 1.
    """
    if value is None:
        return None
    values = list(value) if isinstance(value, list) else [value]
    if (isinstance(value, list) and len(values) != 2) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise TypeError(
            f"{op}: max_rowsize must be an int or a list [in_rowsize, out_rowsize] of two ints. "
            f"Received: max_rowsize={value!r}"
        )
    for v in values:
        if not -1 <= v <= INT32_MAX:
            raise ValueError(
                f"{op}: max_rowsize must be in [-1, {INT32_MAX}] (MB; -1: sized from the data). "
                f"Received: max_rowsize={value!r}"
            )
    return value
