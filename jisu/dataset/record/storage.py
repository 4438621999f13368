"""Where bytes come from: local files, or any fsspec filesystem (``s3://``, ``gs://``, ``hf://``
...), read by byte ranges, with a node-local cache of whole shards.

Local paths never come here: readers read local files by ``pread``. Only a path with a URL
scheme (``scheme://...``) is opened through fsspec, which is an optional dependency
(``pip install "jisu[s3]"``) imported on first use. Credentials and endpoints come from the
filesystem's standard environment (for S3: ``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, the
credential chain) or from ``storage_options`` (passed to the fsspec filesystem as keyword
arguments, e.g. ``{"endpoint_url": "http://127.0.0.1:9000", "key": ..., "secret": ...}``).

:class:`RemoteFile` is one object of a remote filesystem read by ranges: every read is one
ranged GET (``fs.cat_file(path, start, end)``, stateless, so threads read in parallel), and a
read that comes back short (the object was truncated or replaced) is a
:class:`MalformedFileError` naming the URL. Arrow opens an IPC file over it with a few
small reads (the footer) and reads one record batch with one ranged read. On S3 every read is
pinned to the object as it was when it was opened (checked against the manifest): to its
version (``VersionId``) in a versioned bucket, which then keeps serving the bytes that were
checked, and to its ETag (``If-Match``): an object replaced since, even by as many bytes, is a
:class:`MalformedFileError` naming the URL, never different bytes.

Requests (timeouts, retries, cancellation): every request jisu makes to read a data set is
bounded, and its failure is one error naming the URL (:class:`StorageError`, an ``OSError``,
when the storage cannot be reached or does not answer); see
:mod:`jisu.dataset.record.storage_requests` for the policy (:data:`CONNECT_TIMEOUT_S`,
:data:`READ_TIMEOUT_S`, :data:`ATTEMPTS`) and how ``storage_options`` changes it.

:class:`ShardCache` keeps whole shards in a local folder, keyed by their URL, size and CRC-32:

* a shard enters the cache only after it was downloaded in full under a temporary name and its
  size and CRC-32 matched the manifest; it is then renamed into place (atomic, so no reader
  ever sees a partial file), under an exclusive lock on the entry so that processes and
  threads filling one shard at once download it once;
* a cached file is checked again (size, CRC-32 once per file and process) before it is used;
  one that does not match (corrupted on disk) is removed and fetched again, never trusted;
* a reader gets a cached shard already open (:class:`~.pread.PreadFile`): found open then
  checked, or opened as it is renamed into place, before another process may evict it (under
  the folder's eviction lock). Readers sharing one bounded folder evict each other's shards
  at any time: the removed file stays readable through the open descriptor (POSIX; a
  descriptor pread's pool lets go is reopened through a link of the reader's own), so no
  read fails for it; one found gone before it was opened is fetched again;
* the cache holds at most ``size_limit`` bytes: before a file is added, the least recently
  used whole files are removed (use refreshes a file's time; the space of a removed file still
  open in a reader is freed when that reader closes it). A shard larger than the bound is not
  cached (it is read by ranges);
* a folder with no room (a write fails with ENOSPC, EDQUOT or EFBIG) is not an error: the
  shard being downloaded is still verified, a warning names the folder (once per process),
  that cache stops writing, and its readers read the shards not yet cached by ranges.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import secrets
import threading
import time
import warnings
import weakref
import zlib
from collections.abc import Iterator
from typing import Any

from ...files import host_tag, pid_alive
from .format import file_identity, memo_crc
from .pread import PreadFile
from .remote_answers import short_answer
from .storage_requests import ATTEMPTS as ATTEMPTS  # re-exported (as X): defined here before
from .storage_requests import CONNECT_TIMEOUT_S as CONNECT_TIMEOUT_S
from .storage_requests import INSTALL_HINT as INSTALL_HINT
from .storage_requests import READ_TIMEOUT_S as READ_TIMEOUT_S
from .storage_requests import (
    StorageError,
    call,
    get_range,
    is_s3fs,
    precondition_failed,
    remote_info,
)
from .storage_requests import exists as exists
from .storage_requests import filesystem as filesystem
from .storage_requests import remote_size as remote_size
from .validate import MalformedFileError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
CHUNK_BYTES = 8 << 20  # one ranged GET when a shard is fetched whole
BULK_CHUNK_BYTES = 32 << 20  # ... from S3 on botocore's client (one GET for most shards)
MAX_READ_BYTES = 1 << 30  # the largest single ranged read (one record batch) taken
CACHE_SUFFIX = ".arrow"
_TEMP = re.compile(r".+\.tmp-(?P<pid>\d+)-(?P<tag>[0-9a-f]{8})[0-9a-f]{8}")


def is_url(path: Any) -> bool:
    """Whether ``path`` is a URL with a scheme (``s3://bucket/key``), to be read via fsspec.
    Plain paths and ``os.PathLike`` objects are local files."""
    return isinstance(path, str) and _URL.match(path) is not None


def open_remote(fs: Any, path: str, url: str) -> RemoteFile:
    """A :class:`RemoteFile` over the object at ``path`` as it is now: its size, and its
    reads pinned to this version of it (see :func:`remote_info`)."""
    size, pin = remote_info(fs, path, url)
    return RemoteFile(fs, path, url, size, pin=pin)


class RemoteFile:
    """A read-only, seekable file object over one remote object of known size, read by ranges.

    Each ``read`` is one ranged request; ``read_range`` is stateless and thread-safe. The
    last ``tail`` bytes (where Arrow's footer lies) are fetched once and kept, so several
    Arrow readers of one shard (one per thread) share them. A short answer (the object
    changed size) raises a :class:`MalformedFileError` naming the URL.
    """

    def __init__(
        self,
        fs: Any,
        path: str,
        url: str,
        size: int,
        tail: int = 64 << 10,
        pin: dict[str, str] | None = None,
    ) -> None:
        self.fs, self.path, self.url, self.size = fs, path, url, size
        self.pin = pin or {}  # S3: the VersionId / ETag every read must match
        self.s3 = is_s3fs(fs, url)  # read by s3_range: each answer checked
        self.closed = False
        self._pos = 0
        self._tail_start = max(0, size - tail)
        self._tail: bytes | None = None
        self._lock = threading.Lock()
        #: ``ahead(start, end)``: the range's bytes when they were fetched ahead, else None
        #: (:mod:`.read_ahead`); shared by clones
        self.ahead: Any = None

    def clone(self) -> RemoteFile:
        """Another file object over the same object, sharing the fetched tail."""
        other = RemoteFile.__new__(RemoteFile)
        other.__dict__.update(self.__dict__)
        other._pos, other.closed = 0, False
        other._shared = self
        return other

    def in_tail(self, start: int) -> bool:
        """Whether bytes from ``start`` on are in the tail (fetched once, then kept)."""
        return start >= getattr(self, "_shared", self)._tail_start

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (clamped to its size)."""
        end = min(end, self.size)
        if start >= end:
            return b""
        owner = getattr(self, "_shared", self)
        if start >= owner._tail_start:
            with owner._lock:
                if owner._tail is None:
                    owner._tail = self._get(owner._tail_start, self.size)
            return owner._tail[start - owner._tail_start : end - owner._tail_start]
        if owner.ahead is not None:
            data = owner.ahead(start, end)
            if data is not None:
                return data
        return self._get(start, end)

    def _get(self, start: int, end: int) -> bytes:
        if end - start > MAX_READ_BYTES:  # one record batch, as the file's footer describes it
            raise MalformedFileError(
                self.url,
                f"one read of {end - start} bytes was asked for (bytes [{start}, {end})); jisu "
                f"reads at most {MAX_READ_BYTES} at once from object storage: a record batch "
                "that large is not one jisu's writer makes",
            )
        what = f"reading bytes [{start}, {end})"
        try:
            if self.s3:
                data = get_range(self.fs, self.url, self.path, start, end, self.pin, self.size)
            else:
                data = call(self.fs, self.url, what, "cat_file", self.path, start=start, end=end)
        except FileNotFoundError:
            raise FileNotFoundError(f"'{self.url}' does not exist (any more)") from None
        except StorageError as exc:
            if precondition_failed(exc.__cause__ or exc):
                raise MalformedFileError(
                    self.url,
                    f"the object changed after it was opened (it is no longer the one with "
                    f"ETag {self.pin.get('ETag')}): it was replaced; open the data set again "
                    "to read the new one",
                ) from exc
            raise
        if len(data) != end - start:
            raise short_answer(self.url, start, end, len(data), self.size)
        return data

    # the file protocol that pyarrow.PythonFile needs
    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else self._pos + n
        data = self.read_range(self._pos, end)
        self._pos += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self.size}[whence]
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


def read_whole(file: RemoteFile, sink: Any = None) -> int:
    """Read the whole object in chunks (writing them to ``sink`` if given); its CRC-32. From
    S3 on botocore's blocking client, a thread per request (see :mod:`.s3_bulk`)."""
    from .s3_bulk import bulk_client, bulk_range

    client = bulk_client(file.fs, file.url)
    step = CHUNK_BYTES if client is None else BULK_CHUNK_BYTES
    crc = 0
    for start in range(0, file.size, step):
        end = min(file.size, start + step)
        chunk = file._get(start, end) if client is None else bulk_range(file, client, start, end)
        crc = zlib.crc32(chunk, crc)
        if sink is not None:
            sink.write(chunk)
    return crc


def crc_mismatch(url: str, manifest: str, crc: int, expected: int) -> MalformedFileError:
    """The error of a shard whose bytes do not match the manifest's checksum."""
    return MalformedFileError(
        url,
        f"shard does not match its checksum in '{manifest}' (crc32 {crc:08x}, expected "
        f"{expected:08x}): it was altered or corrupted",
    )


@contextlib.contextmanager
def _flock(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a write refused for want of room
_warned_full: set[str] = set()
_warned_lock = threading.Lock()


class _CacheSink:
    """The temporary file a shard is downloaded into. When the disk refuses more (full, over
    quota, past the process's file size limit) the error is kept and the rest of the bytes
    dropped, so that the download still verifies the shard."""

    def __init__(self, path: str) -> None:
        self.error: OSError | None = None
        self._file: Any = None
        try:
            self._file = open(path, "wb")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            self._refused(exc)

    def _refused(self, exc: OSError) -> None:
        if exc.errno not in _NO_ROOM:
            raise exc
        self.error = exc
        if self._file is not None:
            with contextlib.suppress(OSError):  # flushing the rest fails the same way
                self._file.close()
        self._file = None

    def write(self, chunk: bytes) -> None:
        if self._file is not None:
            try:
                self._file.write(chunk)
            except OSError as exc:
                self._refused(exc)

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._refused(exc)


class ShardCache:
    """A node-local, size-bounded cache of whole, checksum-verified shards (see the module
    docstring). Thread- and process-safe: several readers (threads, worker processes, ranks
    on one node) may share one folder.

    Args:
        folder: the cache folder (created if missing).
        size_limit: most bytes the cached shards may hold (None: no bound).
    """

    def __init__(self, folder: str, size_limit: int | None = None) -> None:
        if not isinstance(folder, (str, os.PathLike)) or not os.fspath(folder):
            raise TypeError(f"cache_dir must be a local folder path. Received: {folder!r}")
        folder = os.fspath(folder)
        if is_url(folder):
            raise ValueError(f"cache_dir must be a local folder, not a URL. Received: {folder!r}")
        if size_limit is not None and (
            isinstance(size_limit, bool) or not isinstance(size_limit, int) or size_limit < 0
        ):
            raise ValueError(f"cache_size must be an int >= 0 (bytes). Received: {size_limit!r}")
        self.folder = os.path.abspath(folder)
        self.size_limit = size_limit
        self.full = False  # the folder refused a write: verify shards, cache none
        try:
            os.makedirs(self.folder, exist_ok=True)
        except OSError as exc:
            if exc.errno not in _NO_ROOM:
                raise
            self._no_room(exc)

    def name(self, url: str, size: int, crc32: int) -> str:
        """The cache file of the shard at ``url`` with this size and checksum."""
        digest = hashlib.sha256(url.encode()).hexdigest()[:32]
        return os.path.join(self.folder, f"{digest}-{size}-{crc32:08x}{CACHE_SUFFIX}")

    def lookup(self, url: str, size: int, crc32: int) -> PreadFile | None:
        """The verified cache file of a shard, open (it stays readable if another reader of
        the folder evicts it now), or None. A file that fails the check is removed (and will
        be fetched again)."""
        path = self.name(url, size, crc32)
        try:
            file = _open_cached(path)
        except FileNotFoundError:
            return None
        try:
            info = os.fstat(file.acquire())
            crc = None  # a file of another size is not this shard's copy
            if info.st_size == size:  # its CRC once per file and process, as the reader's
                crc = memo_crc(file_identity(path, info), lambda: file.crc32(size))
        finally:
            file.release()
        if info.st_size != size or crc != crc32:
            file.close()
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            return None
        with contextlib.suppress(OSError):  # recently used: evicted last (the access time;
            os.utime(path, ns=(time.time_ns(), info.st_mtime_ns))  # mtime keys the CRC memo)
        return file

    def fetch(self, file: RemoteFile, crc32: int, manifest: str) -> PreadFile | None:
        """Download the shard into the cache (once, whatever the number of threads and
        processes asking), verified against ``crc32``; its cache file, open (see
        :meth:`lookup`), or None when the shard is larger than the cache may hold or the
        folder has no room (then it is only verified; see the module docstring).

        Raises:
            MalformedFileError: the shard does not match its size or checksum (named by URL).
        """
        if self.full or (self.size_limit is not None and file.size > self.size_limit):
            self._verify(file, crc32, manifest)
            return None
        final = self.name(file.url, file.size, crc32)
        verified, opened = False, None
        try:
            with _flock(final + ".lock"):
                found = self.lookup(file.url, file.size, crc32)
                if found is not None:
                    return found
                temp = f"{final}.tmp-{os.getpid()}-{host_tag()}{secrets.token_hex(4)}"
                try:
                    sink = _CacheSink(temp)
                    try:
                        crc = read_whole(file, sink)
                    finally:
                        sink.close()
                    if crc != crc32:
                        raise crc_mismatch(file.url, manifest, crc, crc32)
                    verified = True
                    if sink.error is not None:
                        raise sink.error
                    with _flock(os.path.join(self.folder, ".evict.lock")):  # one at once
                        self._evict(file.size, keep=final)
                        os.replace(temp, final)
                        temp = None
                        opened = _open_cached(final)  # before anyone may evict it
                finally:
                    if temp is not None:
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(temp)
        except OSError as exc:
            if exc.errno not in _NO_ROOM:
                raise
            self._no_room(exc)
            if not verified:
                self._verify(file, crc32, manifest)
            return None
        return opened

    @staticmethod
    def _verify(file: RemoteFile, crc32: int, manifest: str) -> None:
        crc = read_whole(file)
        if crc != crc32:
            raise crc_mismatch(file.url, manifest, crc, crc32)

    def _no_room(self, exc: OSError) -> None:
        """The folder refused a write: stop writing to it (this cache only verifies from now
        on, and its readers read by ranges), with one warning per folder and process."""
        self.full = True
        with _warned_lock:
            if self.folder in _warned_full:
                return
            _warned_full.add(self.folder)
        warnings.warn(
            f"jisu: the shard cache folder '{self.folder}' has no room ({exc.strerror}): "
            "shards not cached yet are read from object storage by ranged requests instead. "
            "Free space there, lower cache_size, or point cache_dir (JISU_CACHE_DIR) at a "
            "larger folder",
            RuntimeWarning,
            stacklevel=3,
        )

    def _evict(self, incoming: int, keep: str) -> None:
        """Remove least recently used shards until ``incoming`` more bytes fit, and the
        temporary files of killed processes (called under the folder's lock)."""
        entries = []
        tag = host_tag()
        for entry in os.scandir(self.folder):
            match = _TEMP.fullmatch(entry.name)
            if match and match["tag"] == tag and not pid_alive(int(match["pid"])):
                with contextlib.suppress(OSError):
                    os.remove(entry.path)
                continue
            if entry.name.endswith(CACHE_SUFFIX) and entry.path != keep:
                with contextlib.suppress(OSError):
                    info = entry.stat()
                    entries.append((info.st_atime_ns, info.st_size, entry.path))
        if self.size_limit is None:
            return
        total = sum(size for _, size, _ in entries) + incoming
        for _, size, path in sorted(entries):
            if total <= self.size_limit:
                break
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)  # readers that opened it keep reading it
            total -= size


def _open_cached(path: str) -> PreadFile:
    """A cache file, open; if pread's pool may close its descriptor (many files open), it is
    reopened by a link of this process's own, which others' evictions leave alone (removed
    with the file object; a dead process's, by the next eviction)."""
    file = PreadFile.open(path)
    if not file.pinned:
        link = f"{path}.tmp-{os.getpid()}-{host_tag()}{secrets.token_hex(4)}"
        with contextlib.suppress(OSError):  # no links there: reopened by its name
            os.link(path, link)
            weakref.finalize(file, _remove_quietly, link)
            info = os.stat(link)
            if (info.st_dev, info.st_ino) == file.identity:  # else evicted, fetched again
                file.path = link
    return file


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def default_cache() -> tuple[str | None, int | None]:
    """The cache folder and size bound from ``JISU_CACHE_DIR`` / ``JISU_CACHE_SIZE`` (bytes)."""
    folder = os.environ.get("JISU_CACHE_DIR") or None
    size = os.environ.get("JISU_CACHE_SIZE")
    try:
        limit = int(size) if size else None
    except ValueError:
        raise ValueError(f"JISU_CACHE_SIZE must be a number of bytes. Received: {size!r}") from None
    return folder, limit
