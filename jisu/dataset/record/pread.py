"""Reading data-set files by ``pread``, never through a memory map.

A memory-mapped file that shrinks while it is read kills the process: the first touch of a
page past the new end raises SIGBUS ("Fatal Python error: Bus error"), which no ``try`` catches.
Checking the size first does not help (the file can shrink between the check and the copy, and
a view of a map handed to the pipeline is touched long after any check). So jisu's readers of
local record, TFRecord and MindRecord files copy what they need with ``os.pread``/``os.preadv``:
a file that shrank gives a short read, at any moment, and a short read is a
:class:`~jisu.dataset.record.validate.MalformedFileError` naming the file. The cost is one
system call per read (about a microsecond; a row's payload is one read).

Descriptors: a :class:`PreadFile` keeps its file open, so a file renamed or removed while it is
read is still read (as a map would be). At most :data:`MAX_OPEN_FILES` descriptors are kept
across the process, so that data sets of thousands of files do not exhaust ``ulimit -n``: the
first files opened keep their descriptor for good (*pinned*; a read takes no lock); the files
opened beyond share the last :data:`POOLED_FILES` descriptors: the least recently used one that
no read is using is closed, and reopened by name when its file is read again, after checking
that the name still leads to the same file (device and inode). A pooled file replaced or
removed meanwhile is an error naming it.
"""

from __future__ import annotations

import os
import resource
import stat
import threading
import weakref
import zlib
from collections import OrderedDict
from typing import Any

from .validate import MalformedFileError, open_regular


def _descriptor_budget() -> int:
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        soft = 1024
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 16
    return max(32, min(1024, soft // 4))


#: Descriptors kept open by all :class:`PreadFile` objects of the process (a quarter of the
#: soft ``RLIMIT_NOFILE``, between 32 and 1024). Set it before opening data sets to change it.
MAX_OPEN_FILES = _descriptor_budget()
#: How many of them the files opened beyond the pinned ones share (reopened by name).
POOLED_FILES = 16
CHUNK_BYTES = 8 << 20  # one read when a whole file is scanned (checksums)

# An RLock: a finalizer (run by the garbage collector, maybe while this thread holds the lock
# in the middle of an allocation) takes it too.
_lock = threading.RLock()
_pinned = [0]  # files holding their descriptor for good
#: id -> weak reference of each pooled file holding a descriptor, least recently used first
_pool: OrderedDict[int, weakref.ref] = OrderedDict()


def _reset_after_fork() -> None:  # a fork while another thread held the lock must not hang
    global _lock
    _lock = threading.RLock()


os.register_at_fork(after_in_child=_reset_after_fork)


def _finalize(key: int, fd_box: list[int | None], pinned: bool) -> None:
    """Close a garbage-collected file's descriptor and forget it."""
    with _lock:
        if pinned:
            _pinned[0] -= 1
        _pool.pop(key, None)
        _close_fd(fd_box)


def _close_fd(fd_box: list[int | None]) -> None:
    fd, fd_box[0] = fd_box[0], None
    if fd is not None:
        os.close(fd)


def _evict() -> None:
    """Close the least recently used idle pooled descriptors beyond the pool's size, and
    forget files that no longer exist (under the lock)."""
    excess = len(_pool) - POOLED_FILES
    for key, ref in list(_pool.items()):
        if excess <= 0:
            break
        file = ref()
        if file is None or file._users == 0:
            _pool.pop(key, None)
            if file is not None:
                _close_fd(file._fd)
            excess -= 1


class PreadFile:
    """A regular file read by ``pread`` (see the module docstring). Thread-safe.

    Args:
        path: the file (for messages, and to reopen it).
        fd: an open descriptor of it; the object owns it from now on (closed by
            :meth:`close` or when the object is garbage collected).

    Attributes:
        path: the file.
        size: its size when it was opened.
        pinned: whether it keeps its descriptor for good (:meth:`acquire` takes no lock).
    """

    def __init__(self, path: str, fd: int) -> None:
        info = os.fstat(fd)
        self.path = path
        self.size = info.st_size
        self.identity = (info.st_dev, info.st_ino)
        self._fd: list[int | None] = [fd]  # boxed, so that the finalizer does not hold self
        self._users = 0
        self._closed = False
        with _lock:
            self.pinned = _pinned[0] < MAX_OPEN_FILES - POOLED_FILES
            if self.pinned:
                _pinned[0] += 1
            else:
                _pool[id(self)] = weakref.ref(self)
                _evict()
        self._finalizer = weakref.finalize(self, _finalize, id(self), self._fd, self.pinned)

    @classmethod
    def open(cls, path: str, listed_in: str | None = None) -> PreadFile:
        """Open ``path``, which must be a regular file (see
        :func:`~jisu.dataset.record.validate.open_regular`).

        Raises:
            FileNotFoundError: it does not exist.
            MalformedFileError: it is not a regular file.
        """
        return cls(path, open_regular(path, listed_in))

    def acquire(self) -> int:
        """The descriptor, held open until :meth:`release` (reopened if it was closed)."""
        if self.pinned and not self._closed:
            return self._fd[0]  # type: ignore[return-value]  # open while self is reachable
        with _lock:
            if self._closed:
                raise ValueError(f"'{self.path}' was closed")
            self._users += 1
            fd = self._fd[0]
            if fd is not None:
                _pool.move_to_end(id(self))
                return fd
            try:
                fd = self._reopen()
            except BaseException:
                self._users -= 1
                raise
            self._fd[0] = fd
            _pool[id(self)] = weakref.ref(self)
            _evict()
            return fd

    def release(self) -> None:
        """Let the descriptor that :meth:`acquire` gave be closed again."""
        if self.pinned:
            return
        with _lock:
            self._users -= 1

    def _reopen(self) -> int:
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
        gone = MalformedFileError(
            self.path,
            f"was replaced or removed while being read (jisu keeps {MAX_OPEN_FILES} files "
            "open, see jisu.dataset.record.pread.MAX_OPEN_FILES, and reopens the others by "
            "name)",
        )
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            raise gone from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != self.identity:
            os.close(fd)
            raise gone
        return fd

    def close(self) -> None:
        """Close the file (idempotent). Only its owner may call it, when no read of it is in
        progress; reads fail afterwards."""
        self._closed = True
        self._finalizer()

    # ------------------------------------------------------------------ reads
    def truncated(self, start: int, end: int, got: int) -> MalformedFileError:
        """The error of a read of bytes ``[start, end)`` that gave only ``got`` bytes."""
        try:
            now = f"it now has {os.stat(self.path).st_size} bytes"
        except OSError:
            now = "it is gone"
        return MalformedFileError(
            self.path,
            f"was truncated while being read: reading bytes [{start}, {end}) gave {got} "
            f"bytes ({now}, {self.size} when it was opened)",
        )

    def read_into(self, buffer: Any, offset: int, fd: int | None = None) -> None:
        """Fill the writable ``buffer`` (bytearray, NumPy array, memoryview) with the bytes at
        ``offset``; ``fd``: a descriptor the caller holds from :meth:`acquire`.

        Raises:
            MalformedFileError: the file ends before the buffer is full (it shrank).
            OSError: the read failed (the message names the file).
        """
        view = memoryview(buffer).cast("B")
        n = len(view)
        if n == 0:
            return
        held = fd is not None
        if not held:
            fd = self.acquire()
        try:
            got = os.preadv(fd, [view], offset)
            while 0 < got < n:  # a short read that is not the end of the file
                more = os.preadv(fd, [view[got:]], offset + got)
                if more == 0:
                    break
                got += more
        except OSError as exc:
            raise OSError(exc.errno, f"reading '{self.path}' failed: {exc.strerror}") from exc
        finally:
            if not held:
                self.release()
        if got != n:
            raise self.truncated(offset, offset + n, got)

    def read(self, offset: int, n: int) -> bytes:
        """``n`` bytes at ``offset`` (see :meth:`read_into`)."""
        if n <= 0:
            return b""
        fd = self.acquire()
        try:
            data = os.pread(fd, n, offset)
        except OSError as exc:
            raise OSError(exc.errno, f"reading '{self.path}' failed: {exc.strerror}") from exc
        finally:
            self.release()
        if len(data) == n:
            return data
        out = bytearray(n)  # a short read: the end of the file, or (rarely) a partial read
        self.read_into(out, offset)
        return bytes(out)

    def crc32(self, size: int | None = None) -> int:
        """The CRC-32 of the file's first ``size`` bytes (default: its size at open), read in
        chunks into one buffer (zlib releases the GIL)."""
        size = self.size if size is None else size
        buffer = bytearray(min(CHUNK_BYTES, max(size, 1)))
        view = memoryview(buffer)
        crc = 0
        for start in range(0, size, len(buffer)):
            part = view[: min(len(buffer), size - start)]
            self.read_into(part, start)
            crc = zlib.crc32(part, crc)
        return crc
