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

Requests (timeouts, retries, cancellation). Every request jisu makes to read a data set is
bounded, and its failure is one error naming the URL: :class:`StorageError` (an ``OSError``)
when the storage cannot be reached or does not answer, ``FileNotFoundError`` /
``PermissionError`` naming the URL otherwise. For S3, jisu sets these botocore options unless
``storage_options["config_kwargs"]`` sets them (or, for retries, ``AWS_MAX_ATTEMPTS`` /
``AWS_RETRY_MODE`` do):

* ``connect_timeout``: :data:`CONNECT_TIMEOUT_S` (5 s) to open a connection;
* ``read_timeout``: :data:`READ_TIMEOUT_S` (20 s) of silence while waiting for an answer;
* ``retries``: ``{"total_max_attempts": ATTEMPTS, "mode": "standard"}``, :data:`ATTEMPTS` (3)
  tries of a request in all, with botocore's jittered exponential backoff (a second or two);
  s3fs's own retry loop, which would multiply them, is set to a single try.

So a dead endpoint fails a read within seconds and one that accepts connections and never
answers within ``ATTEMPTS * read_timeout`` plus the backoff (about a minute by default), e.g.
``storage_options={"config_kwargs": {"connect_timeout": 2, "read_timeout": 5, "retries":
{"total_max_attempts": 2}}}`` for a few seconds. Other filesystems (``gs://``, ``hf://``...)
keep their own timeouts and retries. A request made on a pipeline's worker thread is abandoned
(cancelled) as soon as the iterator closes, and all are cancelled when the interpreter exits,
so no thread is left waiting on the network.

:class:`ShardCache` keeps whole shards in a local folder, keyed by their URL, size and CRC-32:

* a shard enters the cache only after it was downloaded in full under a temporary name and its
  size and CRC-32 matched the manifest; it is then renamed into place (atomic, so no reader
  ever sees a partial file), under an exclusive lock on the entry so that processes and
  threads filling one shard at once download it once;
* a cached file is checked again (size, CRC-32 once per file and process) before it is used;
  one that does not match (corrupted on disk) is removed and fetched again, never trusted;
* the cache holds at most ``size_limit`` bytes: before a file is added, the least recently
  used whole files are removed (use refreshes a file's time). A shard larger than the bound
  is not cached (it is read by ranges);
* a folder with no room (a write fails with ENOSPC, EDQUOT or EFBIG) is not an error: the
  shard being downloaded is still verified, a warning names the folder (once per process),
  that cache stops writing, and its readers read the shards not yet cached by ranges.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
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
import zlib
from collections.abc import Iterator
from typing import Any

from ..files import host_tag, pid_alive
from .record.validate import MalformedFileError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
INSTALL_HINT = 'pip install "jisu[s3]"'
CHUNK_BYTES = 8 << 20  # one ranged GET when a shard is fetched whole
MAX_READ_BYTES = 1 << 30  # the largest single ranged read (one record batch) taken
CACHE_SUFFIX = ".arrow"
_TEMP = re.compile(r".+\.tmp-(?P<pid>\d+)-(?P<tag>[0-9a-f]{8})[0-9a-f]{8}")


def is_url(path: Any) -> bool:
    """Whether ``path`` is a URL with a scheme (``s3://bucket/key``), to be read via fsspec.
    Plain paths and ``os.PathLike`` objects are local files."""
    return isinstance(path, str) and _URL.match(path) is not None


CONNECT_TIMEOUT_S = 5.0  # S3: seconds to open a connection (per attempt)
READ_TIMEOUT_S = 20.0  # S3: seconds of silence while waiting for an answer (per attempt)
ATTEMPTS = 3  # S3: tries of one request in all (botocore's standard retry mode)
_S3_PROTOCOLS = ("s3", "s3a")
_POLL_S = 0.05  # how often a thread waiting on a request looks at its run's stop flag


class StorageError(OSError):
    """Object storage could not be reached, did not answer in time, or failed a request
    after the retries allowed (see the module docstring). The message names the URL and the
    timeouts in force; the transport's exception is the ``__cause__``.

    Attributes:
        url: the object (or data set) asked for.
    """

    url: str | None = None

    def __init__(self, url: str, reason: str | None = None) -> None:
        if reason is None:  # one message: how exceptions are rebuilt (a pipeline's context)
            super().__init__(url)
            return
        super().__init__(f"'{url}': {reason}")
        self.url = url


def _is_s3(url: str) -> bool:
    return url.split("://", 1)[0].lower() in _S3_PROTOCOLS


def _s3_options(options: dict) -> dict:
    """``storage_options`` with jisu's timeouts and retry policy filled in where the user
    set none (botocore's ``Config`` options, which s3fs takes as ``config_kwargs``)."""
    config = options.get("config_kwargs")
    if config is not None and not isinstance(config, dict):
        return options  # s3fs says what is wrong with it
    config = dict(config or {})
    config.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    config.setdefault("read_timeout", READ_TIMEOUT_S)
    retries = config.get("retries")
    if retries is None or isinstance(retries, dict):
        retries = dict(retries or {})
        if not {"max_attempts", "total_max_attempts"} & retries.keys() and not os.environ.get(
            "AWS_MAX_ATTEMPTS"
        ):
            retries["total_max_attempts"] = ATTEMPTS
        if "mode" not in retries and not os.environ.get("AWS_RETRY_MODE"):
            retries["mode"] = "standard"
        if retries:
            config["retries"] = retries
    return {**options, "config_kwargs": config}


def _policy(fs: Any) -> str:
    """The timeouts and retries in force for ``fs``, as an error message shows them."""
    config = getattr(fs, "config_kwargs", None)
    if not isinstance(config, dict) or not config:
        return ""
    retries = config.get("retries") if isinstance(config.get("retries"), dict) else {}
    attempts = retries.get("total_max_attempts") or os.environ.get("AWS_MAX_ATTEMPTS")
    if attempts is None and retries.get("max_attempts") is not None:
        attempts = retries["max_attempts"] + 1  # botocore's max_attempts counts retries
    return (
        f" (connect_timeout={config.get('connect_timeout')} s, read_timeout="
        f"{config.get('read_timeout')} s, {attempts or 'default'} attempt(s), as "
        "storage_options['config_kwargs'] may set them)"
    )


_inflight: set[concurrent.futures.Future] = set()
_inflight_lock = threading.Lock()
_exiting = False


@atexit.register
def _cancel_requests() -> None:
    """At interpreter exit: cancel every request in flight and refuse new ones, so that no
    thread is still waiting on the network (inside Arrow's reads) while Python finalizes."""
    global _exiting
    _exiting = True
    with _inflight_lock:
        futures = list(_inflight)
    for future in futures:
        future.cancel()


def _wait(fs: Any, coro: Any) -> Any:
    """Run the coroutine ``coro`` on ``fs``'s event loop and return its result. The wait (and
    the request) is abandoned when the pipeline run of this thread stops (then
    :class:`~jisu.dataset.engine.context.Stopped` is raised) or the interpreter exits."""
    from .engine.context import Stopped
    from .engine.thread_pool import current_stop

    if _exiting:
        coro.close()
        raise Stopped("the interpreter is exiting")
    stop = current_stop()
    future = asyncio.run_coroutine_threadsafe(coro, fs.loop)
    with _inflight_lock:
        _inflight.add(future)
    try:
        # wait() rather than result(timeout): a request may itself raise TimeoutError
        while not concurrent.futures.wait([future], None if stop is None else _POLL_S).done:
            if stop.is_set():
                future.cancel()
                raise Stopped("the pipeline stopped")
        try:
            return future.result()
        except concurrent.futures.CancelledError:  # by _cancel_requests
            raise Stopped("the interpreter is exiting") from None
    finally:
        with _inflight_lock:
            _inflight.discard(future)


def _transport_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the storage could not be reached or did not answer (not that it
    answered with an error, which s3fs turns into a plain ``OSError``)."""
    return (
        not isinstance(exc, OSError)
        or isinstance(exc, (TimeoutError, ConnectionError))
        or type(exc).__module__.split(".")[0] in ("botocore", "aiobotocore", "aiohttp")
    )


def _call(fs: Any, url: str, what: str, method: Any, *args: Any, **kwargs: Any) -> Any:
    """``fs.method(*args, **kwargs)`` as one bounded request (an async filesystem's coroutine
    ``fs._method`` through :func:`_wait`), its failure named by ``url``. ``method`` may also
    be a coroutine function (for an async filesystem only), called with the arguments.

    Raises:
        FileNotFoundError: as the filesystem raised it (the caller names the URL).
        PermissionError: naming ``url``.
        StorageError: any other failure (unreachable, no answer, a server error).
    """
    from .engine.context import Stopped

    try:
        if getattr(fs, "async_impl", False) and not getattr(fs, "asynchronous", False):
            run = method if callable(method) else getattr(fs, "_" + method)
            return _wait(fs, run(*args, **kwargs))
        return getattr(fs, method)(*args, **kwargs)
    except (FileNotFoundError, MalformedFileError, Stopped):
        raise
    except PermissionError as exc:
        raise PermissionError(f"'{url}': {what} was refused: {exc}") from exc
    except Exception as exc:
        policy = _policy(fs) if _transport_failure(exc) else ""
        raise StorageError(url, f"{what} failed{policy}: {type(exc).__name__}: {exc}") from exc


def exists(fs: Any, path: str, url: str) -> bool:
    """Whether the object (or folder) at ``path`` exists, asked afresh (one bounded request).

    Raises:
        StorageError, PermissionError: naming ``url``.
    """
    fs.invalidate_cache(path)
    return bool(_call(fs, url, "asking whether it exists", "exists", path))


def filesystem(url: str, storage_options: dict | None = None) -> tuple[Any, str]:
    """The fsspec filesystem serving ``url`` and the path within it.

    Args:
        url: ``scheme://...``.
        storage_options: keyword arguments of the filesystem (endpoint, credentials...).

    Raises:
        ImportError: fsspec, or the scheme's filesystem package (s3fs, gcsfs...), is missing;
            the message says how to install it.
        TypeError: ``storage_options`` is not a dict.
    """
    if storage_options is not None and not isinstance(storage_options, dict):
        raise TypeError(
            f"storage_options must be a dict of filesystem options. Received: {storage_options!r}"
        )
    try:
        import fsspec.core
    except ImportError:
        raise ImportError(
            f"reading or writing '{url}' needs fsspec (and s3fs for s3://): {INSTALL_HINT}"
        ) from None
    options = storage_options or {}
    if _is_s3(url):
        options = _s3_options(options)
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        raise ImportError(
            f"the filesystem of '{url}' is not installed ({exc}); for s3:// {INSTALL_HINT}"
        ) from None
    if _is_s3(url) and hasattr(fs, "retries"):
        # s3fs retries some errors itself around botocore's retries (twice over in reads:
        # 5 x 5 x 3 tries of a silent server); botocore's standard mode alone retries
        fs.retries = 1
    return fs, path


def remote_info(fs: Any, path: str, url: str) -> tuple[int, dict[str, str]]:
    """Size of the object at ``path`` and what pins reads to this very object (S3: its
    ``VersionId`` in a versioned bucket, and its ``ETag``; empty for other filesystems),
    asked afresh (one bounded request).

    Raises:
        FileNotFoundError: naming ``url``.
        MalformedFileError: it is a folder (prefix), not an object.
        StorageError, PermissionError: naming ``url`` (see :func:`_call`).
    """
    fs.invalidate_cache(path)  # a fresh answer: the object may have changed since a listing
    try:
        info = _call(fs, url, "asking for its size", "info", path)
    except FileNotFoundError:
        raise FileNotFoundError(f"'{url}' does not exist") from None
    if info.get("type") == "directory":
        raise MalformedFileError(url, "is a folder, not a file")
    size = info.get("size")
    if not isinstance(size, int) or size < 0:
        raise MalformedFileError(url, f"the filesystem reports no size for it ({size!r})")
    pin = {}
    if _is_s3(url) and hasattr(fs, "_call_s3"):  # s3fs: reads are pinned (see _s3_range)
        pin = {k: info[k] for k in ("VersionId", "ETag") if info.get(k)}
    return size, pin


def remote_size(fs: Any, path: str, url: str) -> int:
    """Size of the object at ``path`` (see :func:`remote_info`)."""
    return remote_info(fs, path, url)[0]


def open_remote(fs: Any, path: str, url: str) -> RemoteFile:
    """A :class:`RemoteFile` over the object at ``path`` as it is now: its size, and its
    reads pinned to this version of it (see :func:`remote_info`)."""
    size, pin = remote_info(fs, path, url)
    return RemoteFile(fs, path, url, size, pin=pin)


_BODY_ERRORS: tuple[type[BaseException], ...] = ()  # transient failures while reading a body


def _body_errors() -> tuple[type[BaseException], ...]:
    global _BODY_ERRORS
    if not _BODY_ERRORS:
        from http.client import IncompleteRead

        errors: list[type[BaseException]] = [IncompleteRead, asyncio.TimeoutError]
        with contextlib.suppress(ImportError):
            from botocore.exceptions import HTTPClientError

            errors.append(HTTPClientError)  # ReadTimeoutError, ResponseStreamingError...
        with contextlib.suppress(ImportError):
            from aiohttp import ClientPayloadError

            errors.append(ClientPayloadError)
        _BODY_ERRORS = tuple(errors)
    return _BODY_ERRORS


async def _s3_range(fs: Any, path: str, start: int, end: int, pin: dict[str, str]) -> bytes:
    """Bytes ``[start, end)`` of an S3 object, pinned to ``pin`` (its VersionId and ETag). A
    failure while the answer's body streams in is tried again (the request itself is retried
    by botocore), up to the attempts of botocore's retry policy."""
    bucket, key, version = fs.split_path(path)
    request = {"Bucket": bucket, "Key": key, "Range": f"bytes={start}-{end - 1}"}
    version = pin.get("VersionId") or version
    if version:
        request["VersionId"] = version
    if pin.get("ETag"):
        request["IfMatch"] = pin["ETag"]
    config = fs.config_kwargs.get("retries") if isinstance(fs.config_kwargs, dict) else None
    attempts = (config or {}).get("total_max_attempts") or ATTEMPTS
    for attempt in range(max(1, int(attempts))):
        response = await fs._call_s3("get_object", **request, **fs.req_kw)
        try:
            return await response["Body"].read()
        except _body_errors():
            if attempt + 1 >= attempts:
                raise
        finally:
            response["Body"].close()
    raise AssertionError("unreachable")


def _precondition_failed(exc: BaseException) -> bool:
    """Whether S3 refused a pinned read: the object is not the version that was opened."""
    cause = exc.__cause__
    response = getattr(cause, "response", None) or getattr(exc, "response", None) or {}
    code = (response.get("Error") or {}).get("Code")
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return (
        code == "PreconditionFailed"
        or status == 412
        or (isinstance(exc, OSError) and exc.errno == errno.EINVAL and "pre-condition" in str(exc))
    )


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
        self.closed = False
        self._pos = 0
        self._tail_start = max(0, size - tail)
        self._tail: bytes | None = None
        self._lock = threading.Lock()

    def clone(self) -> RemoteFile:
        """Another file object over the same object, sharing the fetched tail."""
        other = RemoteFile.__new__(RemoteFile)
        other.__dict__.update(self.__dict__)
        other._pos, other.closed = 0, False
        other._shared = self
        return other

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
            if self.pin:
                data = _call(
                    self.fs, self.url, what, _s3_range, self.fs, self.path, start, end, self.pin
                )
            else:
                data = _call(self.fs, self.url, what, "cat_file", self.path, start=start, end=end)
        except FileNotFoundError:
            raise FileNotFoundError(f"'{self.url}' does not exist (any more)") from None
        except StorageError as exc:
            if _precondition_failed(exc.__cause__ or exc):
                raise MalformedFileError(
                    self.url,
                    f"the object changed after it was opened (it is no longer the one with "
                    f"ETag {self.pin.get('ETag')}): it was replaced; open the data set again "
                    "to read the new one",
                ) from exc
            raise
        if len(data) != end - start:
            raise MalformedFileError(
                self.url,
                f"reading bytes [{start}, {end}) gave {len(data)} bytes: the object is shorter "
                f"than the {self.size} bytes expected (truncated or replaced)",
            )
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
    """Read the whole object in chunks (writing them to ``sink`` if given); its CRC-32."""
    crc = 0
    for start in range(0, file.size, CHUNK_BYTES):
        chunk = file._get(start, min(file.size, start + CHUNK_BYTES))
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

    def lookup(self, url: str, size: int, crc32: int) -> str | None:
        """The verified cache file of a shard, or None. A file that fails the check is
        removed (and will be fetched again)."""
        from .record.reader import _RACY_NS, _verified, _verified_lock  # per-process CRC memo

        path = self.name(url, size, crc32)
        try:
            with open(path, "rb") as f:
                info = os.fstat(f.fileno())
                key = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
                with _verified_lock:
                    crc = _verified.get(key)
                if crc is None and info.st_size == size:
                    start = time.time_ns()
                    crc = 0
                    while chunk := f.read(CHUNK_BYTES):
                        crc = zlib.crc32(chunk, crc)
                    if info.st_mtime_ns < start - _RACY_NS:  # as the reader does
                        with _verified_lock:
                            _verified[key] = crc
        except FileNotFoundError:
            return None
        if info.st_size != size or crc != crc32:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
            return None
        with contextlib.suppress(OSError):  # recently used: evicted last (the access time;
            os.utime(path, ns=(time.time_ns(), info.st_mtime_ns))  # mtime keys the CRC memo)
        return path

    def fetch(self, file: RemoteFile, crc32: int, manifest: str) -> str | None:
        """Download the shard into the cache (once, whatever the number of threads and
        processes asking), verified against ``crc32``; its local path, or None when the
        shard is larger than the cache may hold or the folder has no room (then it is only
        verified; see the module docstring).

        Raises:
            MalformedFileError: the shard does not match its size or checksum (named by URL).
        """
        if self.full or (self.size_limit is not None and file.size > self.size_limit):
            self._verify(file, crc32, manifest)
            return None
        final = self.name(file.url, file.size, crc32)
        verified = False
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
        return final

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


def default_cache() -> tuple[str | None, int | None]:
    """The cache folder and size bound from ``JISU_CACHE_DIR`` / ``JISU_CACHE_SIZE`` (bytes)."""
    folder = os.environ.get("JISU_CACHE_DIR") or None
    size = os.environ.get("JISU_CACHE_SIZE")
    try:
        limit = int(size) if size else None
    except ValueError:
        raise ValueError(f"JISU_CACHE_SIZE must be a number of bytes. Received: {size!r}") from None
    return folder, limit
