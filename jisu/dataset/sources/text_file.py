"""TextFileDataset: one row per non-empty line of text files, read by index.

Opening the files builds an index of where each line starts and ends (scanning the bytes in
16 MiB chunks with NumPy; 16 bytes per line kept), so a row is read with one ``os.pread`` of
its line and decoded then: large files are not read into Python objects up front. The files
are read with ``pread`` rather than memory-mapped so that a file truncated while in use gives
an error naming it instead of a SIGBUS.
"""

from __future__ import annotations

import os
import stat
import threading
from typing import Any

import numpy as np

from .csv import find_dataset_files
from .csv_errors import _located
from .file_order import file_rows_order
from .generator import Source
from .options import ReadOptions, Shuffle, check_cache

OP = "TextFileDataset"
CHUNK = 16 << 20
_BOM = b"\xef\xbb\xbf"


def index_lines(op: str, path: str) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)``: byte ranges of the non-empty lines of ``path``, line breaks (``\\n``,
    or ``\\r\\n``) and a leading UTF-8 byte order mark excluded."""
    starts, ends = [], []
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError(f"{op}: '{path}' is not a regular file")
        buf = np.empty(CHUNK, np.uint8)
        pos = 0  # file offset of buf[0]
        line_start = 0
        prev_byte = -1  # the byte before buf[0]
        head = f.read(3)
        if head != _BOM:
            f.seek(0)
        else:
            pos = line_start = 3
        while True:
            size = f.readinto(memoryview(buf))
            if not size:
                break
            chunk = buf[:size]
            newlines = np.flatnonzero(chunk == 10)
            if len(newlines):
                before = np.where(newlines > 0, chunk[newlines - 1], prev_byte)
                line_ends = newlines + pos - (before == 13)
                line_starts = np.empty(len(newlines), np.int64)
                line_starts[0] = line_start
                line_starts[1:] = newlines[:-1] + pos + 1
                starts.append(line_starts)
                ends.append(line_ends.astype(np.int64))
                line_start = int(newlines[-1]) + pos + 1
            prev_byte = int(chunk[-1])
            pos += size
    if line_start < pos:  # a last line without a line break
        end = pos - (prev_byte == 13)
        starts.append(np.array([line_start], np.int64))
        ends.append(np.array([end], np.int64))
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    s, e = np.concatenate(starts), np.concatenate(ends)
    keep = e > s  # empty lines are not rows
    return s[keep], e[keep]


def line_number(path: str, offset: int) -> int:
    """1-based number of the line holding byte ``offset`` of ``path`` (for error messages)."""
    count = 0
    with open(path, "rb") as f:
        while offset > 0:
            chunk = f.read(min(CHUNK, offset))
            if not chunk:
                break
            count += chunk.count(b"\n")
            offset -= len(chunk)
    return count + 1


class _Lines:
    """Random access to the lines of ``files``: item ``i`` is ``(text,)``, a 0-d str array."""

    #: files kept open for ``pread``; more files are opened for each read
    MAX_OPEN = 128

    def __init__(self, files: list[str]) -> None:
        self._fds: dict[int, int] = {}
        self._lock = threading.Lock()
        self.files = files
        parts = [index_lines(OP, p) for p in files]
        self.starts = np.concatenate([s for s, _ in parts]) if parts else np.zeros(0, np.int64)
        self.ends = np.concatenate([e for _, e in parts]) if parts else np.zeros(0, np.int64)
        self.file_starts = np.cumsum([0] + [len(s) for s, _ in parts]).astype(np.int64)

    def __len__(self) -> int:
        return len(self.starts)

    def file_of(self, index: int) -> int:
        return int(np.searchsorted(self.file_starts, index, side="right")) - 1

    def _read_bytes(self, k: int, start: int, size: int) -> bytes:
        if k >= self.MAX_OPEN:
            with open(self.files[k], "rb") as f:
                f.seek(start)
                return f.read(size)
        fd = self._fds.get(k)
        if fd is None:
            with self._lock:
                fd = self._fds.get(k)
                if fd is None:
                    fd = self._fds[k] = os.open(self.files[k], os.O_RDONLY)
        return os.pread(fd, size, start)

    def __getitem__(self, index: int) -> tuple:
        k = self.file_of(index)
        start, end = int(self.starts[index]), int(self.ends[index])
        data = self._read_bytes(k, start, end - start)
        path = self.files[k]
        if len(data) != end - start:
            raise _located(path, None, "the file changed (it is shorter) since it was opened", OP)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = line_number(path, start)
            raise _located(
                path, line, f"not valid UTF-8 ({exc.reason} at byte {exc.start})", OP
            ) from None
        return (np.array(text),)

    def close(self) -> None:
        with self._lock:
            fds, self._fds = self._fds, {}
        for fd in fds.values():
            try:
                os.close(fd)
            except OSError:
                pass

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> dict:  # worker processes open the files again
        state = dict(self.__dict__)
        state["_fds"], state["_lock"] = {}, None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


class TextFileDataset(Source):
    """One row per line of text files (``mindspore.dataset.TextFileDataset``): column ``text``.

    Args:
        dataset_files: a path or glob pattern, or a list of them; the matching files are read
            in sorted order.
        num_samples, num_parallel_workers: as in :class:`GeneratorDataset`.
        num_shards, shard_id: MindSpore's rule for these files: shard ``k`` reads the
            contiguous block of ``ceil(n / num_shards)`` lines from line ``k * ceil(n /
            num_shards)`` of the files laid end to end, wrapping around to the first lines
            (see :mod:`jisu.dataset.sources.file_order`); ``num_samples`` keeps the block's
            first lines.
        shuffle: ``Shuffle.GLOBAL`` / True (default: the files in a new order each epoch, the
            shard's block taken from them, then its lines in a new order), ``Shuffle.FILES``
            (the same blocks, lines in file order), ``Shuffle.INFILE`` (the lines of
            ``shuffle=False``, shuffled within each file; MindSpore ignores this level) or
            False.
        cache: not supported (must be None).

    Lines end with ``\\n`` or ``\\r\\n`` (neither is part of the row); empty lines are not rows
    (a line of spaces is); a leading UTF-8 byte order mark is dropped. A row is a 0-d
    ``numpy.str_`` array. A line that is not valid UTF-8 fails the iteration with an error
    naming the file and the line (a ``ValueError``, catchable as ``RuntimeError``); in error
    samples mode "skip" it is left out and counted instead.

    Raises:
        ValueError, TypeError: bad arguments, naming the argument; no lines in any file.
    """

    default_workers = None  # config's default
    serial_reads = False  # pread is thread-safe
    file_shuffle = True
    builds_indexed_source = True

    def __init__(
        self,
        dataset_files: Any,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle | None = Shuffle.GLOBAL,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        check_cache(OP, cache)
        self.dataset_files = find_dataset_files(OP, dataset_files)
        lines = _Lines(self.dataset_files)
        if len(lines) == 0:
            raise ValueError(f"{OP}: the files hold no lines: {self.dataset_files}")
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id
        )
        super().__init__(lines, ["text"], options)

    def _order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return file_rows_order(self.order, n, rng, self.source.file_starts)

    def _sample_name(self, index: int) -> str:
        lines = self.source
        path = lines.files[lines.file_of(index)]
        return f"source[{index}] ('{path}')"  # the reader's errors give the line
