"""MindSpore's ``DatasetCache``: a handle to its cache server, which keeps a pipeline's rows in
memory across runs (``ImageFolderDataset(..., cache=ds.DatasetCache(session_id=1))``).

jisu has no cache server. A cache only changes how fast rows come, never which rows or in which
order, so a ``DatasetCache`` is accepted and records its settings, and a pipeline given one runs
without it (logged at debug level).
"""

from __future__ import annotations

import logging

logger = logging.getLogger("jisu.dataset")

__all__ = ["DatasetCache"]


class DatasetCache:
    """MindSpore's cache-server session: settings recorded, no cache kept (see the module)."""

    def __init__(
        self,
        session_id: int,
        size: int = 0,
        spilling: bool = False,
        hostname: str | None = None,
        port: int | None = None,
        num_connections: int | None = None,
        prefetch_size: int | None = None,
    ) -> None:
        if isinstance(session_id, bool) or not isinstance(session_id, int) or session_id < 0:
            raise TypeError(
                f"DatasetCache: session_id must be an int >= 0. Received session_id={session_id!r}"
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise TypeError(f"DatasetCache: size must be an int >= 0. Received size={size!r}")
        if not isinstance(spilling, bool):
            raise TypeError(f"DatasetCache: spilling must be a bool. Received {spilling!r}")
        self.session_id, self.size, self.spilling = session_id, size, spilling
        self.hostname, self.port = hostname, port
        self.num_connections, self.prefetch_size = num_connections, prefetch_size
        logger.debug(
            "DatasetCache(session_id=%d): jisu has no cache server; pipelines given this cache "
            "run without one (same rows, same order)",
            session_id,
        )

    def get_stat(self) -> dict[str, int]:
        """MindSpore's cache statistics: nothing is cached, so all zero."""
        return {"mem_cached_cnt": 0, "disk_cached_cnt": 0, "avg_cache_sz": 0}

    def __repr__(self) -> str:
        return f"DatasetCache(session_id={self.session_id}, size={self.size})"
