"""jisu record data sets in object storage (``s3://``, ``gs://``, ``hf://``, any fsspec URL).

Reading (:class:`RemoteRecordReader`): the manifest is read (size checked first) and validated
exactly as a local one; every shard's size is checked against it (one metadata request per
shard, in parallel) and its Arrow footer and schema are read by ranges. A row is then read
by fetching its record batch alone (one ranged GET of the batch's bytes; the shard is never
downloaded to read one row); the batch's row count and buffers are checked when it is
fetched. Fetched batches are kept in a small per-reader LRU.

Checksums: with ``verify=True`` every shard is read in full when the data set is opened
(in parallel) and its CRC-32 checked against the manifest, as a local reader does; with a
cache, that read is the download into the cache, so it is done once per node. With
``verify=False`` nothing is read in full at open.

Cache (``cache_dir``): a shard whose verified copy is in the cache is read like a local shard
(by ``pread``, never mapped: a cache file truncated under the reader is an error, not a
SIGBUS). A shard not in the cache is read by ranges, and its first read starts
one background download into the cache (``jisu-cache-fill`` thread); the copy is published
only once its CRC-32 matched, then later reads of the shard switch to it. A shard whose
download does not match its checksum makes its next read fail with the error naming the URL.

Writing (``FileWriter`` with a URL, see :class:`RemoteTarget`): the shards are written to a
local staging folder, then uploaded under generation names (``name.g<token>k``) that only the
new manifest lists, then the manifest is uploaded last (a single PUT, atomic on S3): readers
see the old data set or the new one, never a mix. Without ``overwrite`` the manifest is put
with a conditional write (``If-None-Match: *`` on S3), so a data set that exists (or was
committed meanwhile by another writer) is never replaced; with ``overwrite`` the old data
set's shards are removed after the new manifest is in place.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from .arrow_file import CopyStore, FileColumns, Part
from .format import (
    MANIFEST_SUFFIX,
    ShardEntry,
    block_layout,
    check_manifest_size,
    decode_manifest,
    find_manifest,
    parse_manifest,
    shard_files,
)
from .pread import PreadFile
from .reader import VIEW_BATCHES, VIEW_BYTES, RecordReader, ViewCache
from .remote_batches import BatchColumns, RemoteShard
from .schema import arrow_schema, select_fields
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


def _parallel(fn: Any, items: Sequence) -> list:
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


class _BatchLRU:
    """The last ``(shard, batch)`` column views, thread-safe: at most ``capacity`` of them and
    ``max_bytes`` in all (the newest one is kept whatever its size), so that record batches a
    hostile or unusual footer makes large cannot pile up in memory."""

    def __init__(self, capacity: int, max_bytes: int) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Any:
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            return entry[0]

    def put(self, key: tuple, value: Any, nbytes: int = 0) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._items[key] = (value, nbytes)
            self.nbytes += nbytes
            while len(self._items) > 1 and (
                len(self._items) > self.capacity or self.nbytes > self.max_bytes
            ):
                self.nbytes -= self._items.popitem(last=False)[1][1]

    def drop_shard(self, shard: int) -> None:
        with self._lock:
            for key in [k for k in self._items if k[0] == shard]:
                self.nbytes -= self._items.pop(key)[1]


class RemoteRecordReader(RecordReader):
    """Random access to the rows of a jisu record data set in object storage (see the module
    docstring). Thread-safe; pickles by URL (a worker process checks the shards' sizes again
    and uses the cache, but does not verify checksums again).

    Args:
        url: the data set's name, manifest or one of its shards, as a URL.
        columns: columns to read (default: all).
        verify: read every shard in full at open and check its CRC-32 (into the cache, if any).
        storage_options: keyword arguments of the fsspec filesystem.
        cache_dir: a local folder for the node-local shard cache (None: no cache).
        cache_size: most bytes the cache may hold (None: no bound).

    Raises:
        FileNotFoundError: the manifest or a shard is missing.
        MalformedFileError: the manifest or a shard is malformed, truncated or altered (named
            by its URL).
    """

    def __init__(
        self,
        url: str,
        columns: Sequence[str] | None = None,
        verify: bool = True,
        storage_options: dict | None = None,
        cache_dir: str | None = None,
        cache_size: int | None = None,
    ) -> None:
        self.storage_options = storage_options
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
        self._checked = False
        self._open()

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

        files = _parallel(sized, meta.shards)
        if self.verify and not self._checked:
            _parallel(lambda pair: self._verify(*pair), list(zip(meta.shards, files)))
        self._checked = True  # by this process; a worker that unpickles the reader does not
        layout = block_layout(meta.rows, self.block_rows, len(files))
        self._shards = [
            RemoteShard(e, f, layout[k]) for k, (e, f) in enumerate(zip(meta.shards, files))
        ]
        self._batch_starts = [[0, *itertools.accumulate(sizes)] for sizes in layout]
        self._recent = _BatchLRU(_BATCH_CACHE, _BATCH_CACHE_BYTES)
        self._local_views = ViewCache(VIEW_BATCHES, VIEW_BYTES)
        self._copies = CopyStore()
        self._views = ViewCache(0, 0)  # never filled: _columns serves every batch
        expected = arrow_schema(self.all_fields, None)

        def prepare(k: int) -> None:  # the cached copy, or the footer by ranges
            shard = self._shards[k]
            entry = shard.entry
            cached = None
            if self.cache is not None:
                cached = self.cache.lookup(entry.path, entry.bytes, entry.crc32)
            if cached is not None:
                try:
                    shard.local = self._map_cached(k, shard, cached, expected)
                    return
                except FileNotFoundError:  # evicted by another reader since it was checked
                    pass
            reader = shard.remote_reader()
            self._check_shard_schema(k, entry, reader.schema, expected)
            if reader.num_record_batches != len(shard.layout):
                raise MalformedFileError(
                    entry.path,
                    f"shard has {reader.num_record_batches} record batches; the layout in "
                    f"'{self.manifest_path}' gives {len(shard.layout)}",
                )
            shard.keep_reader(reader)

        _parallel(prepare, range(len(self._shards)))

    def _verify(self, entry: ShardEntry, file: RemoteFile) -> None:
        """The shard's CRC-32 against the manifest, by reading it in full (into the cache)."""
        if self.cache is not None:
            self.cache.fetch(file, entry.crc32, self.manifest_path)
            return
        crc = read_whole(file)
        if crc != entry.crc32:
            raise crc_mismatch(entry.path, self.manifest_path, crc, entry.crc32)

    def _map_cached(
        self, k: int, shard: RemoteShard, path: str, expected: pa.Schema
    ) -> tuple[PreadFile, list[list[Part]]]:
        """The verified cache copy of shard ``k``, checked as a local shard is (errors name the
        shard's URL), and where the columns lie in each of its batches."""
        file = PreadFile.open(path)
        if file.size != shard.entry.bytes:
            file.close()
            raise MalformedFileError(path, "cache file changed size while being opened")
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
            path = self.cache.fetch(shard.file, shard.entry.crc32, self.manifest_path)
            if path is not None:
                expected = arrow_schema(self.all_fields, None)
                shard.local = self._map_cached(k, shard, path, expected)
                self._recent.drop_shard(k)
        except MalformedFileError as exc:
            shard.error = exc  # the shard's next read fails with it, even of a batch read
            self._recent.drop_shard(k)  # before the check
        except Exception as exc:  # a network error: keep reading by ranges
            log.debug("filling the shard cache with '%s' failed: %r", shard.entry.path, exc)

    def _columns(self, shard: int, batch: int) -> Any:
        key = (shard, batch)
        source = self._shards[shard]
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
        if views is None:
            record_batch = source.get_batch(batch)
            views = BatchColumns(record_batch, self.fields)
            self._recent.put(key, views, record_batch.nbytes)
        fill = self.cache is not None and not self.cache.full and not source.filling
        if fill and source.claim_fill():  # the first read of a shard not cached yet
            threading.Thread(
                target=self._fill, args=(shard,), name="jisu-cache-fill", daemon=True
            ).start()
        return views

    def __getstate__(self) -> dict:
        skip = ("_shards", "_views", "_recent", "_local_views", "_batch_starts", "_files")
        skip += ("_parts", "_copies")
        return {k: v for k, v in self.__dict__.items() if k not in skip}


class RemoteTarget:
    """Where a ``FileWriter`` given a URL publishes its data set (see the module docstring):
    the writer writes its files into :attr:`staging` (a local temporary folder), then
    :meth:`publish` uploads them.

    Raises:
        FileExistsError: without ``overwrite``, the data set's manifest or a shard of its plain
            name exists.
    """

    def __init__(self, url: str, shard_num: int, overwrite: bool, storage_options: dict | None):
        self.url = url.rstrip("/")
        self.fs, _ = filesystem(self.url, storage_options)
        self.manifest = self.url + MANIFEST_SUFFIX
        self.overwrite = overwrite
        if not overwrite:
            for candidate in [self.manifest, *shard_files(self.url, shard_num)]:
                if self.fs.exists(self._path(candidate)):
                    raise FileExistsError(
                        f"FileWriter: '{candidate}' already exists; pass overwrite=True to "
                        "replace the data set"
                    )
        self.staging = tempfile.mkdtemp(prefix="jisu-upload-")
        self.name = os.path.join(self.staging, os.path.basename(self.url) or "data")

    def _path(self, url: str) -> str:
        return self.fs._strip_protocol(url)

    def cleanup(self) -> None:
        """Remove the staging folder."""
        shutil.rmtree(self.staging, ignore_errors=True)

    def publish(self, writer: Any, sealed: list[dict]) -> list[str]:
        """Upload the writer's shards, then its manifest (the commit point); returns the
        shards' URLs.

        Raises:
            FileExistsError: without ``overwrite``, a data set of this name was committed
                first; the uploaded shards are removed again.
        """
        urls = shard_files(f"{self.url}.g{writer._token}", writer.shard_num)
        old: set[str] = set()
        if self.overwrite:
            with contextlib.suppress(FileNotFoundError, ValueError):
                raw = read_remote_manifest(self.fs, self.manifest)
                shards = raw.get("shards") if isinstance(raw, dict) else None
                names = [e.get("file") for e in shards or [] if isinstance(e, dict)]
                old = {n for n in names if isinstance(n, str) and "/" not in n and n}
        body = None
        try:
            _parallel(
                lambda pair: self.fs.put_file(pair[0], self._path(pair[1])),
                list(zip(writer._temp, urls)),
            )
            writer._write_manifest(urls, sealed)
            with open(writer._temp_manifest, "rb") as f:
                body = f.read()
            self._put_manifest(body)
        except BaseException as exc:
            # a PUT whose answer was lost and that the client retried reports a failure (the
            # retry of a conditional PUT finds the manifest: this writer's own) though the
            # data set is committed: its shards must then stay
            committed = False if body is None else self._committed(body)
            if committed is False:  # uploaded shards that no manifest lists: removed
                for url in urls:
                    with contextlib.suppress(OSError):
                        self.fs.rm_file(self._path(url))
            if not (committed and isinstance(exc, Exception)):
                raise
            log.debug("FileWriter.commit: '%s' was committed (%r)", self.manifest, exc)
        directory = self.url.rsplit("/", 1)[0]
        current = {u.rsplit("/", 1)[1] for u in urls}
        for name in sorted(old - current):
            with contextlib.suppress(OSError):
                self.fs.rm_file(self._path(f"{directory}/{name}"))
        return urls

    def _committed(self, body: bytes) -> bool | None:
        """Whether the manifest in storage is ``body`` (it names this writer's generation of
        shards, so no other writer's is); None when that cannot be read."""
        path = self._path(self.manifest)
        try:
            self.fs.invalidate_cache(path)
            size = remote_size(self.fs, path, self.manifest)
            if size != len(body):
                return False
            return RemoteFile(self.fs, path, self.manifest, size).read_range(0, size) == body
        except FileNotFoundError:
            return False
        except Exception:
            return None

    def _put_manifest(self, body: bytes) -> None:
        path = self._path(self.manifest)
        if self.overwrite:
            self.fs.pipe_file(path, body)
            return
        try:
            self.fs.pipe_file(path, body, mode="create")  # S3: If-None-Match: *
        except FileExistsError:
            raise FileExistsError(
                f"FileWriter.commit: '{self.manifest}' already exists (another writer "
                "committed a data set of this name first); pass overwrite=True to replace it"
            ) from None
        except TypeError:  # a filesystem without exclusive writes: check, then write
            if self.fs.exists(path):
                raise FileExistsError(
                    f"FileWriter.commit: '{self.manifest}' already exists; pass "
                    "overwrite=True to replace it"
                ) from None
            self.fs.pipe_file(path, body)
