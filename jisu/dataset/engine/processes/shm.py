"""Shared-memory buffers ("slabs") that carry worker-process results to the consumer.

A slab is an anonymous memory file (``memfd_create``; an immediately unlinked file in
``/dev/shm`` where memfd is missing) whose pages are reserved up front with
``posix_fallocate``: running out of shared memory is a clear error when the slab is made, never
a SIGBUS when a worker writes. Nothing has a name on the file system once a slab exists, so no
way of ending the program (even SIGKILL) can leak a segment. Workers receive the file
descriptor over their pipe.

Results are packed as raw array bytes plus a small layout; the consumer gets NumPy arrays that
are views of the slab (no copy), and the slab returns to its pool when the last of them dies.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...core.ragged import RaggedArray

_ALIGN = 64


def _round_up(n: int, to: int) -> int:
    return -(-n // to) * to


def shared_memory_available() -> int:
    """Bytes of shared memory a new slab may use: free memory (memfd) or free /dev/shm."""
    if hasattr(os, "memfd_create"):
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        available = int(line.split()[1]) * 1024
                        break
                else:
                    return 1 << 62
        except OSError:
            return 1 << 62
        try:  # a cgroup memory limit caps it further
            with open("/sys/fs/cgroup/memory.max") as f:
                limit = f.read().strip()
            with open("/sys/fs/cgroup/memory.current") as f:
                used = int(f.read())
            if limit != "max":
                available = min(available, int(limit) - used)
        except (OSError, ValueError):
            pass
        return available
    stat = os.statvfs("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    return stat.f_bavail * stat.f_frsize


class Slab:
    """One anonymous shared-memory buffer, mapped in this process."""

    def __init__(self, slab_id: int, size: int) -> None:
        self.id = slab_id
        self.size = size
        if hasattr(os, "memfd_create"):
            self.fd = os.memfd_create(f"jisu-slab-{slab_id}", os.MFD_CLOEXEC)
        else:  # pragma: no cover - not Linux
            directory = "/dev/shm" if os.path.isdir("/dev/shm") else None
            fd, path = tempfile.mkstemp(prefix="jisu-slab-", dir=directory)
            os.unlink(path)
            self.fd = fd
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(self.fd, 0, size)  # reserve now: ENOSPC here, not SIGBUS later
            else:  # pragma: no cover - not Linux
                os.ftruncate(self.fd, size)
            self.map = mmap.mmap(self.fd, size)
        except OSError:
            os.close(self.fd)
            raise

    def close(self) -> None:
        """Release this process's handles (the memory goes once every process let go)."""
        try:
            self.map.close()
        except BufferError:
            pass  # arrays still point into it; the mapping goes with them
        try:
            os.close(self.fd)
        except OSError:
            pass


def _flatten(value: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":
        arrays.append(value)
        return _ArrayRef(len(arrays) - 1)
    if isinstance(value, RaggedArray):  # two arrays: no pickling of a batch's bytes
        return _RaggedRef(_flatten(value.values, arrays), _flatten(value.offsets, arrays))
    if isinstance(value, tuple):
        return tuple(_flatten(v, arrays) for v in value)
    if isinstance(value, list):
        return [_flatten(v, arrays) for v in value]
    return value


def _rebuild(value: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(value, _ArrayRef):
        return arrays[value.index]
    if isinstance(value, _RaggedRef):
        return RaggedArray(_rebuild(value.values, arrays), _rebuild(value.offsets, arrays))
    if isinstance(value, tuple):
        return tuple(_rebuild(v, arrays) for v in value)
    if isinstance(value, list):
        return [_rebuild(v, arrays) for v in value]
    return value


class _ArrayRef:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __reduce__(self):
        return (_ArrayRef, (self.index,))


class _RaggedRef:
    __slots__ = ("offsets", "values")

    def __init__(self, values: Any, offsets: Any) -> None:
        self.values = values
        self.offsets = offsets

    def __reduce__(self):
        return (_RaggedRef, (self.values, self.offsets))


def pack(result: Any, buffer: memoryview | mmap.mmap | None) -> tuple[Any, int]:
    """Write the arrays of ``result`` (nested lists/tuples of arrays) into ``buffer``.

    Returns:
        ``(layout, nbytes)``: ``layout`` for :func:`unpack`, or None when ``buffer`` is None or
        too small (``nbytes`` says how much it would need).
    """
    arrays: list[np.ndarray] = []
    structure = _flatten(result, arrays)
    entries = []
    offset = 0
    for a in arrays:
        entries.append((a.dtype, a.shape, offset))
        offset = _round_up(offset + a.nbytes, _ALIGN)
    if buffer is None or offset > len(buffer):
        return None, offset
    for a, (_, _, start) in zip(arrays, entries):
        if a.nbytes:
            destination = np.ndarray(a.shape, a.dtype, buffer=buffer, offset=start)
            np.copyto(destination, a)
    return (structure, entries, offset), offset


def unpack(layout: Any, buffer: mmap.mmap, on_release: Callable[[], None]) -> Any:
    """Arrays that are views of ``buffer``; ``on_release`` runs when the last one is gone."""
    structure, entries, nbytes = layout
    root = np.frombuffer(buffer, dtype=np.uint8, count=max(nbytes, 1))
    # np.ndarray checks that each array lies inside root (the layout is the worker's word)
    arrays = [
        np.ndarray(shape, dtype, buffer=root, offset=start) for dtype, shape, start in entries
    ]
    weakref.finalize(root, on_release)
    return _rebuild(structure, arrays)
