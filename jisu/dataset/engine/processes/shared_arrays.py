"""Large NumPy arrays of a stage, shared with its worker processes instead of copied.

A worker process gets its stage pickled; a NumPy source carries its whole data set, so every
worker would hold a copy of it (N workers, N copies, and a slow start while they are sent).
Arrays of 1 MiB and more are written once into an anonymous shared-memory file instead
(:class:`.shm.Slab`), whose descriptor goes to each worker over its pipe; a worker maps it
copy-on-write, so an op that writes into its input changes only its own copy of that page.

The pickler also notes the modules the stage refers to (its classes and functions pickled by
reference, the modules its functions use), for the forkserver to import them once
(:func:`.start.preload`) rather than each worker on its own.
"""

from __future__ import annotations

import io
import itertools
import mmap
import types
from typing import Any

import cloudpickle
import numpy as np

from .shm import Slab

MIN_SHARED_BYTES = 1 << 20

_slab_ids = itertools.count()
_CODE_TYPES = (type, types.FunctionType, types.BuiltinFunctionType)  # their modules are noted


class _SharingPickler(cloudpickle.Pickler):
    def __init__(self, file: io.BytesIO, shared: list[Slab], modules: set[str]) -> None:
        super().__init__(file)
        self._shared = shared
        self._modules = modules

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is np.ndarray and obj.nbytes >= MIN_SHARED_BYTES and not obj.dtype.hasobject:
            slab = Slab(next(_slab_ids), obj.nbytes)
            np.copyto(np.ndarray(obj.shape, obj.dtype, buffer=slab.map), obj)
            self._shared.append(slab)
            return _attach, (len(self._shared) - 1, obj.dtype, obj.shape)
        if isinstance(obj, _CODE_TYPES):
            module = getattr(obj, "__module__", None)
            if isinstance(module, str):
                self._modules.add(module)
        elif isinstance(obj, types.ModuleType):
            self._modules.add(obj.__name__)
        return super().reducer_override(obj)


def dumps_sharing(obj: Any, modules: set[str] | None = None) -> tuple[bytes, list[Slab]]:
    """``obj`` pickled with cloudpickle, its large arrays moved to shared memory.

    Returns the bytes and the slabs (the caller sends their descriptors, in order, with the
    bytes, and closes the slabs when no new worker will need them). The names of the modules
    ``obj`` refers to are added to ``modules``, when given.

    Raises:
        OSError: not enough shared memory for an array (the message gives its size).
    """
    shared: list[Slab] = []
    buffer = io.BytesIO()
    try:
        _SharingPickler(buffer, shared, modules if modules is not None else set()).dump(obj)
    except OSError as exc:
        for slab in shared:
            slab.close()
        raise OSError(
            exc.errno, f"cannot put a large array of the stage into shared memory: {exc}"
        ) from exc
    return buffer.getvalue(), shared


_received: list[int] = []  # descriptors of the slabs, in a worker, while its stage is unpickled


def loads_attached(data: bytes, fds: list[int]) -> Any:
    """In a worker: unpickle what :func:`dumps_sharing` made, mapping the slabs in ``fds``."""
    _received[:] = fds
    try:
        return cloudpickle.loads(data)
    finally:
        _received.clear()


def _attach(index: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    mapping = mmap.mmap(_received[index], count * dtype.itemsize, access=mmap.ACCESS_COPY)
    return np.frombuffer(mapping, dtype, count=count).reshape(shape)
