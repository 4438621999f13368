"""Writing jisu record data sets to object storage (``FileWriter`` with a URL).

:class:`RemoteTarget`: the shards are written to a
local staging folder, then uploaded under generation names (``name.g<token>k``) that only the
new manifest lists, then the manifest is uploaded last (a single PUT, atomic on S3): readers
see the old data set or the new one, never a mix. Without ``overwrite`` the manifest is put
with a conditional write (``If-None-Match: *`` on S3), so a data set that exists (or was
committed meanwhile by another writer) is never replaced; with ``overwrite`` the old data
set's shards are removed after the new manifest is in place.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from typing import Any

from .format import MANIFEST_SUFFIX, shard_files
from .remote import parallel, read_remote_manifest
from .storage import RemoteFile, filesystem, remote_size

log = logging.getLogger(__name__)


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
            parallel(
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
