"""Parsing and checking a MindRecord shard's JSON header: schema, page table, row groups.

Everything the reader uses of a shard's header, each field checked for its JSON type and range
(MindSpore's limits) and the page table against the file's size, into one :class:`_Layout`
(see :mod:`~jisu.dataset.record.mindrecord` for the format and the full list of checks). Kept
apart from reading rows so the header, the part of a hostile file that decides where every
read goes, is validated in one place before any row is touched.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .mindrecord_values import _show
from .schema import Field
from .validate import MalformedFileError, shard_path

__all__ = ["BLOB", "MAX_JSON", "MAX_PAGE", "MAX_SHARDS", "RAW", "TYPES", "VERSION", "VERSIONS"]

VERSION = "3.0"  # MindSpore's kVersion, what it writes: int32/int64 arrays compressed
#: the versions MindSpore ever wrote: "2.0" (before MindSpore 0.5) stores integer arrays as
#: plain little-endian values; everything else is laid out as in "3.0"
VERSIONS = ("2.0", VERSION)
MAX_JSON = 1 << 27  # MindSpore's kMaxHeaderSize
MAX_PAGE = 1 << 28  # MindSpore's kMaxPageSize
MAX_SHARDS = 4096  # MindSpore's kMaxFileCount
TYPES = ("int32", "int64", "float32", "float64", "string", "bytes")
RAW, BLOB = "RAW_DATA", "BLOB_DATA"


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
    version: str
    compressed: bool  # integer arrays compressed (version 3.0) or plain (2.0)


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
    if version not in VERSIONS:  # MindSpore 2.10 refuses other versions too
        raise MalformedFileError(
            path,
            f"has MindRecord version {_show(version)}; MindSpore wrote versions "
            f"{' and '.join(VERSIONS)}, which jisu reads",
        )
    schema, fields, blob_fields = _check_fields(path, header)
    header_size, page_size, pages = _check_pages(path, header, json_end, size)
    groups = _check_row_groups_match(path, header_size, page_size, pages)
    addresses = _check_addresses(path, header)
    raw_fields = frozenset(f.name for f in fields) - set(blob_fields)
    return _Layout(
        schema,
        fields,
        blob_fields,
        raw_fields,
        header_size,
        page_size,
        groups,
        addresses,
        version,
        compressed=version != "2.0",
    )
