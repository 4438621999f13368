"""What an answer from object storage must be before its bytes are used, and how long a request
may take.

Deadlines: botocore's ``read_timeout`` bounds each wait for bytes (each ``recv``), not a
request: a server that sends its headers and then a byte every few seconds never trips it. So
every request jisu makes to read a data set also has a deadline for the whole of it (retries
and the body included): :data:`REQUEST_DEADLINE_S` plus one second per
:data:`MIN_TRANSFER_RATE` bytes asked for (a 32 MiB read: 120 + 512 s; generous for slow
links). ``storage_options={"request_deadline": s, "min_transfer_rate": bytes_per_s}`` changes
them (``min_transfer_rate=0``: the deadline alone, whatever the size). A request past its
deadline is abandoned (its connection closed) and is a
:class:`~.storage_requests.StorageError` naming the URL, the bytes received and the deadline.

Answers to ranged, pinned reads (S3), checked whatever the server honours:

* the answer's ETag (and VersionId) must be the ones the object was opened at: a server that
  ignores ``If-Match`` still says which object it served, and another one is an error naming
  the object ("changed while reading"), never its bytes. Where the object had no ETag (and no
  version) nothing can be pinned: one warning per store says its reads cannot be verified;
* a server that ignores ``Range`` answers 200 with the whole object: when that is the size
  the object was opened at, the bytes asked for are taken from it (the rest is not read;
  one warning per store says each read transfers the object up to the bytes needed), else it
  is an error saying what the server did.
"""

from __future__ import annotations

import re
import threading
import warnings
from typing import Any

from .validate import MalformedFileError

REQUEST_DEADLINE_S = 120.0  # S3: seconds any request may take in all (retries, body included)
MIN_TRANSFER_RATE = 64 << 10  # S3: ... plus one second per this many bytes asked for
DEADLINE_OPTIONS = ("request_deadline", "min_transfer_rate")  # jisu's, in storage_options
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


class DeadlineExceeded(Exception):
    """A request ran past its deadline (the caller names the URL)."""

    def __init__(self, deadline: float, received: int | None = None) -> None:
        super().__init__(f"no complete answer within {deadline:g} s")
        self.deadline, self.received = deadline, received


def deadline_setting(options: dict) -> tuple[dict, tuple[float, float] | None]:
    """``options`` without jisu's deadline settings, and those settings (None: defaults).

    Raises:
        ValueError: a setting that is not a number > 0 (``min_transfer_rate``: >= 0).
    """
    if not any(key in options for key in DEADLINE_OPTIONS):
        return options, None
    options = dict(options)
    base = options.pop("request_deadline", REQUEST_DEADLINE_S)
    rate = options.pop("min_transfer_rate", MIN_TRANSFER_RATE)
    for name, value, low in (("request_deadline", base, 0), ("min_transfer_rate", rate, -1)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > low:
            raise ValueError(
                f"storage_options['{name}'] must be a number of "
                f"{'seconds > 0' if low == 0 else 'bytes per second >= 0'}. Received: {value!r}"
            )
    return options, (float(base), float(rate))


def deadline_for(fs: Any, nbytes: int = 0) -> float:
    """The deadline, in seconds, of a request to ``fs`` that asks for ``nbytes`` bytes."""
    base, rate = getattr(fs, "_jisu_deadline", None) or (REQUEST_DEADLINE_S, MIN_TRANSFER_RATE)
    return base + (nbytes / rate if rate else 0.0)


def store_of(fs: Any, url: str) -> str:
    """The store (endpoint and bucket) ``url`` is in, as warnings name it."""
    endpoint = getattr(fs, "endpoint_url", None) or (getattr(fs, "client_kwargs", None) or {}).get(
        "endpoint_url"
    )
    bucket = url.split("://", 1)[-1].split("/", 1)[0]
    return f"bucket '{bucket}'" + (f" at {endpoint}" if endpoint else "")


def warn_once(store: str, kind: str, message: str) -> None:
    """Warn ``message`` once per process for this store and kind."""
    with _warned_lock:
        if (store, kind) in _warned:
            return
        _warned.add((store, kind))
    warnings.warn(f"jisu: {store}: {message}", RuntimeWarning, stacklevel=4)


def warn_unverifiable(store: str) -> None:
    """The warning for a store whose objects carry no ETag or version: nothing pins reads."""
    warn_once(
        store,
        "unpinned",
        "its objects carry no ETag (nor a version): reads cannot be verified to come from the "
        "object as it was opened; an object replaced meanwhile by as many bytes would be read "
        "as it is now (use verify=True and a cache_dir, or a store that sends ETags)",
    )


def _tag(value: Any) -> str | None:
    if not value:
        return None
    value = str(value).strip()
    return (value[2:] if value.startswith("W/") else value).strip('"')  # as servers quote it


def changed(url: str, what: str) -> MalformedFileError:
    """The error of an answer that came from another object than the one opened."""
    return MalformedFileError(
        url,
        f"the object changed while reading it: the object changed after it was opened ({what}); "
        "it was replaced; open the data set again to read the new one",
    )


def answer_offset(
    response: dict, url: str, store: str, start: int, end: int, size: int, pin: dict
) -> int:
    """Where byte ``start`` lies in the body of ``response`` (a ``get_object`` answer to the
    ranged read of bytes ``[start, end)`` of an object opened at ``size`` bytes and ``pin``):
    0 for a ranged answer, ``start`` for the whole object (a server that ignored ``Range``).

    Raises:
        MalformedFileError: the answer is of another object (its ETag, version or size), or
            of other bytes than those asked for.
    """
    meta = response.get("ResponseMetadata") or {}
    etag, pinned = _tag(response.get("ETag")), _tag(pin.get("ETag"))
    if pinned and etag and etag != pinned:
        raise changed(url, f"the answer carries ETag {etag}, not ETag {pinned}")
    if pinned and not etag:
        warn_once(
            store,
            "no-etag",
            "its answers to reads carry no ETag: reads cannot be verified to come from the "
            "object as it was opened (only the If-Match condition sent guards them)",
        )
    version = response.get("VersionId")
    if pin.get("VersionId") and version and version != pin["VersionId"]:
        raise changed(url, f"the answer is version {version}, not {pin['VersionId']}")
    asked = f"bytes={start}-{end - 1}"
    content_range = response.get("ContentRange")
    status = meta.get("HTTPStatusCode")
    if content_range or status == 206:
        match = _CONTENT_RANGE.fullmatch(str(content_range or "").strip())
        if match is None:
            raise MalformedFileError(
                url, f"the answer to the read of {asked} has no valid Content-Range header"
            )
        first, last, total = match.groups()
        if total != "*" and int(total) != size:
            raise changed(url, f"it now has {total} bytes, not {size}")
        if int(first) != start or int(last) < end - 1:
            raise MalformedFileError(
                url, f"the read of {asked} was answered with other bytes ({content_range})"
            )
        return 0
    length = response.get("ContentLength")
    if length is not None and int(length) != size:
        raise changed(
            url,
            f"the server ignored the byte range asked for ({asked}) and answered with the "
            f"whole object, {length} bytes, not the {size} bytes it had when opened",
        )
    if (start, end) != (0, size):
        warn_once(
            store,
            "no-range",
            "the server ignores Range requests (it answers a ranged read with the whole "
            "object): jisu takes the bytes it needs from each answer, and each read "
            "transfers the object up to them",
        )
    return start


def received_message(what: str, exc: DeadlineExceeded, nbytes: int, fs: Any) -> str:
    """The message of a request that ran past its deadline."""
    got = "" if exc.received is None else f", {exc.received} of {nbytes} bytes received"
    base, rate = getattr(fs, "_jisu_deadline", None) or (REQUEST_DEADLINE_S, MIN_TRANSFER_RATE)
    return (
        f"{what}: no complete answer within its deadline of {exc.deadline:g} s{got} (the "
        f"server is too slow; the deadline is request_deadline={base:g} s plus one second "
        f"per min_transfer_rate={rate:g} bytes asked for, as storage_options may set them)"
    )


def short_answer(url: str, start: int, end: int, got: int, size: int) -> MalformedFileError:
    """The error of a read of bytes ``[start, end)`` answered with ``got`` bytes."""
    how = "shorter" if got < end - start else "longer"
    return MalformedFileError(
        url,
        f"reading bytes [{start}, {end}) gave {got} bytes, not {end - start}: the answer is "
        f"{how} than asked for (the object of {size} bytes was truncated or replaced)",
    )
