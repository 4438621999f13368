"""Reading MindSpore's MindRecord files without MindSpore, treating every file as hostile.

**Format** (version "3.0", what current MindSpore writes). A shard is an 8-byte
little-endian JSON length, a JSON header, zero padding to ``header_size``, then pages of at most
``page_size`` bytes at ``header_size + page_id * page_size``. The header's ``page`` table lists
the pages in ``page_id`` order (``null`` for a shard without rows, whose file then ends at the
JSON). BLOB_DATA pages, numbered ``page_type_id`` 0, 1, ..., hold the rows ``start_row_id`` to
``end_row_id`` (the next page starts where the last ended), each an 8-byte little-endian length
and the blob fields (bytes and arrays) in ``blob_fields`` order, each behind an 8-byte big-endian
length when there is more than one. Blob page ``g`` is row group ``g``; the row group's scalar
fields lie in a RAW_DATA page, from the ``offset`` its ``row_group_ids`` entry gives to the next
entry's (or the page's end), each row an 8-byte little-endian length and a msgpack map. int32 and
int64 arrays are compressed: a 4-byte big-endian count, one 2-bit width code per value (MSB
first: 1, 2, 4 or 8 bytes) and the values, little-endian and signed. Rows are read in page order,
shard after shard: MindSpore's unshuffled order. The SQLite ``.db`` index beside a shard is not
needed; when present, its row count is cross-checked.

**What is checked.** When a shard is opened: it is a regular file (a FIFO cannot hang it); every
header field the reader uses has the right JSON type and range (MindSpore's limits: JSON at most
128 MiB, pages at most 256 MiB, 4096 shards at most; version "3.0", as "2.0" files store integer
arrays otherwise); the schema has MindRecord's six types and valid shapes, and its blob fields are
exactly its bytes and array fields; the page table lists pages 0, 1, ... in order, blob pages
number 0, 1, ... with contiguous row ranges from 0, the raw pages list row groups 0, 1, ... (one
per blob page) at offsets rising from 0 inside them; the file ends exactly where its last page
does (a truncated file, appended bytes or a page table that lost entries are refused); every row's
8-byte length fits in its page or row group, and the rows found fill each exactly, as many as the
blob page declares; the ``.db`` index, when present, is a regular file SQLite reads (read-only)
and lists as many rows. Shard addresses are plain file names looked for beside the shard that
names them (MindSpore writes base names and reads ``dirname(shard) + name``; jisu never follows a
name with a separator, ``..`` or an absolute path), 1 to 4096 of them, distinct, naming distinct
files (no hard link read twice), and every shard names the same list. When a row is read: its
msgpack map decodes and holds exactly the schema's scalar fields, each of the schema's type and
range; its blob fields' lengths fit the row exactly; a compressed array's count fits its bytes
*before* anything is allocated (each value takes 1 byte and 2 bits at least) and its widths add up
to them exactly; the values fit the field's shape. Every failure is one
:class:`~jisu.dataset.record.validate.MalformedFileError` naming the file and what is wrong (for
a row: its number and pages); a missing shard is a ``FileNotFoundError``.

**What cannot be detected.** MindRecord stores no checksum, of the header or of the pages (the
``.db`` index holds offsets and indexed values, not checksums). So a changed byte inside a row's
value (a msgpack number or string, a float array's bytes, a ``bytes`` field, a compressed integer's
value bytes) reads as another value of that row, and of that row only. A header edit that stays
consistent reads as the edit says, as it would in MindSpore: a field's type or shape changed to
another valid one (``int32`` -> ``int64``, ``[4]`` -> ``[2, 2]``), or a shard dropped from the
address list of the shard one opens (the shards it names are read). Fields the reader does not
use (``desc``, ``index_fields``, ``statistics``, ``shard_id``, ``compression_size``, raw pages'
row ids and type ids, blob pages' row groups), the header's zero padding and the bytes after each
page's used part are not read, so changing them changes nothing. A changed length field would go
unnoticed only if the corrupted walk of its page ended exactly at the page's end with the same
number of rows; lengths read from inside values overrun the page (no such case in thousands of
fuzzed flips).
"""

from __future__ import annotations

import json
import math
import os
import reprlib
import sqlite3
import struct
from array import array
from collections import Counter
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from .pread import PreadFile
from .schema import Field, select_fields
from .validate import MalformedFileError, open_regular, shard_path

VERSION = "3.0"  # MindSpore's kVersion; "2.0" files (no integer compression) are refused
MAX_JSON = 1 << 27  # MindSpore's kMaxHeaderSize
MAX_PAGE = 1 << 28  # MindSpore's kMaxPageSize
MAX_SHARDS = 4096  # MindSpore's kMaxFileCount
TYPES = ("int32", "int64", "float32", "float64", "string", "bytes")
RAW, BLOB = "RAW_DATA", "BLOB_DATA"
_INT_RANGE = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_SHIFTS = np.array([6, 4, 2, 0], dtype=np.uint8)  # of the 4 width codes in a byte, MSB first
_FEW = 64  # compressed arrays up to this length decode faster one value at a time
_WINDOW = 64 << 10  # bytes read at once when walking a page's row lengths


def _shown() -> reprlib.Repr:
    """A short repr for values from a hostile file, which may be huge."""
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = 40
    shown.maxlist = shown.maxdict = 4
    return shown


_show = _shown().repr


class _Corrupt(ValueError):
    """A row's bytes that do not decode; the reader adds the file, page and row."""


def is_mindrecord(path: str) -> bool:
    """Whether ``path`` is a regular file that starts like a MindRecord shard (never blocks)."""
    try:
        fd = open_regular(path)
    except (OSError, MalformedFileError):
        return False
    with os.fdopen(fd, "rb") as f:
        head = f.read(24)
    return len(head) == 24 and head[8:23] == b'{"header_size":'


def decode_ints(payload: memoryview, dtype: np.dtype) -> np.ndarray:
    """MindRecord's compressed int32/int64 array (see the module docstring).

    Raises:
        ValueError: the bytes do not hold such an array: a count the bytes cannot hold (checked
            before allocating), widths that do not add up to the bytes, or a value outside
            ``dtype``.
    """
    size = len(payload)
    if size < 4:
        raise _Corrupt(f"a compressed integer array of {size} bytes has no 4-byte count")
    count = int.from_bytes(payload[:4], "big")
    base = 4 + (count + 3) // 4
    if base + count > size:  # each value takes a 2-bit code and one byte at least
        raise _Corrupt(f"a compressed integer array of {size} bytes declares {count} values")
    decode = _ints_one_by_one if count <= _FEW else _ints_vectorised
    values, need = decode(payload, count, base)
    if need != size:
        raise _Corrupt(f"a compressed integer array needs {need} bytes but has {size}")
    info = np.iinfo(dtype)
    if count and (values.min() < info.min or values.max() > info.max):
        raise _Corrupt(f"a compressed integer array holds a value outside {np.dtype(dtype)}")
    return values.astype(dtype, copy=False)


def _ints_one_by_one(payload: memoryview, count: int, base: int) -> tuple[np.ndarray, int]:
    """``count`` compressed values whose codes end at ``base``, and where they end: a plain
    loop, faster than NumPy's call overhead for a few values."""
    values, pos = [], base
    for k in range(count):
        width = 1 << ((payload[4 + k // 4] >> (6 - 2 * (k % 4))) & 3)
        values.append(int.from_bytes(payload[pos : pos + width], "little", signed=True))
        pos += width
    return np.array(values, dtype=np.int64), pos


def _ints_vectorised(payload: memoryview, count: int, base: int) -> tuple[np.ndarray, int]:
    """The same as :func:`_ints_one_by_one`, vectorised: widths from the codes, their ends by a
    cumulative sum, then one gather per width (nothing read before the sizes add up)."""
    data = np.frombuffer(payload, dtype=np.uint8)
    codes = ((data[4:base, None] >> _SHIFTS) & 3).ravel()[:count]
    widths = np.left_shift(1, codes, dtype=np.int64)
    ends = base + np.cumsum(widths)
    need = int(ends[-1])
    values = np.empty(count, dtype=np.int64)
    if need == len(payload):
        for code in range(4):
            picked = np.flatnonzero(codes == code)
            if picked.size:
                width = 1 << code
                at = ends[picked, None] - width + np.arange(width)
                values[picked] = data[at].view(f"<i{width}").ravel()
    return values, need


@dataclass(frozen=True)
class _Page:
    """One page table entry, checked (``groups``: a raw page's (row group id, offset))."""

    id: int
    type: str
    type_id: int
    start_row: int
    end_row: int
    size: int
    groups: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Group:
    """Row group ``g``: blob page ``g`` and the file bytes [begin, end) of its raw records."""

    blob: _Page
    raw_page: int
    begin: int
    end: int


@dataclass(frozen=True)
class _Layout:
    """What the reader uses of a shard's header, every part checked."""

    schema: dict
    fields: list[Field]
    blob_fields: list[str]
    raw_fields: frozenset[str]
    header_size: int
    page_size: int
    groups: list[_Group]
    addresses: list[str]


def _int(path: str, value: Any, what: str, low: int = 0, high: int | None = None) -> int:
    """``value`` if it is a JSON integer (not a bool) in [low, high]; else a clear error."""
    if type(value) is not int or value < low or (high is not None and value > high):
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise MalformedFileError(path, f"{what} must be an int {bounds}; found {_show(value)}")
    return value


def _read_header(f: Any, path: str, size: int) -> tuple[dict, int]:
    """The JSON header of the open shard ``f`` of ``size`` bytes, and where the JSON ends."""
    if size < 8:
        raise MalformedFileError(path, f"is not a MindRecord file ({size} bytes)")
    length = int.from_bytes(f.read(8), "little")
    if length > min(MAX_JSON, size - 8):
        raise MalformedFileError(
            path, f"declares a {length}-byte JSON header (file: {size} bytes, limit {MAX_JSON})"
        )
    try:
        header = json.loads(f.read(length))
    except (ValueError, RecursionError) as exc:
        raise MalformedFileError(path, f"has a corrupt JSON header ({exc})") from None
    if not isinstance(header, dict):
        raise MalformedFileError(path, f"has a JSON header that is not an object: {_show(header)}")
    return header, 8 + length


def _check_fields(path: str, header: dict) -> tuple[dict, list[Field], list[str]]:
    """The schema as stored, its fields and the blob fields, checked as MindSpore checks them."""
    schemas = header.get("schema")
    if not isinstance(schemas, list) or len(schemas) != 1 or not isinstance(schemas[0], dict):
        raise MalformedFileError(path, f"'schema' must list one object; found {_show(schemas)}")
    schema, blob_fields = schemas[0].get("schema"), schemas[0].get("blob_fields")
    if not isinstance(schema, dict) or not schema:
        raise MalformedFileError(
            path, f"the schema must be a non-empty object; found {_show(schema)}"
        )
    fields = [_check_field(path, name, spec) for name, spec in schema.items()]
    expected = sorted(f.name for f in fields if f.type == "bytes" or f.shape is not None)
    if (
        not isinstance(blob_fields, list)
        or not all(isinstance(name, str) for name in blob_fields)
        or sorted(blob_fields) != expected
    ):
        raise MalformedFileError(
            path,
            f"'blob_fields' must list the bytes and array fields {expected} once each; "
            f"found {_show(blob_fields)}",
        )
    return schema, fields, blob_fields


def _check_field(path: str, name: str, spec: Any) -> Field:
    """One schema entry: one of MindRecord's six types and, for numeric types only, a shape of
    positive ints with one -1 (any length) at most."""
    where = f"schema field {_show(name)}"
    if not isinstance(spec, dict) or spec.get("type") not in TYPES or set(spec) - {"type", "shape"}:
        raise MalformedFileError(
            path,
            f"{where} must be {{'type': one of {list(TYPES)}[, 'shape']}}; found {_show(spec)}",
        )
    shape = spec.get("shape")
    if shape is not None and (
        spec["type"] in ("string", "bytes")
        or not isinstance(shape, list)
        or not all(type(s) is int and (s > 0 or s == -1) for s in shape)
        or shape.count(-1) > 1
    ):
        raise MalformedFileError(
            path,
            f"{where}: a shape lists positive ints and one -1 at most, for a numeric type; "
            f"found {_show(spec)}",
        )
    return Field(name, spec["type"], shape)


def _check_pages(path: str, header: dict, json_end: int, size: int) -> tuple[int, int, list[_Page]]:
    """header_size, page_size and the page table: every page inside the file, the file ending
    exactly where its last page does (or within the header when there is none)."""
    header_size = _int(path, header.get("header_size"), "'header_size'", json_end, MAX_JSON)
    page_size = _int(path, header.get("page_size"), "'page_size'", 1, MAX_PAGE)
    table = header.get("page")
    if table is None:
        table = []  # what MindSpore writes for a shard without rows
    if not isinstance(table, list):
        raise MalformedFileError(path, f"'page' must be a list; found {_show(table)}")
    pages = [_check_page(path, k, entry, page_size) for k, entry in enumerate(table)]
    end = header_size + pages[-1].id * page_size + pages[-1].size if pages else header_size
    if pages and size < end:
        raise MalformedFileError(
            path, f"is truncated (page {pages[-1].id} ends at byte {end}, file has {size})"
        )
    if size > end:
        what = f"its last page (page {pages[-1].id})" if pages else "its header (it lists no pages)"
        raise MalformedFileError(path, f"has {size - end} bytes after {what}")
    return header_size, page_size, pages


def _check_page(path: str, position: int, entry: Any, page_size: int) -> _Page:
    """Page table entry ``position``, which must describe page ``position``."""
    where = f"page table entry {position}"
    if not isinstance(entry, dict):
        raise MalformedFileError(path, f"{where} must be an object; found {_show(entry)}")
    page_id = _int(path, entry.get("page_id"), f"{where}: page_id", position, position)
    kind = entry.get("page_type")
    if kind not in (RAW, BLOB):
        raise MalformedFileError(
            path, f"{where}: page_type must be {RAW} or {BLOB}; found {_show(kind)}"
        )
    length = _int(path, entry.get("page_size"), f"{where}: page_size", 0, page_size)
    if kind == RAW:
        return _Page(page_id, kind, 0, 0, 0, length, _check_row_groups(path, where, entry, length))
    return _Page(
        page_id,
        kind,
        _int(path, entry.get("page_type_id"), f"{where}: page_type_id"),
        _int(path, entry.get("start_row_id"), f"{where}: start_row_id"),
        _int(path, entry.get("end_row_id"), f"{where}: end_row_id"),
        length,
        (),
    )


def _check_row_groups(
    path: str, where: str, entry: dict, length: int
) -> tuple[tuple[int, int], ...]:
    """A raw page's (row group id, offset) list: offsets rising from 0, inside the page."""
    listed = entry.get("row_group_ids")
    if not isinstance(listed, list) or not listed or not all(isinstance(g, dict) for g in listed):
        raise MalformedFileError(
            path,
            f"{where}: row_group_ids must be a non-empty list of objects; found {_show(listed)}",
        )
    groups = tuple(
        (
            _int(path, g.get("id"), f"{where}: a row group id"),
            _int(path, g.get("offset"), f"{where}: a row group offset", 0, length),
        )
        for g in listed
    )
    offsets = [offset for _, offset in groups]
    if offsets[0] != 0 or any(b <= a for a, b in pairwise(offsets)):
        raise MalformedFileError(path, f"{where}: row group offsets {offsets} must rise from 0")
    return groups


def _check_row_groups_match(
    path: str, header_size: int, page_size: int, pages: list[_Page]
) -> list[_Group]:
    """Blob pages numbered 0, 1, ... with contiguous row ranges from 0, and row group ``g`` of
    blob page ``g`` listed, in order, by the raw pages."""
    blob = [p for p in pages if p.type == BLOB]
    row = 0
    for number, page in enumerate(blob):
        if page.type_id != number or page.start_row != row or page.end_row < row:
            raise MalformedFileError(
                path,
                f"page {page.id} must be blob page {number}, of rows from {row}; it says blob "
                f"page {page.type_id}, rows {page.start_row} to {page.end_row}",
            )
        row = page.end_row
    groups: list[_Group] = []
    for page in pages:
        if page.type != RAW or page.size == 0:  # a raw page emptied by MindSpore holds no group
            continue
        start = header_size + page.id * page_size
        ends = [offset for _, offset in page.groups[1:]] + [page.size]
        for (group, offset), end in zip(page.groups, ends):
            if group != len(groups) or group >= len(blob):
                raise MalformedFileError(
                    path,
                    f"raw page {page.id} lists row group {group} where group {len(groups)} of "
                    f"{len(blob)} (one per blob page) is due",
                )
            groups.append(_Group(blob[group], page.id, start + offset, start + end))
    if len(groups) != len(blob):
        raise MalformedFileError(
            path, f"its raw pages hold {len(groups)} row groups for {len(blob)} blob pages"
        )
    return groups


def _check_addresses(path: str, header: dict) -> list[str]:
    """The shards the header names: 1 to MAX_SHARDS distinct plain file names, which are
    looked for beside ``path`` (MindSpore stores base names and reads them from there)."""
    names = header.get("shard_addresses")
    if not isinstance(names, list) or not 1 <= len(names) <= MAX_SHARDS:
        raise MalformedFileError(
            path, f"'shard_addresses' must list 1 to {MAX_SHARDS} shards; found {_show(names)}"
        )
    directory = os.path.dirname(path)
    for name in names:
        shard_path(directory, name, path)
    if len(set(names)) != len(names):
        repeated = sorted(name for name, times in Counter(names).items() if times > 1)
        raise MalformedFileError(path, f"'shard_addresses' lists {repeated} more than once")
    return names


def _check_header(path: str, header: dict, json_end: int, size: int) -> _Layout:
    """Everything the reader uses of a shard's header, checked against the file's size."""
    version = header.get("version")
    if version != VERSION:
        raise MalformedFileError(
            path, f"has MindRecord version {_show(version)}; jisu reads version {VERSION} only"
        )
    schema, fields, blob_fields = _check_fields(path, header)
    header_size, page_size, pages = _check_pages(path, header, json_end, size)
    groups = _check_row_groups_match(path, header_size, page_size, pages)
    addresses = _check_addresses(path, header)
    raw_fields = frozenset(f.name for f in fields) - set(blob_fields)
    return _Layout(
        schema, fields, blob_fields, raw_fields, header_size, page_size, groups, addresses
    )


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
        raw = self._raw(local) if any(f.name not in blob_names for f in fields) else {}
        blobs = self._blobs(local) if any(f.name in blob_names for f in fields) else {}
        values = []
        for field in fields:
            try:
                values.append(
                    _blob_value(field, blobs[field.name])
                    if field.name in blobs
                    else _raw_value(field, raw)
                )
            except _Corrupt as exc:
                raise _Corrupt(f"field '{field.name}': {exc}") from None
        return tuple(values)

    def _raw(self, local: int) -> dict:
        """Row ``local``'s msgpack map of scalar fields: exactly the schema's non-blob fields."""
        at = int(self.raw_at[local])
        record = self.file.read(at, int(self.raw_len[local]))
        try:
            raw = msgpack.unpackb(record, raw=False)
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            raise _Corrupt(f"its raw record is not msgpack ({exc})") from None
        if not isinstance(raw, dict):
            raise _Corrupt(f"its raw record is not a map: {_show(raw)}")
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


def _raw_value(field: Field, raw: dict) -> np.ndarray:
    """A scalar field's value from the row's msgpack map, of the schema's type and range."""
    value = raw[field.name]
    if field.type == "string":
        if type(value) is not str:
            raise _Corrupt(f"a string field holds {_show(value)}")
        return np.array(value)
    if field.type in _INT_RANGE:
        low, high = _INT_RANGE[field.type]
        if type(value) is not int or not low <= value <= high:
            raise _Corrupt(f"an {field.type} field holds {_show(value)}")
        return np.array(value, dtype=field.dtype)
    if type(value) not in (int, float):
        raise _Corrupt(f"a {field.type} field holds {_show(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise _Corrupt(f"a {field.type} field holds {_show(value)}") from None
    with np.errstate(over="ignore"):  # a float64 beyond float32 reads as inf, as in MindSpore
        return np.array(number, dtype=field.dtype)


def _blob_value(field: Field, payload: memoryview) -> np.ndarray:
    """A blob field's value: bytes, or an array of the field's type and shape."""
    if field.type == "bytes":
        return np.frombuffer(payload, dtype=np.uint8)
    if field.type in _INT_RANGE:
        values = decode_ints(payload, field.dtype)
    else:
        if len(payload) % field.dtype.itemsize:
            raise _Corrupt(f"{len(payload)} bytes are not a whole number of {field.type} values")
        values = np.frombuffer(payload, dtype=field.dtype.newbyteorder("<"))
    shape = field.shape
    assert shape is not None  # blob fields are bytes or arrays (checked when opened)
    known = math.prod(s for s in shape if s != -1)
    if values.size % known == 0 if -1 in shape else values.size == known:
        try:
            return values.reshape(shape)
        except ValueError:  # no values and a -1 among dimensions beyond NumPy's limits
            pass
    raise _Corrupt(f"{values.size} values do not fit the shape {shape}")


def _check_index(shard: _Shard) -> None:
    """Cross-check a shard's row count with its SQLite index ``<shard>.db``, when there is one.

    The index is a hostile file like the shard: it must be a regular file (a FIFO is refused
    before SQLite opens it), it is opened read-only, and whatever SQLite cannot read of it is a
    :class:`MalformedFileError` naming it.
    """
    db = shard.path + ".db"
    if not os.path.exists(db):
        return
    fd = open_regular(db, shard.path)
    try:
        # SQLite opens by name: give it the checked descriptor's name where the system has
        # one, so the file checked is the file read (no window to swap it in between)
        by_fd = f"/proc/self/fd/{fd}"
        name = by_fd if os.path.exists(by_fd) else db
        with closing(sqlite3.connect(Path(name).as_uri() + "?mode=ro", uri=True)) as conn:
            (count,) = conn.execute("SELECT COUNT(DISTINCT ROW_ID) FROM INDEXES").fetchone()
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged name SQLite decodes
        raise MalformedFileError(db, f"is not a readable MindRecord index ({exc})") from None
    finally:
        os.close(fd)
    if count != len(shard):
        raise MalformedFileError(
            shard.path, f"has {len(shard)} rows but its index '{db}' lists {count}"
        )


class MindRecordReader:
    """Random access to the rows of one or more MindRecord shards of one schema.

    Every shard (and its ``.db`` index) is checked when opened and each row when read (see the
    module docstring); a malformed file raises
    :class:`~jisu.dataset.record.validate.MalformedFileError` naming it. Reads are thread-safe
    (by ``pread``, never through a map: a shard truncated while it is read is an error naming
    it, not a SIGBUS); the reader pickles by path and reopens.

    Args:
        files: one shard (then all shards its header names, which must lie beside it, are read)
            or a list of shards.
        columns: fields to read, in order (default: all, in schema order).

    Raises:
        MalformedFileError: a shard or index is malformed.
        FileNotFoundError: a shard is missing.
        ValueError: ``files`` is empty or names one file twice; an unknown column.
    """

    def __init__(self, files: str | Sequence[str], columns: Sequence[str] | None = None) -> None:
        opened = None
        if isinstance(files, (str, os.PathLike)):
            first = os.path.abspath(os.fspath(files))
            opened = _Shard(first)
            directory = os.path.dirname(first)
            self.paths = [shard_path(directory, n, first) for n in opened.layout.addresses]
            self.listed_in: str | None = first
        else:
            self.paths = [os.path.abspath(os.fspath(p)) for p in files]
            if not self.paths:
                raise ValueError("MindRecordReader: no shard given. Received: files=[]")
            self.listed_in = None
        self._open(opened)
        layout = self._shards[0].layout
        self.blob_fields = list(layout.blob_fields)
        self.all_fields = list(layout.fields)
        self.fields = select_fields(self.all_fields, columns)
        self.columns = [f.name for f in self.fields]

    def _open(self, opened: _Shard | None = None) -> None:
        """Open and check every shard (reusing ``opened``, the shard that named them) and its
        index, and that they form one data set."""
        shards = [
            opened if opened is not None and opened.path == p else _Shard(p, self.listed_in)
            for p in self.paths
        ]
        seen: dict[tuple[int, int], str] = {}
        for shard in shards:
            if shard.identity in seen:
                self._refuse_twice(seen[shard.identity], shard.path)
            seen[shard.identity] = shard.path
            self._check_same_data_set(shard, opened or shards[0], shards[0])
            _check_index(shard)
        self._shards = shards
        self.shard_rows = [len(s) for s in shards]
        self._starts = np.concatenate([[0], np.cumsum(self.shard_rows)]).astype(np.int64)

    def _refuse_twice(self, path: str, again: str) -> None:
        """One file named twice: the header's fault, or the caller's (a list of files)."""
        if self.listed_in is not None:
            raise MalformedFileError(
                self.listed_in, f"its shards '{path}' and '{again}' are one file"
            )
        raise ValueError(
            f"MindRecordReader: '{path}' and '{again}' are one file; name each shard once"
        )

    def _check_same_data_set(self, shard: _Shard, lister: _Shard, first: _Shard) -> None:
        """``shard`` has the schema of ``first`` and, when the shards come from a header,
        names the same shards as ``lister`` (so a reordered or extended list is noticed)."""
        if (shard.layout.schema, shard.layout.blob_fields) != (
            first.layout.schema,
            first.layout.blob_fields,
        ):
            raise MalformedFileError(shard.path, f"has another schema than '{first.path}'")
        if self.listed_in is not None and shard.layout.addresses != lister.layout.addresses:
            raise MalformedFileError(
                shard.path,
                f"names the shards {_show(shard.layout.addresses)}, but '{lister.path}' names "
                f"{_show(lister.layout.addresses)}",
            )

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_shards", "_starts")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._open()

    def __len__(self) -> int:
        return int(self._starts[-1])

    def shard_indices(self, shard: int) -> np.ndarray:
        """The global row indices of shard ``shard``."""
        return np.arange(self._starts[shard], self._starts[shard + 1], dtype=np.int64)

    def __getitem__(self, index: int) -> tuple:
        if not 0 <= index < len(self):
            raise IndexError(f"MindRecord: row {index} out of range [0, {len(self)})")
        k = int(np.searchsorted(self._starts, index, side="right")) - 1
        shard = self._shards[k]
        local = index - int(self._starts[k])
        try:
            return shard.row(local, self.fields)
        except _Corrupt as exc:
            raise MalformedFileError(shard.path, f"{shard.where(local)}: {exc}") from None
