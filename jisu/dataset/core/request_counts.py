"""The requests this process made to object storage (each one bounded call, its retries
inside botocore counted once), the bytes they returned and the seconds they took, summed over
threads: what an iterator's profile reports as ``output["storage"]``, so that a pipeline
reading remote data shows how many GETs it made and how long it waited on them."""

from __future__ import annotations

import threading


class RequestCounts:
    """Thread-safe running totals of requests, bytes and request-seconds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        self._bytes = 0
        self._seconds = 0.0

    def add(self, seconds: float, nbytes: int = 0) -> None:
        """One request that took ``seconds`` and returned ``nbytes`` bytes of an object."""
        with self._lock:
            self._requests += 1
            self._bytes += nbytes
            self._seconds += seconds

    def snapshot(self) -> dict[str, float]:
        """``{"requests", "bytes", "request_seconds"}`` so far."""
        with self._lock:
            return {
                "requests": self._requests,
                "bytes": self._bytes,
                "request_seconds": self._seconds,
            }


#: this process's requests to object storage (:mod:`jisu.dataset.record.storage_requests`)
REQUESTS = RequestCounts()


def since(before: dict[str, float], now: dict[str, float] | None = None) -> dict[str, float]:
    """The totals made after the ``before`` snapshot (up to ``now``, default: now)."""
    now = REQUESTS.snapshot() if now is None else now
    return {key: now[key] - before.get(key, 0) for key in now}
