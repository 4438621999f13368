"""One open MindRecord shard: its checked layout, where its rows lie, and reading a row.

A :class:`_Shard` opens a file (a regular file only), checks its header
(:mod:`~jisu.dataset.record.mindrecord_header`), walks every page to find each row's records
and checks that they fill their pages exactly, and cross-checks the row count with the SQLite
``.db`` index beside it (:func:`_check_index`, reading it as data:
:mod:`~jisu.dataset.record.mindrecord_index`). Kept apart from the multi-shard reader
(:class:`~jisu.dataset.record.mindrecord.MindRecordReader`), which only combines shards.
"""

from __future__ import annotations

import os
import struct
from array import array

import msgpack
import numpy as np

from .mindrecord_header import _check_header, _read_header
from .mindrecord_index import count_index_rows
from .mindrecord_values import _blob_value, _Corrupt, _raw_value, _show
from .pread import PreadFile
from .schema import Field
from .validate import MalformedFileError, open_regular

_WINDOW = 64 << 10  # bytes read at once when walking a page's row lengths
# MindSpore's FileWriter gives every row of a schema without a scalar field a raw record all
# the same: this map, naming a field the schema does not have (MindSpore 2.10's files;
# tests/fixtures/mindrecord/blob_only.mindrecord). MindDataset does not yield it.
_PLACEHOLDER_KEY = "id"


class _Shard:
    """One open shard: its checked layout, the file (read by ``pread``) and where every row's
    records lie (found and checked against their pages when opened).

    Args:
        path: the shard.
        listed_in: the shard whose header named it, if any (for messages).
    """

    def __init__(self, path: str, listed_in: str | None = None) -> None:
        self.path = path
        fd = open_regular(path, listed_in)
        with os.fdopen(fd, "rb") as f:
            stat = os.fstat(f.fileno())
            self.identity = (stat.st_dev, stat.st_ino)
            header, json_end = _read_header(f, path, stat.st_size)
            self.layout = _check_header(path, header, json_end, stat.st_size)
            # read by pread, never mapped: a shard truncated under the reader is an error
            self.file = PreadFile(path, os.dup(f.fileno()))
        if self.file.size != stat.st_size:
            raise MalformedFileError(path, "changed size while being opened")
        self._find_rows()

    def _find_rows(self) -> None:
        """Every row's blob and raw record, each checked to lie in its page, and each page and
        row group holding exactly the rows the header says."""
        found = [array("q") for _ in range(4)]  # raw offsets, raw lengths, blob offsets, lengths
        layout = self.layout
        for group in layout.groups:
            page = group.blob
            rows = page.end_row - page.start_row
            begin = layout.header_size + page.id * layout.page_size
            where = f"blob page {page.id}"
            count = self._walk(begin, begin + page.size, where, page.start_row, *found[2:])
            if count != rows:
                raise MalformedFileError(
                    self.path, f"{where} holds {count} rows; the page table says {rows}"
                )
            where = f"raw page {group.raw_page}"
            count = self._walk(group.begin, group.end, where, page.start_row, *found[:2])
            if count != rows:
                raise MalformedFileError(
                    self.path,
                    f"{where} holds {count} rows of row group {page.type_id}, whose blob page "
                    f"{page.id} holds {rows}",
                )
        self.raw_at, self.raw_len, self.blob_at, self.blob_len = (
            np.frombuffer(a, dtype=np.int64) for a in found
        )

    def _walk(self, begin: int, end: int, where: str, row: int, at: array, lengths: array) -> int:
        """Records (an 8-byte little-endian length, then that many bytes) that fill the file
        bytes [begin, end) exactly, appended to ``at``/``lengths``; how many there are."""
        pos, count = begin, 0
        window, window_at = b"", 0  # bytes [window_at, window_at + len(window)) of the file
        while pos < end:
            if end - pos < 8:
                raise MalformedFileError(
                    self.path, f"{where}: row {row + count} has its length cut by the page's end"
                )
            if pos + 8 > window_at + len(window):
                window, window_at = self.file.read(pos, min(_WINDOW, end - pos)), pos
            (length,) = struct.unpack_from("<Q", window, pos - window_at)
            if length > end - pos - 8:
                raise MalformedFileError(
                    self.path,
                    f"{where}: row {row + count} ({length} bytes at byte {pos}) runs past the "
                    f"page's end at byte {end}",
                )
            at.append(pos + 8)
            lengths.append(length)
            pos += 8 + length
            count += 1
        return count

    def __len__(self) -> int:
        return len(self.raw_at)

    def where(self, local: int) -> str:
        """Row ``local`` and its pages, in words, for an error message."""
        for group in self.layout.groups:
            if group.blob.start_row <= local < group.blob.end_row:
                return f"row {local} (blob page {group.blob.id}, raw page {group.raw_page})"
        return f"row {local}"

    def row(self, local: int, fields: list[Field]) -> tuple:
        """Row ``local``'s values of ``fields``.

        Raises:
            _Corrupt: a record that does not decode to values of the schema.
        """
        blob_names = self.layout.blob_fields
        # a schema of blobs alone still has its raw records checked (they must be empty or
        # MindSpore's placeholder): a header that lost its last raw field would otherwise drop
        # that field silently
        needs_raw = not self.layout.raw_fields or any(f.name not in blob_names for f in fields)
        raw = self._raw(local) if needs_raw else {}
        blobs = self._blobs(local) if any(f.name in blob_names for f in fields) else {}
        values = []
        for field in fields:
            try:
                values.append(
                    _blob_value(field, blobs[field.name], self.layout.compressed)
                    if field.name in blobs
                    else _raw_value(field, raw)
                )
            except _Corrupt as exc:
                raise _Corrupt(f"field '{field.name}': {exc}") from None
        return tuple(values)

    def _raw(self, local: int) -> dict:
        """Row ``local``'s msgpack map of scalar fields: exactly the schema's non-blob fields
        (none, for a schema of blobs alone: an empty record or MindSpore's placeholder)."""
        at = int(self.raw_at[local])
        if not self.layout.raw_fields and not self.raw_len[local]:
            return {}  # no scalar field, no record
        record = self.file.read(at, int(self.raw_len[local]))
        try:
            raw = msgpack.unpackb(record, raw=False)
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            raise _Corrupt(f"its raw record is not msgpack ({exc})") from None
        if not isinstance(raw, dict):
            raise _Corrupt(f"its raw record is not a map: {_show(raw)}")
        if not self.layout.raw_fields and raw.keys() == {_PLACEHOLDER_KEY}:
            return _placeholder(raw[_PLACEHOLDER_KEY])
        if raw.keys() != self.layout.raw_fields:
            missing = sorted(self.layout.raw_fields - raw.keys())
            extra = sorted(map(str, raw.keys() - self.layout.raw_fields))
            parts = [f"lacks {missing}"] if missing else []
            parts += [f"holds {_show(extra)}, which the schema does not name"] if extra else []
            raise _Corrupt("its raw record " + " and ".join(parts))
        return raw

    def _blobs(self, local: int) -> dict[str, memoryview]:
        """Row ``local``'s blob fields, each a view of the row's bytes (one read)."""
        at = int(self.blob_at[local])
        payload = memoryview(self.file.read(at, int(self.blob_len[local])))
        names = self.layout.blob_fields
        if len(names) == 1:
            return {names[0]: payload}
        out, pos = {}, 0
        for name in names:
            if len(payload) - pos < 8:
                raise _Corrupt(
                    f"its blob record ({len(payload)} bytes) cuts the length of '{name}'"
                )
            size = int.from_bytes(payload[pos : pos + 8], "big")
            if size > len(payload) - pos - 8:
                raise _Corrupt(f"blob field '{name}' ({size} bytes) runs past its record's end")
            out[name] = payload[pos + 8 : pos + 8 + size]
            pos += 8 + size
        if pos != len(payload):
            raise _Corrupt(f"its blob record has {len(payload) - pos} bytes after its fields")
        return out


def _placeholder(value: object) -> dict:
    """No values: the raw record of a schema without scalar fields, which must be MindSpore's
    own placeholder (``{"id": 0}``) exactly. Any other value is a field the header does not
    name (a header that lost its only scalar field, ``id``), refused rather than dropped."""
    if type(value) is not int or value != 0:
        raise _Corrupt(
            f"its raw record holds '{_PLACEHOLDER_KEY}' {_show(value)}, which the schema does "
            f"not name (MindSpore writes '{_PLACEHOLDER_KEY}' 0 for a schema of blob fields alone)"
        )
    return {}


def _check_index(shard: _Shard) -> None:
    """Cross-check a shard's row count with its SQLite index ``<shard>.db``, when there is one.

    The index is a hostile file like the shard, read as data only (no view, trigger or virtual
    table, bounded work: :mod:`~jisu.dataset.record.mindrecord_index`); whatever SQLite cannot
    read of it is a :class:`MalformedFileError` naming it.
    """
    db = shard.path + ".db"
    if not os.path.exists(db):
        return
    count = count_index_rows(db, shard.path)
    if count != len(shard):
        raise MalformedFileError(
            shard.path, f"has {len(shard)} rows but its index '{db}' lists {count}"
        )
