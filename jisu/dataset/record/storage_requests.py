"""The filesystems behind URLs, and the requests jisu makes to them, each one bounded:
:func:`filesystem` (fsspec, an optional dependency imported on first use:
``pip install "jisu[s3]"``), :func:`exists`, :func:`remote_info`, and :func:`call`, which makes
one request under the policy below and names the URL in its failure.
:mod:`jisu.dataset.record.storage` builds on them (objects read by ranges, the shard cache)
and re-exports their public names.

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

``read_timeout`` bounds each wait for bytes, not a request (a server that drips its answer
never trips it): every request also has a deadline for the whole of it,
:data:`~.remote_answers.REQUEST_DEADLINE_S` (120 s) plus one second per
:data:`~.remote_answers.MIN_TRANSFER_RATE` (64 KiB) asked for, which
``storage_options={"request_deadline": s, "min_transfer_rate": bytes_per_s}`` change (see
:mod:`.remote_answers`, which also checks what each answer is before its bytes are used).

So a dead endpoint fails a read within seconds and one that accepts connections and never
answers within ``ATTEMPTS * read_timeout`` plus the backoff (about a minute by default), e.g.
``storage_options={"config_kwargs": {"connect_timeout": 2, "read_timeout": 5, "retries":
{"total_max_attempts": 2}}}`` for a few seconds. Other filesystems (``gs://``, ``hf://``...)
keep their own timeouts and retries. A request made on a pipeline's worker thread is abandoned
(cancelled) as soon as the iterator closes, and all are cancelled when the interpreter exits,
so no thread is left waiting on the network.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import errno
import os
import threading
import time
from typing import Any

from ..core.request_counts import REQUESTS
from .remote_answers import (
    DeadlineExceeded,
    answer_offset,
    deadline_for,
    deadline_setting,
    received_message,
    store_of,
    warn_unverifiable,
)
from .validate import MalformedFileError

INSTALL_HINT = 'pip install "jisu[s3]"'
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


def _wait(fs: Any, coro: Any, deadline: float | None = None, progress: Any = None) -> Any:
    """Run the coroutine ``coro`` on ``fs``'s event loop and return its result. The wait (and
    the request) is abandoned when the pipeline run of this thread stops (then
    :class:`~jisu.dataset.engine.context.Stopped` is raised), the interpreter exits, or
    ``deadline`` seconds have passed (then :class:`~.remote_answers.DeadlineExceeded`, with
    ``progress[0]``, the bytes received, if given)."""
    from ..engine.context import Stopped
    from ..engine.thread_pool import current_stop

    if _exiting:
        coro.close()
        raise Stopped("the interpreter is exiting")
    stop = current_stop()
    future = asyncio.run_coroutine_threadsafe(coro, fs.loop)
    with _inflight_lock:
        _inflight.add(future)
    ends = None if deadline is None else time.monotonic() + deadline
    try:
        # wait() rather than result(timeout): a request may itself raise TimeoutError
        while True:
            poll = None if stop is None else _POLL_S
            if ends is not None:
                left = max(0.0, ends - time.monotonic())
                poll = left if poll is None else min(poll, left)
            if concurrent.futures.wait([future], poll).done:
                break
            if stop is not None and stop.is_set():
                future.cancel()
                raise Stopped("the pipeline stopped")
            if ends is not None and time.monotonic() >= ends:
                future.cancel()  # the task is cancelled: its connection is closed
                raise DeadlineExceeded(deadline, None if progress is None else progress[0])
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


def call(fs: Any, url: str, what: str, method: Any, *args: Any, **kwargs: Any) -> Any:
    """``fs.method(*args, **kwargs)`` as one bounded request (an async filesystem's coroutine
    ``fs._method`` through :func:`_wait`, within its deadline), its failure named by ``url``.
    ``method`` may also be a coroutine function (for an async filesystem only), called with
    the arguments.

    Raises:
        FileNotFoundError: as the filesystem raised it (the caller names the URL).
        PermissionError: naming ``url``.
        StorageError: any other failure (unreachable, no answer, a server error).
    """
    from ..engine.context import Stopped

    began, result = time.perf_counter(), None
    try:
        if getattr(fs, "async_impl", False) and not getattr(fs, "asynchronous", False):
            run = method if callable(method) else getattr(fs, "_" + method)
            nbytes = max(0, (kwargs.get("end") or 0) - (kwargs.get("start") or 0))  # cat_file
            result = _wait(fs, run(*args, **kwargs), deadline_for(fs, nbytes))
        else:
            result = getattr(fs, method)(*args, **kwargs)
    except (FileNotFoundError, MalformedFileError, Stopped):
        raise
    except DeadlineExceeded as exc:
        raise StorageError(url, received_message(what, exc, 0, fs)) from exc
    except Exception as exc:
        raise named_failure(fs, url, what, exc) from exc
    finally:  # every request: a failed or abandoned one too
        data = isinstance(result, (bytes, bytearray, memoryview))
        REQUESTS.add(time.perf_counter() - began, len(result) if data else 0)
    return result


def named_failure(fs: Any, url: str, what: str, exc: Exception) -> OSError:
    """The error for request ``what`` on ``url`` that failed with ``exc``: a
    ``PermissionError`` naming the URL, else a :class:`StorageError`, with the policy in force
    when the storage could not be reached or did not answer."""
    if isinstance(exc, PermissionError):
        return PermissionError(f"'{url}': {what} was refused: {exc}")
    policy = _policy(fs) if _transport_failure(exc) else ""
    return StorageError(url, f"{what} failed{policy}: {type(exc).__name__}: {exc}")


def exists(fs: Any, path: str, url: str) -> bool:
    """Whether the object (or folder) at ``path`` exists, asked afresh (one bounded request).

    Raises:
        StorageError, PermissionError: naming ``url``.
    """
    fs.invalidate_cache(path)
    return bool(call(fs, url, "asking whether it exists", "exists", path))


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
    options, deadline = deadline_setting(storage_options or {})
    if deadline is not None:  # a filesystem of its own, whose requests have this deadline
        options = {**options, "skip_instance_cache": True}
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
    if deadline is not None:
        fs._jisu_deadline = deadline
    return fs, path


def is_s3fs(fs: Any, url: str) -> bool:
    """Whether ``url`` is read through s3fs (pinned, checked reads: :func:`s3_range`)."""
    return _is_s3(url) and hasattr(fs, "_call_s3")


def remote_info(fs: Any, path: str, url: str) -> tuple[int, dict[str, str]]:
    """Size of the object at ``path`` and what pins reads to this very object (S3: its
    ``VersionId`` in a versioned bucket, and its ``ETag``; empty for other filesystems),
    asked afresh (one bounded request).

    Raises:
        FileNotFoundError: naming ``url``.
        MalformedFileError: it is a folder (prefix), not an object.
        StorageError, PermissionError: naming ``url`` (see :func:`call`).
    """
    fs.invalidate_cache(path)  # a fresh answer: the object may have changed since a listing
    try:
        info = call(fs, url, "asking for its size", "info", path)
    except FileNotFoundError:
        raise FileNotFoundError(f"'{url}' does not exist") from None
    if info.get("type") == "directory":
        raise MalformedFileError(url, "is a folder, not a file")
    size = info.get("size")
    if not isinstance(size, int) or size < 0:
        raise MalformedFileError(url, f"the filesystem reports no size for it ({size!r})")
    pin = {}
    if is_s3fs(fs, url):  # s3fs: reads are pinned (see s3_range)
        pin = {k: info[k] for k in ("VersionId", "ETag") if info.get(k)}
        if not pin:
            warn_unverifiable(store_of(fs, url))
    return size, pin


def remote_size(fs: Any, path: str, url: str) -> int:
    """Size of the object at ``path`` (see :func:`remote_info`)."""
    return remote_info(fs, path, url)[0]


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
            from urllib3.exceptions import ProtocolError, ReadTimeoutError

            errors += [ProtocolError, ReadTimeoutError]  # a body read by pieces (s3_bulk)
        with contextlib.suppress(ImportError):
            from aiohttp import ClientPayloadError

            errors.append(ClientPayloadError)
        _BODY_ERRORS = tuple(errors)
    return _BODY_ERRORS


async def s3_range(
    fs: Any,
    path: str,
    start: int,
    end: int,
    pin: dict[str, str],
    size: int,
    url: str,
    progress: list[int] | None = None,
) -> bytes:
    """Bytes ``[start, end)`` of an S3 object of ``size`` bytes, pinned to ``pin`` (its
    VersionId and ETag), the answer checked (:func:`~.remote_answers.answer_offset`). A failure
    while the answer's body streams in is tried again (the request itself is retried by
    botocore), up to the attempts of botocore's retry policy. ``progress[0]``: the bytes of
    the range received so far (for the error of a request past its deadline)."""
    bucket, key, version = fs.split_path(path)
    request = {"Bucket": bucket, "Key": key, "Range": f"bytes={start}-{end - 1}"}
    version = pin.get("VersionId") or version
    if version:
        request["VersionId"] = version
    if pin.get("ETag"):
        request["IfMatch"] = pin["ETag"]
    config = fs.config_kwargs.get("retries") if isinstance(fs.config_kwargs, dict) else None
    attempts = (config or {}).get("total_max_attempts") or ATTEMPTS
    store = store_of(fs, url)
    for attempt in range(max(1, int(attempts))):
        response = await fs._call_s3("get_object", **request, **fs.req_kw)
        try:
            skip = answer_offset(response, url, store, start, end, size, pin)
            parts, at = [], 0  # at: the body's bytes read
            while at < skip + end - start:
                chunk = await response["Body"].read(min(1 << 20, skip + end - start - at))
                if not chunk:
                    break
                if at + len(chunk) > skip:
                    parts.append(chunk[max(0, skip - at) :])
                at += len(chunk)
                if progress is not None:
                    progress[0] = max(0, at - skip)
            return b"".join(parts)
        except _body_errors():
            if attempt + 1 >= attempts:
                raise
        finally:
            response["Body"].close()
    raise AssertionError("unreachable")


def get_range(fs: Any, url: str, path: str, start: int, end: int, pin: dict, size: int) -> bytes:
    """Bytes ``[start, end)`` of the S3 object at ``path`` (see :func:`s3_range`), as one
    request within its deadline (:func:`~.remote_answers.deadline_for`).

    Raises:
        FileNotFoundError, PermissionError, StorageError: as :func:`call` (a request past its
            deadline: a StorageError naming the URL, the bytes received and the deadline).
        MalformedFileError: the answer is of another object, or of other bytes.
    """
    from ..engine.context import Stopped

    what = f"reading bytes [{start}, {end})"
    progress, began, data = [0], time.perf_counter(), None
    try:
        coro = s3_range(fs, path, start, end, pin, size, url, progress)
        data = _wait(fs, coro, deadline_for(fs, end - start), progress)
    except (FileNotFoundError, MalformedFileError, Stopped):
        raise
    except DeadlineExceeded as exc:
        raise StorageError(url, received_message(what, exc, end - start, fs)) from exc
    except Exception as exc:
        raise named_failure(fs, url, what, exc) from exc
    finally:
        REQUESTS.add(time.perf_counter() - began, len(data) if data is not None else 0)
    return data


def precondition_failed(exc: BaseException) -> bool:
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
