"""Reading MindSpore's MindRecord files without MindSpore, treating every file as hostile.

**Format** (version "3.0", what MindSpore writes since 0.5; version "2.0", what it wrote
before, differs only in storing int32/int64 arrays as plain little-endian values and in having
no ``compression_size`` header field; MindSpore 2.10 reads both). A shard is an 8-byte
little-endian JSON length, a JSON header, zero padding to ``header_size``, then pages of at most
``page_size`` bytes at ``header_size + page_id * page_size``. The header's ``page`` table lists
the pages in ``page_id`` order (``null`` for a shard without rows, whose file then ends at the
JSON). BLOB_DATA pages, numbered ``page_type_id`` 0, 1, ..., hold the rows ``start_row_id`` to
``end_row_id`` (the next page starts where the last ended), each an 8-byte little-endian length
and the blob fields (bytes and arrays) in ``blob_fields`` order, each behind an 8-byte big-endian
length when there is more than one. Blob page ``g`` is row group ``g``; the row group's scalar
fields lie in a RAW_DATA page, from the ``offset`` its ``row_group_ids`` entry gives to the next
entry's (or the page's end), each row an 8-byte little-endian length and a msgpack map. In
version 3.0, int32 and int64 arrays are compressed: a 4-byte big-endian count, one 2-bit width
code per value (MSB first: 1, 2, 4 or 8 bytes) and the values, little-endian and signed. Rows
are read in page order, shard after shard: MindSpore's unshuffled order. The SQLite ``.db``
index beside a shard is not needed; when present, its row count is cross-checked.

**What is checked.** When a shard is opened: it is a regular file (a FIFO cannot hang it); every
header field the reader uses has the right JSON type and range (MindSpore's limits: JSON at most 128
MiB, pages at most 256 MiB, 4096 shards at most; version "2.0" or "3.0", the two MindSpore wrote and
the two MindSpore 2.10 reads); the schema has MindRecord's six types and valid shapes, and its blob
fields are exactly its bytes and array fields; the page table lists pages 0, 1, ... in order, blob
pages number 0, 1, ... with contiguous row ranges from 0, the raw pages list row groups 0, 1, ...
(one per blob page) at offsets rising from 0 inside them; the file ends exactly where its last page
does (a truncated file, appended bytes or a page table that lost entries are refused); every row's
8-byte length fits in its page or row group, and the rows found fill each exactly, as many as the
blob page declares; the ``.db`` index, when present, is a regular file SQLite reads (read-only) as
data only (tables and their indexes: a view, trigger, virtual table or generated column is refused
before any query; the count's work is bounded by the file's size, see
:mod:`~jisu.dataset.record.mindrecord_index`) and lists as many rows. Shard addresses are plain
file names looked for beside the shard that names them
(MindSpore writes base names and reads ``dirname(shard) + name``; jisu never follows a name with a
separator, ``..`` or an absolute path), 1 to 4096 of them, distinct, naming distinct files (no hard
link read twice), and every shard names the same list. When a row is read: its msgpack map decodes
and holds exactly the schema's scalar fields, each of the schema's type and range; its blob fields'
lengths fit the row exactly; a compressed array's count fits its bytes *before* anything is
allocated (each value takes 1 byte and 2 bits at least) and its widths add up to them exactly; a
plain (2.0) array's bytes are a whole number of values; the values fit the field's shape. All shards
of a data set have one schema and one version. Every failure is one
:class:`~jisu.dataset.record.validate.MalformedFileError` naming the file and what is wrong (for a
row: its number and pages); a missing shard is a ``FileNotFoundError``.

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

The code is split by layer: :mod:`~jisu.dataset.record.mindrecord_values` decodes a row's
values, :mod:`~jisu.dataset.record.mindrecord_header` checks a shard's header and page table,
:mod:`~jisu.dataset.record.mindrecord_shard` opens one shard and finds its rows; this module
combines shards into one reader.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from .mindrecord_header import BLOB, MAX_JSON, MAX_PAGE, MAX_SHARDS, RAW, TYPES, VERSION, VERSIONS
from .mindrecord_shard import _check_index, _Shard
from .mindrecord_values import _Corrupt, _show, decode_ints
from .schema import select_fields
from .validate import MalformedFileError, open_regular, shard_path

__all__ = [
    "BLOB",
    "MAX_JSON",
    "MAX_PAGE",
    "MAX_SHARDS",
    "RAW",
    "TYPES",
    "VERSION",
    "VERSIONS",
    "MindRecordReader",
    "decode_ints",
    "is_mindrecord",
]


def is_mindrecord(path: str) -> bool:
    """Whether ``path`` is a regular file that starts like a MindRecord shard (never blocks)."""
    try:
        fd = open_regular(path)
    except (OSError, MalformedFileError):
        return False
    with os.fdopen(fd, "rb") as f:
        head = f.read(24)
    return len(head) == 24 and head[8:23] == b'{"header_size":'


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
        columns: fields to read, in order (default: all, in the header's order, which MindSpore
            writes sorted; :class:`~.schema.ColumnOrder` for another).

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
        """``shard`` has the schema and version of ``first`` (MindSpore refuses shards whose
        headers differ) and, when the shards come from a header, names the same shards as
        ``lister`` (so a reordered or extended list is noticed)."""
        if shard.layout.version != first.layout.version:
            raise MalformedFileError(
                shard.path,
                f"has MindRecord version {shard.layout.version}, but '{first.path}' has "
                f"{first.layout.version}",
            )
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

    @property
    def local_row_bytes(self) -> float:
        """Bytes per row on average, read from local files (``RecordDataset.work_holds_gil``)."""
        return sum(os.path.getsize(p) for p in self.paths) / max(1, len(self))

    @property
    def class_indexing(self) -> dict[str, int]:
        """``{}``: a MindRecord header records no class names."""
        return {}

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
