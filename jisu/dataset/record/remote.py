"""jisu record data sets in object storage (``s3://``, ``gs://``, ``hf://``, any fsspec URL).

Reading (:class:`RemoteRecordReader`): the manifest is read (size checked first) and validated
exactly as a local one; every shard not in the cache has its size checked against it (one
metadata request per shard, in parallel; a shard read from its verified cached copy is never
asked for) and its Arrow footer and schema read by ranges (at the open; with a cache and
``verify``, only if the shard is read by ranges after its check). A row is then read
by fetching its record batch alone (one ranged GET of the batch's bytes; the shard is never
downloaded to read one row); the batch's row count and buffers are checked when it is
fetched. Fetched batches are kept in a small per-reader LRU.

Checksums: with ``verify=True`` every shard is read in full and its CRC-32 checked against the
manifest before any row of it is served, in the background in the order the epoch reads the
shards (:mod:`.shard_checks`): epoch 1 starts once its first shard is checked, not after all.
With a cache, that read is the download into the cache, so it is done once per node. A shard
that fails its check fails every read of it, naming its URL. With ``verify=False`` nothing is
read in full.

Cache (``cache_dir``): a shard whose verified copy is in the cache is read like a local shard
(by ``pread``, never mapped: a cache file truncated under the reader is an error, not a
SIGBUS). A shard not in the cache is read by ranges, and its first read starts
one background download into the cache (``jisu-cache-fill`` thread); the copy is published
only once its CRC-32 matched, then later reads of the shard switch to it. A shard whose
download does not match its checksum makes its next read fail with the error naming the URL.
Readers in several processes may share one bounded cache folder: the cache hands a shard over
open (:meth:`.storage.ShardCache.lookup`), so another reader evicting it afterwards (to make
room for its own) never fails a read.

Writing: :mod:`.remote_writer`.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa

from ..engine.context import Stopped
from .arrow_file import CopyStore, FileColumns, Part, record_batch_ranges
from .format import (
    ShardEntry,
    block_layout,
    check_manifest_size,
    decode_manifest,
    find_manifest,
    parse_manifest,
)
from .pread import PreadFile
from .read_ahead import READ_AHEAD_BYTES, ReadAhead
from .reader import VIEW_BATCHES, VIEW_BYTES, RecordReader, ViewCache
from .remote_batches import BatchColumns, BatchLRU, RemoteShard
from .schema import arrow_schema, select_fields
from .shard_checks import ShardChecks
from .storage import (
    RemoteFile,
    ShardCache,
    crc_mismatch,
    exists,
    filesystem,
    open_remote,
    read_whole,
    remote_size,
)
from .validate import MalformedFileError

log = logging.getLogger(__name__)
_BATCH_CACHE = 32  # remote record batches kept per reader (the writer's are <= ~4 MiB)
_BATCH_CACHE_BYTES = 256 << 20  # ... and at most this many bytes of them
_PARALLEL = 16  # concurrent requests when checking or fetching shards


def parallel(fn: Any, items: Sequence) -> list:
    """``fn`` of each item, up to 16 at once (requests to object storage)."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(min(_PARALLEL, len(items))) as pool:
        return list(pool.map(fn, items))


def find_remote_manifest(url: str, fs: Any) -> str | None:
    """The manifest of a remote data set named by its manifest, its name or one of its shards
    (the same candidates as a local one, each asked for by one bounded request)."""
    return find_manifest(url, exists=lambda name: exists(fs, fs._strip_protocol(name), name))


def read_remote_manifest(fs: Any, url: str) -> Any:
    """The parsed JSON of a remote manifest, read only if its size is sane (checked first).

    Raises:
        FileNotFoundError: there is no such object.
        MalformedFileError: too large, or not JSON.
    """
    path = fs._strip_protocol(url)
    size = remote_size(fs, path, url)
    check_manifest_size(size, url)
    return decode_manifest(RemoteFile(fs, path, url, size).read_range(0, size), url)


class RemoteRecordReader(RecordReader):
    """Random access to the rows of a jisu record data set in object storage (see the module
    docstring). Thread-safe; pickles by URL (a worker process uses the cache and checks the
    sizes of the shards not in it again; it checks the checksums of the shards its parent had
    not checked, or had checked at another version of the object, before reading them).

    Args:
        url: the data set's name, manifest or one of its shards, as a URL.
        columns: columns to read (default: all).
        verify: read every shard in full and check its CRC-32 (into the cache, if any) before
            serving a row of it (:mod:`.shard_checks`).
        storage_options: keyword arguments of the fsspec filesystem, and jisu's request
            deadline settings (``request_deadline``, ``min_transfer_rate``: :mod:`.remote_answers`).
        cache_dir: a local folder for the node-local shard cache (None: no cache).
        cache_size: most bytes the cache may hold (None: no bound).
        read_ahead_bytes: the most bytes of record batches fetched ahead of the reads and in
            flight at once, when an epoch's order is known (:meth:`plan_epoch`); None:
            :data:`~.read_ahead.READ_AHEAD_BYTES`, 0: no read-ahead.

    Raises:
        FileNotFoundError: the manifest or a shard not in the cache is missing.
        MalformedFileError: the manifest or a shard is malformed or truncated (named by its
            URL); a shard altered at the same size fails its reads instead (its checksum), as
            does, with a cache and ``verify``, a shard whose footer disagrees with the
            manifest.
    """

    in_object_storage = True  # (RecordDataset: row 0 is not read at build time)

    def __init__(
        self,
        url: str,
        columns: Sequence[str] | None = None,
        verify: bool = True,
        storage_options: dict | None = None,
        cache_dir: str | None = None,
        cache_size: int | None = None,
        read_ahead_bytes: int | None = None,
    ) -> None:
        self.storage_options = storage_options
        self.read_ahead_bytes = READ_AHEAD_BYTES if read_ahead_bytes is None else read_ahead_bytes
        self.cache = None if cache_dir is None else ShardCache(cache_dir, cache_size)
        fs, _ = filesystem(url, storage_options)
        manifest = find_remote_manifest(url, fs)
        if manifest is None:
            raise FileNotFoundError(f"RecordDataset: no jisu record manifest at '{url}'")
        self.manifest_path = manifest
        self.verify = verify
        meta = parse_manifest(read_remote_manifest(fs, manifest), manifest)
        self.meta = meta
        self.all_fields = meta.fields
        self.fields = select_fields(self.all_fields, columns)
        self.columns = [f.name for f in self.fields]
        self.shard_paths = [s.path for s in meta.shards]
        self.shard_rows = [s.rows for s in meta.shards]
        self.block_rows = meta.block_rows
        #: shards whose checksums passed in the process that pickled this reader, with the
        #: object version they passed at: a worker trusts them if it opens the same version
        self._trusted: dict[int, dict] = {}
        self._warned = False  # the scattered-reads warning, once per reader
        self._open()
        if self._checks is not None:  # this process opened it: it checks every shard
            self._checks.check_all()

    @property
    def local_row_bytes(self) -> float | None:  # type: ignore[override]
        """With a cache and ``verify``, rows are read from the verified local copies; else by
        ranges, waiting on the network (None)."""
        return super().local_row_bytes if self.cache is not None and self.verify else None

    def _open(self, maps: Any = None) -> None:
        fs, _ = filesystem(self.manifest_path, self.storage_options)
        meta = self.meta

        def sized(entry: ShardEntry) -> RemoteFile:
            path = fs._strip_protocol(entry.path)
            file = open_remote(fs, path, entry.path)  # reads pinned to this version (S3)
            size = file.size
            if size != entry.bytes:
                raise MalformedFileError(
                    entry.path,
                    f"shard has {size} bytes but '{self.manifest_path}' says {entry.bytes}: it "
                    "is truncated or was replaced",
                )
            if size == 0:
                raise MalformedFileError(entry.path, "shard is empty, not an Arrow file")
            return file

        layout = block_layout(meta.rows, self.block_rows, len(meta.shards))
        self._shards = [
            RemoteShard(e, functools.partial(sized, e), layout[k])
            for k, e in enumerate(meta.shards)
        ]
        self._batch_starts = [[0, *itertools.accumulate(sizes)] for sizes in layout]
        self._recent = BatchLRU(_BATCH_CACHE, _BATCH_CACHE_BYTES)
        self._local_views = ViewCache(VIEW_BATCHES, VIEW_BYTES)
        self._copies = CopyStore()
        self._views = ViewCache(0, 0)  # never filled: _columns serves every batch
        expected = arrow_schema(self.all_fields, None)

        # With a cache and checks, every read waits for its shard's check, the download into
        # the cache: the footer is read (by ranges) only for a shard then read by ranges (no
        # room in the cache), so the downloads start without waiting for footers.
        footers_now = self.cache is None or not self.verify

        def prepare(k: int) -> None:  # the cached copy, or the object's size (and footer)
            shard = self._shards[k]
            entry = shard.entry
            if self.cache is not None:
                cached = self.cache.lookup(entry.path, entry.bytes, entry.crc32)
                if cached is not None:
                    try:
                        shard.local = self._map_cached(k, shard, cached, expected)
                        return  # the object itself is never asked for
                    except FileNotFoundError:  # (found open: another reader's eviction is
                        pass  # harmless; kept for a cache file replaced by hand)
            shard.open()  # its size checked, its version pinned
            if footers_now:
                self._footer(k)

        parallel(prepare, range(len(self._shards)))
        self._checks: ShardChecks | None = None  # checksums, as the reads need them
        if self.verify:
            done = [
                k
                for k, shard in enumerate(self._shards)
                if shard.local is not None or self._trusted.get(k) == shard.file.pin
            ]
            if len(done) < len(self._shards):
                self._checks = ShardChecks(len(self._shards), self._check_shard, done)
        self._aheads: dict[int, ReadAhead] = {}  # by run (id of its context)
        self._ahead_lock = threading.Lock()
        self._loading: dict[tuple[int, int], threading.Event] = {}  # batches being fetched

    def _footer(self, k: int) -> RemoteShard:
        """Shard ``k`` with its Arrow footer read by ranges and checked against the manifest
        (schema, batch count; where each batch's bytes lie), once: the first range read of
        the shard needs it."""
        shard = self._shards[k]
        if shard.ranges is not None:
            return shard
        with shard.footer_lock:
            if shard.ranges is None:
                entry = shard.entry
                reader = shard.remote_reader()
                expected = arrow_schema(self.all_fields, None)
                self._check_shard_schema(k, entry, reader.schema, expected)
                if reader.num_record_batches != len(shard.layout):
                    raise MalformedFileError(
                        entry.path,
                        f"shard has {reader.num_record_batches} record batches; the layout "
                        f"in '{self.manifest_path}' gives {len(shard.layout)}",
                    )
                shard.keep_reader(reader)
                file = shard.file
                shard.ranges = record_batch_ranges(
                    file.size, lambda at, n: file.read_range(at, at + n), entry.path
                )  # the footer's (the tail, fetched once): where each batch's one read goes
        return shard

    def _check_shard(self, k: int) -> None:
        """Shard ``k``'s CRC-32 against the manifest, by reading it in full: into the cache,
        whose copy its reads then use, when there is one (see :mod:`.shard_checks`). A failure
        is kept on the shard: its reads raise it."""
        shard = self._shards[k]
        entry = shard.entry
        claimed = False
        try:
            claimed = self.cache is not None and shard.claim_fill()
            if claimed:
                cached = self.cache.fetch(shard.file, entry.crc32, self.manifest_path)
                if cached is not None:  # else verified only (no room): read by ranges
                    expected = arrow_schema(self.all_fields, None)
                    shard.local = self._map_cached(k, shard, cached, expected)
                    self._recent.drop_shard(k)
                return
            crc = read_whole(shard.file)  # no cache: checked, then read by ranges
            if crc != entry.crc32:
                raise crc_mismatch(entry.path, self.manifest_path, crc, entry.crc32)
        except Stopped:  # the reading run stopped: not the shard's failure, checked again
            if claimed:
                shard.filling = False
            raise
        except BaseException as exc:
            shard.error = exc
            self._recent.drop_shard(k)
            raise

    def _map_cached(
        self, k: int, shard: RemoteShard, file: PreadFile, expected: pa.Schema
    ) -> tuple[PreadFile, list[list[Part]]]:
        """The verified cache copy of shard ``k`` (open: another reader of the cache may
        remove it meanwhile), checked as a local shard is (errors name the shard's URL), and
        where the columns lie in each of its batches."""
        if file.size != shard.entry.bytes:
            file.close()
            raise MalformedFileError(file.path, "cache file changed size while being opened")
        sizes, parts = self._open_shard_batches(k, shard.entry, file, shard.entry.path, expected)
        if sizes != shard.layout:
            raise MalformedFileError(
                shard.entry.path,
                f"shard's record batches hold {sizes[:8]} rows; the layout in "
                f"'{self.manifest_path}' gives {shard.layout[:8]}",
            )
        return file, parts

    def _fill(self, k: int) -> None:
        """Download shard ``k`` into the cache, then switch its reads to the copy."""
        shard = self._shards[k]
        try:
            cached = self.cache.fetch(shard.file, shard.entry.crc32, self.manifest_path)
            if cached is not None:
                expected = arrow_schema(self.all_fields, None)
                shard.local = self._map_cached(k, shard, cached, expected)
                self._recent.drop_shard(k)
        except MalformedFileError as exc:
            shard.error = exc  # the shard's next read fails with it, even of a batch read
            self._recent.drop_shard(k)  # before the check
        except Exception as exc:  # a network error: keep reading by ranges
            log.debug("filling the shard cache with '%s' failed: %r", shard.entry.path, exc)

    def _columns(self, shard: int, batch: int) -> Any:
        key = (shard, batch)
        source = self._shards[shard]
        if self._checks is not None and source.local is None:
            self._checks.wait(shard)  # nothing of a shard is served before its checksum passed
        if source.local is not None:
            views = self._local_views.get(key)
            if views is None:
                file, parts = source.local
                copies = (self._copies, key)
                name = source.entry.path
                views = FileColumns(file, name, self.fields, parts[batch], batch, copies)
                self._local_views.put(key, views)
            return views
        source.check()
        views = self._recent.get(key)
        if views is not None and self._aheads:
            for ahead in list(self._aheads.values()):  # a range fetched for it is not needed
                ahead.skip((shard, *self._footer(shard).ranges[batch]))
        if views is None:
            views = self._fetch_batch(key, source)
        fill = self.cache is not None and not self.cache.full and not source.filling
        if fill and source.claim_fill():  # the first read of a shard not cached yet
            threading.Thread(
                target=self._fill, args=(shard,), name="jisu-cache-fill", daemon=True
            ).start()
        return views

    def _fetch_batch(self, key: tuple[int, int], source: RemoteShard) -> BatchColumns:
        """Record batch ``key`` fetched into the recent-batch cache, once for the threads
        that ask for it at the same time (rows of one batch read in parallel)."""
        with self._ahead_lock:
            loading = self._loading.get(key)
            mine = loading is None
            if mine:
                loading = self._loading[key] = threading.Event()
        if not mine:
            loading.wait()
            views = self._recent.get(key)
            if views is not None:
                return views  # else it failed (each thread then raises its own error)
        try:
            record_batch = self._footer(key[0]).get_batch(key[1])
            views = BatchColumns(record_batch, self.fields)
            self._recent.put(key, views, record_batch.nbytes)
            return views
        finally:
            if mine:
                with self._ahead_lock:
                    del self._loading[key]
                loading.set()

    # ------------------------------------------------------------------ read-ahead
    def plan_epoch(self, order: np.ndarray, run: Any) -> None:
        """Plan the reads of rows ``order`` (in that order: an epoch's): the shards whose
        checksums are still to be checked are checked in the order these rows need them, and
        the record batches the reads will fetch are fetched ahead (see :mod:`.read_ahead`),
        after the run's earlier plans, until ``run`` (the pipeline run's context) shuts down.
        A scattered order read by ranges is warned about, once per reader."""
        order = np.asarray(order, dtype=np.int64)
        order = order[(order >= 0) & (order < len(self))]  # padded rows read nothing
        if not order.size:
            return
        block, offset = np.divmod(order, self.block_rows)
        count = len(self._shards)
        shard = block % count
        if self._checks is not None:
            _, first = np.unique(shard, return_index=True)
            self._checks.plan(shard[np.sort(first)].tolist())
        local = (block // count) * self.block_rows + offset
        batch = np.empty_like(local)
        for k in np.unique(shard):
            rows = shard == k
            starts = np.asarray(self._batch_starts[k])
            batch[rows] = np.searchsorted(starts, local[rows], side="right") - 1
        new = np.ones(order.size, dtype=bool)  # one read per run of rows of one batch
        new[1:] = (shard[1:] != shard[:-1]) | (batch[1:] != batch[:-1])
        self._warn_scattered(int(new.sum()))
        if not self.read_ahead_bytes:
            return
        with self._ahead_lock:
            ahead = self._aheads.get(id(run))
            if ahead is None:
                ahead = ReadAhead(self._fetch_range, self.read_ahead_bytes, stop=run.stop)
                self._aheads[id(run)] = ahead
                run.on_shutdown(functools.partial(self._end_read_ahead, id(run)))
                for k, source in enumerate(self._shards):
                    source.set_ahead(functools.partial(self._take_range, k))
        ahead.plan(self._planned(shard[new], batch[new]))

    def _warn_scattered(self, reads: int) -> None:
        """Warn once when an epoch's order reads record batches by ranges many times each (a
        global shuffle over more batches than the reader keeps): each read of a row then
        fetches its whole batch, and a cache or a windowed shuffle is many times faster."""
        batches = sum(len(shard.layout) for shard in self._shards)
        cached = self.cache is not None and not self.cache.full
        if cached or self._warned or batches <= _BATCH_CACHE or reads <= 2 * batches:
            return
        self._warned = True
        warnings.warn(
            f"jisu: this epoch reads the {batches} record batches of '{self.manifest_path}' "
            f"by ranged requests in a scattered (shuffled) order: up to {reads} fetches, "
            f"~{reads / batches:.0f} per batch (the reader keeps {_BATCH_CACHE} in memory). "
            "Pass cache_dir= (each shard fetched once, then read locally), or read the shards "
            "in order and shuffle within a window: shuffle=Shuffle.FILES (or INFILE) followed "
            "by .shuffle(buffer_size), as streaming loaders do",
            RuntimeWarning,
            stacklevel=2,
        )

    def _end_read_ahead(self, run_id: int) -> None:
        with self._ahead_lock:
            ahead = self._aheads.pop(run_id, None)
        if ahead is not None:
            ahead.close()

    def _planned(self, shards: np.ndarray, batches: np.ndarray) -> Iterator[tuple]:
        """The ranges to fetch, decided as the read-ahead reaches them: not those of shards
        read from the cache by then (or to be, once checked), nor batches in the recent-batch
        cache."""
        checks, cache = self._checks, self.cache
        for k, b in zip(shards.tolist(), batches.tolist()):
            source = self._shards[k]
            if source.local is not None or (k, b) in self._recent:
                continue  # read from the cache copy, or fetched already
            into_cache = checks is not None and cache is not None and not cache.full
            if into_cache and not checks.passed(k):
                continue  # its check is the download into the cache
            start, end = self._footer(k).ranges[b]
            if not source.file.in_tail(start):
                yield (k, start, end)

    def _fetch_range(self, k: int, start: int, end: int) -> bytes:
        return self._shards[k].file._get(start, end)

    def _take_range(self, k: int, start: int, end: int) -> bytes | None:
        for ahead in list(self._aheads.values()):  # the runs reading now (usually one)
            data = ahead.take((k, start, end))
            if data is not None:
                return data
        return None

    def __getstate__(self) -> dict:
        skip = ("_shards", "_views", "_recent", "_local_views", "_batch_starts", "_flat_starts")
        skip += ("_files", "_parts", "_copies", "_aheads", "_ahead_lock", "_loading", "_checks")
        state = {k: v for k, v in self.__dict__.items() if k not in skip}
        # a worker trusts the shards this process checked (at the version checked); it
        # checks the others itself
        checks = self._checks
        state["_trusted"] = {  # (a shard read from the cache: the worker finds it there too)
            k: shard.file.pin
            for k, shard in enumerate(self._shards)
            if shard.local is None and (checks is None or checks.passed(k))
        }
        return state
