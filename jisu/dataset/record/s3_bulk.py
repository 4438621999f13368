"""Whole-shard downloads from S3 on botocore's own (blocking) client, one thread per request.

s3fs runs every request of the process on one asyncio event loop thread, so the bytes of
all downloads at once are received by that one thread: measured against moto's server on 2
cores, 8 shard downloads at once reached about 600 MB/s through it and 900-1000 MB/s through
botocore's blocking client on 8 threads (each thread receives its own bytes, the GIL released
while it waits in ``recv``). Whole-shard reads (checksums, the shard cache; see
:func:`~jisu.dataset.record.storage.read_whole`) therefore go through a blocking botocore
client made with the filesystem's endpoint, credentials and ``config_kwargs`` (the same
timeouts and retries, see :mod:`.storage_requests`), each read pinned to the version opened
as :func:`.storage_requests.s3_range` pins it. Record batches read by ranges stay on s3fs.

Each request runs on a thread of its own while the caller waits, so the wait is abandoned as
soon as the caller's pipeline run stops (:class:`~jisu.dataset.engine.context.Stopped`), as
for s3fs's requests, or the request's deadline passes (a
:class:`~.storage_requests.StorageError` naming the URL, the bytes received and the deadline;
see :mod:`.remote_answers`); the abandoned request ends within its timeouts (its body is read
a piece at a time, the thread stops between two). Each answer is checked as s3fs's are
(:func:`~.remote_answers.answer_offset`: the object's ETag and version, the range). A
filesystem with options this client does not carry (a session of the user's, extra request
arguments such as SSE-C keys) keeps s3fs's path (:func:`bulk_client` gives None).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from typing import Any

from . import storage_requests as requests
from .remote_answers import (
    DeadlineExceeded,
    answer_offset,
    deadline_for,
    received_message,
    short_answer,
    store_of,
)
from .validate import MalformedFileError

_NO_CLIENT = object()  # a filesystem whose options the blocking client cannot carry
_clients_lock = threading.Lock()


def bulk_client(fs: Any, url: str) -> Any | None:
    """botocore's blocking S3 client with ``fs``'s (s3fs) settings, made once per
    filesystem; None where ``fs`` is no s3fs filesystem or has options it cannot carry."""
    if not requests._is_s3(url) or not hasattr(fs, "_call_s3"):
        return None
    client = getattr(fs, "_jisu_bulk_client", None)
    if client is None:
        with _clients_lock:
            client = getattr(fs, "_jisu_bulk_client", None)
            if client is None:
                client = fs._jisu_bulk_client = _make_client(fs)
    return None if client is _NO_CLIENT else client


def _make_client(fs: Any) -> Any:
    """The client s3fs would make (its ``set_session``), blocking; :data:`_NO_CLIENT` when
    ``fs`` carries what this one would not."""
    try:
        import botocore.session
        from botocore.config import Config
    except ImportError:
        return _NO_CLIENT
    given = getattr(fs, "storage_options", None) or {}  # fs.session is s3fs's own once used
    if given.get("session") is not None or getattr(fs, "s3_additional_kwargs", None):
        return _NO_CLIENT
    try:
        client_kwargs = dict(fs.client_kwargs or {})
        init = {
            "aws_access_key_id": fs.key,
            "aws_secret_access_key": fs.secret,
            "aws_session_token": fs.token,
            "endpoint_url": fs.endpoint_url,
        }
        init = {k: v for k, v in init.items() if v is not None and v != client_kwargs.get(k)}
        if "use_ssl" not in client_kwargs:
            init["use_ssl"] = fs.use_ssl
        config = dict(fs._prepare_config_kwargs())
        if fs.anon:
            from botocore import UNSIGNED

            secrets = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
            init = {k: v for k, v in init.items() if k not in secrets}
            client_kwargs = {k: v for k, v in client_kwargs.items() if k not in secrets}
            config["signature_version"] = UNSIGNED
        session = botocore.session.Session(**(fs.kwargs or {}))
        _share_loader(session, getattr(fs, "session", None))
        return session.create_client("s3", config=Config(**config), **init, **client_kwargs)
    except Exception:  # an option botocore refuses here: s3fs's path still works
        return _NO_CLIENT


def _share_loader(session: Any, s3fs_session: Any) -> None:
    """Let ``session`` use the data loader of s3fs's (aiobotocore) session, which has loaded
    botocore's JSON service models already: a client made with a fresh loader parses them
    again, ~80 ms of the first download measured against moto (the loader only reads and
    caches the models botocore ships; the client's settings stay its own)."""
    get = getattr(s3fs_session, "get_component", None)
    if get is None:
        return
    try:
        session.register_component("data_loader", get("data_loader"))
    except Exception:  # a session without one: the client loads the models itself
        pass


def bulk_range(file: Any, client: Any, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``file`` (a :class:`~jisu.dataset.record.storage.RemoteFile`
    of an S3 object), pinned to its version, through ``client`` on a thread of its own.

    Raises:
        FileNotFoundError, PermissionError, StorageError: as :func:`.storage_requests.call`.
        MalformedFileError: the object changed since it was opened, or gave a short answer.
        Stopped: the caller's pipeline run stopped meanwhile, or the interpreter exits.
    """
    from ..core.request_counts import REQUESTS
    from ..engine.context import Stopped
    from ..engine.thread_pool import current_stop

    if requests._exiting:
        raise Stopped("the interpreter is exiting")
    bucket, key, version = file.fs.split_path(file.path)
    request = {"Bucket": bucket, "Key": key, "Range": f"bytes={start}-{end - 1}"}
    version = file.pin.get("VersionId") or version
    if version:
        request["VersionId"] = version
    if file.pin.get("ETag"):
        request["IfMatch"] = file.pin["ETag"]
    request.update(getattr(file.fs, "req_kw", None) or {})
    future: concurrent.futures.Future = concurrent.futures.Future()
    answer = _Answer(file, start, end, _attempts(file.fs))
    thread = threading.Thread(
        target=_get_into, args=(client, request, answer, future), name="jisu-s3-get",
        daemon=True,
    )  # fmt: skip
    stop = current_stop()
    with requests._inflight_lock:
        requests._inflight.add(future)
    data: Any = None
    began = time.perf_counter()
    deadline = deadline_for(file.fs, end - start)
    ends = time.monotonic() + deadline
    try:
        thread.start()
        while not concurrent.futures.wait([future], min(0.05, _left(ends))).done:
            if stop is not None and stop.is_set():
                answer.abandoned.set()  # the thread ends within its timeouts
                raise Stopped("the pipeline stopped")
            if time.monotonic() >= ends:
                answer.abandoned.set()
                raise DeadlineExceeded(deadline, answer.received)
        data = future.result()
    except concurrent.futures.CancelledError:  # by storage_requests._cancel_requests
        raise Stopped("the interpreter is exiting") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"'{file.url}' does not exist (any more)") from None
    except (Stopped, MalformedFileError):
        raise
    except DeadlineExceeded as exc:
        what = f"reading bytes [{start}, {end})"
        message = received_message(what, exc, end - start, file.fs)
        raise requests.StorageError(file.url, message) from exc
    except Exception as exc:
        if requests.precondition_failed(exc):
            raise MalformedFileError(
                file.url,
                f"the object changed after it was opened (it is no longer the one with ETag "
                f"{file.pin.get('ETag')}): it was replaced; open the data set again to read "
                "the new one",
            ) from exc
        what = f"reading bytes [{start}, {end})"
        raise requests.named_failure(file.fs, file.url, what, exc) from exc
    finally:
        with requests._inflight_lock:
            requests._inflight.discard(future)
        REQUESTS.add(time.perf_counter() - began, len(data) if isinstance(data, bytes) else 0)
    if len(data) != end - start:
        raise short_answer(file.url, start, end, len(data), file.size)
    return data


def _left(ends: float) -> float:
    return max(0.0, ends - time.monotonic())


class _Answer:
    """What the thread of one GET needs to check and read its answer, and how far it got."""

    def __init__(self, file: Any, start: int, end: int, attempts: int) -> None:
        self.url, self.size, self.pin = file.url, file.size, file.pin
        self.store = store_of(file.fs, file.url)
        self.start, self.end, self.attempts = start, end, attempts
        self.received = 0  # bytes of the range received (the current attempt)
        self.abandoned = threading.Event()  # the caller gave up: stop reading

    def read(self, response: dict) -> bytes:
        """The range's bytes from ``response`` (checked first), a piece at a time."""
        skip = answer_offset(
            response, self.url, self.store, self.start, self.end, self.size, self.pin
        )
        body, want = response["Body"], skip + self.end - self.start
        raw = getattr(body, "_raw_stream", None)
        read = getattr(raw, "read1", None) or body.read  # read1: what has arrived (urllib3 2)
        parts, at = [], 0
        self.received = 0
        while at < want and not self.abandoned.is_set():
            chunk = read(min(1 << 20, want - at))
            if not chunk:
                break
            if at + len(chunk) > skip:
                parts.append(chunk[max(0, skip - at) :])
            at += len(chunk)
            self.received = max(0, at - skip)
        return b"".join(parts)


def _attempts(fs: Any) -> int:
    config = fs.config_kwargs.get("retries") if isinstance(fs.config_kwargs, dict) else None
    return max(1, int((config or {}).get("total_max_attempts") or requests.ATTEMPTS))


def _get_into(client: Any, request: dict, answer: _Answer, future: Any) -> None:
    """The GET, its body read again after a failure while it streams in (as ``s3_range``
    does; botocore retries the request itself); its bytes or error set on ``future``."""
    if not future.set_running_or_notify_cancel():
        return
    attempts = answer.attempts
    try:
        for attempt in range(attempts):
            try:
                response = client.get_object(**request)
            except Exception as exc:
                code = getattr(exc, "response", {}).get("Error", {}).get("Code")
                if code in ("NoSuchKey", "NoSuchVersion", "404"):
                    raise FileNotFoundError(request["Key"]) from exc
                if code in ("AccessDenied", "403"):
                    raise PermissionError(str(exc)) from exc
                raise
            body = response["Body"]
            try:
                data = answer.read(response)
                break
            except requests._body_errors():
                if attempt + 1 >= attempts:
                    raise
            finally:
                body.close()
        future.set_result(data)
    except BaseException as exc:
        future.set_exception(exc)
