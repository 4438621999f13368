"""CSVDataset: rows of comma-separated-values files, parsed once into in-memory columns.

The files are parsed with ``pyarrow.csv`` (about 14x faster than the ``csv`` module on 100k
rows of 5 numeric columns) into one array per column: NumPy ``int32``/``float32`` arrays for
numeric columns and, for string columns, the UTF-8 bytes and offsets of Arrow's layout (so
memory stays linear in the file size however long one field is). Rows are then random access.
Errors name the file and the line (1-based, as an editor shows it); to find that line the
file is scanned again with the ``csv`` module, only when there is an error.

Hostile files are bounded before pyarrow sees them: a file whose first record has more than
:data:`MAX_COLUMNS` fields is refused (each column costs a parsed array and per-row work: a
single line of 256 KiB of commas would otherwise take seconds and over a gigabyte), and a
quoted field left open at the end of the file (which pyarrow, like the ``csv`` module in its
default mode, silently reads as one field holding the rest of the file) is an error naming
the line where the quote opened. Values and name lists quoted in error messages are clipped
(:data:`MAX_QUOTED_CHARS`), so an error stays a few lines long whatever the file holds.

The parts: this module lists and reads the files, bounds hostile ones, parses them and holds
the dataset class (and :data:`MAX_COLUMNS`, read here at each parse); :mod:`.csv_columns`
converts the parsed fields to the columns' types; :mod:`.csv_errors` builds the errors that
name a file's line. Their names stay importable from here.
"""

from __future__ import annotations

import glob
import os
import stat
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..engine.context import ExecContext
from .csv_columns import _column_kinds, _CSVRows, _numeric_column, _string_column
from .csv_errors import MAX_QUOTED_CHARS as MAX_QUOTED_CHARS  # re-exported: defined here before
from .csv_errors import (
    OP,
    _bad_utf8_line,
    _clip,
    _count_error,
    _line_of,
    _located,
    _records,
    _row_line,
)
from .file_order import file_rows_order
from .generator import Source
from .options import ReadOptions, Shuffle, check_cache

#: Most columns a CSV file (its first record) or ``column_names`` may have. A row is a tuple of
#: one array per column, so 16,384 columns already cost about a second and 100 MB to build;
#: raise it (``jisu.dataset.sources.csv.MAX_COLUMNS = ...``) for wider files.
MAX_COLUMNS = 16_384
_QUOTE_SCAN_CHUNK = 4 << 20  # bytes scanned at a time for unclosed quotes (bounded temporaries)
_BOM = b"\xef\xbb\xbf"


def find_dataset_files(op: str, dataset_files: Any) -> list[str]:
    """MindSpore's file list: a path or glob pattern, or a list of them; each must match at least
    one regular file; the matches are sorted (lexicographically, duplicates kept)."""
    if isinstance(dataset_files, (str, os.PathLike)):
        patterns = [dataset_files]
    elif isinstance(dataset_files, (list, tuple)):
        patterns = list(dataset_files)
    else:
        raise TypeError(
            f"{op}: dataset_files must be a path, a glob pattern or a list of them. "
            f"Received: dataset_files={dataset_files!r}"
        )
    if not patterns:
        raise ValueError(f"{op}: dataset_files must not be empty. Received: dataset_files=[]")
    files: list[str] = []
    unmatched = []
    for pattern in patterns:
        if not isinstance(pattern, (str, os.PathLike)):
            raise TypeError(
                f"{op}: dataset_files must hold paths (str). Received: {pattern!r} in "
                f"dataset_files={dataset_files!r}"
            )
        pattern = os.fspath(pattern)
        if os.path.isfile(pattern):  # a literal name, even one with glob characters ([, *)
            matches = [pattern]
        else:
            matches = [m for m in glob.glob(pattern, recursive=True) if os.path.isfile(m)]
        if matches:
            files.extend(matches)
        else:
            unmatched.append(pattern)
    if unmatched:
        raise ValueError(
            f"{op}: dataset_files: these paths or patterns match no regular file: {unmatched}"
        )
    return sorted(files)


def read_regular_file(op: str, path: str) -> bytes:
    """The bytes of ``path``, checked to be a regular file once opened (not a FIFO, a device or
    a folder swapped in after the listing)."""
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError(f"{op}: '{path}' is not a regular file")
        return f.read()


# ----------------------------------------------------------------- bounds on hostile files
def unclosed_quote(data: bytes, delim: str) -> int | None:
    """Offset of the quote that opens a field never closed before the end of ``data``, or None.

    pyarrow's parser (as ours is configured) reads a quote as opening a quoted field only at
    the start of a field (after a delimiter, a line end, the start of the file or its byte
    order mark); inside one, ``""`` is a quote and a lone ``"`` closes it; other quotes are
    plain characters. A file ending inside a quoted field is read, without an error, as one
    last field holding the rest of the file. The scan works on runs of adjacent quotes:
    a run of even length changes nothing; one of odd length toggles the state when it starts
    a field and otherwise leaves it outside quotes. So the state at the end is found with a few
    vectorised passes over :data:`_QUOTE_SCAN_CHUNK`-byte chunks, never a Python loop per quote.
    """
    if data.find(b'"') < 0:
        return None
    arr = np.frombuffer(data, dtype=np.uint8)
    n = len(arr)
    bom = 3 if data.startswith(_BOM) else -1
    separator = ord(delim)
    inside, opened = False, -1
    start = 0
    while start < n:
        end = min(n, start + _QUOTE_SCAN_CHUNK)
        while end < n and arr[end - 1] == 0x22:  # never split a run of quotes
            end += 1
        chunk = arr[start:end] == 0x22
        if chunk.any():
            steps = np.diff(chunk.view(np.int8), prepend=np.int8(0), append=np.int8(0))
            begins = np.flatnonzero(steps == 1)
            lengths = np.flatnonzero(steps == -1) - begins
            begins = begins[(lengths & 1) == 1] + start  # even runs change nothing
            if len(begins):
                before = arr[np.maximum(begins - 1, 0)]
                at_field_start = (
                    (begins == 0)
                    | (begins == bom)
                    | (before == separator)
                    | (before == 0x0A)
                    | (before == 0x0D)
                )
                resets = np.flatnonzero(~at_field_start)  # these leave the state "outside"
                toggles = at_field_start[resets[-1] + 1 :] if len(resets) else at_field_start
                flips = int(np.count_nonzero(toggles))
                if len(resets):
                    inside = False
                inside ^= bool(flips & 1)
                if inside and flips:  # the last toggle opened the field
                    opened = int(begins[np.flatnonzero(at_field_start)[-1]])
        start = end
    return opened if inside else None


def _first_record_width(data: bytes, delim: str, limit: int) -> int:
    """The number of fields of the first non-blank record of ``data``, counted up to
    ``limit + 1`` at most (so the count costs at most ``limit`` steps, whatever the file)."""
    n = len(data)
    sep = delim.encode("ascii")
    pos = 3 if data.startswith(_BOM) else 0
    while pos < n and data[pos] in b"\r\n":  # blank lines are skipped
        pos += 1
    fields = 1
    line_end = -1  # the first line break at or after pos, found again after a quoted part
    while fields <= limit:
        if data.startswith(b'"', pos):  # a quoted part: skip to its closing quote
            pos += 1
            while True:
                close = data.find(b'"', pos)
                if close < 0:
                    return fields  # never closed: unclosed_quote names it
                pos = close + 1
                if not data.startswith(b'"', pos):
                    break
                pos += 1
            line_end = -1
        if line_end < pos:
            ends = [k for k in (data.find(b"\n", pos), data.find(b"\r", pos)) if k >= 0]
            line_end = min(ends) if ends else n
        next_sep = data.find(sep, pos, line_end)
        if next_sep < 0:
            return fields
        fields += 1
        pos = next_sep + 1
    return fields


def _check_bounds(path: str, data: bytes, delim: str) -> None:
    """Refuse, before pyarrow parses ``data``, a quoted field that is never closed and a first
    record wider than :data:`MAX_COLUMNS`."""
    opened = unclosed_quote(data, delim)
    if opened is not None:
        raise _located(
            path,
            _line_of(data, opened),
            "a quoted field opens here and is not closed before the end of the file (it "
            'would swallow every line after it); close the quote or escape it as ""',
        )
    width = _first_record_width(data, delim, MAX_COLUMNS)
    if width > MAX_COLUMNS:
        raise _located(
            path,
            None,
            f"the first record has more than {MAX_COLUMNS} fields (CSVDataset's limit, "
            "jisu.dataset.sources.csv.MAX_COLUMNS; is field_delim right?)",
        )


# ----------------------------------------------------------------- parsing
def _parse_file(path: str, data: bytes, delim: str, columns: int | None) -> list:
    """Every record of one file as a list of Arrow string arrays (one per field)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    if not data.strip(b"\r\n\xef\xbb\xbf"):
        return []  # no record (pyarrow refuses an empty file)
    _check_bounds(path, data, delim)
    parse = pacsv.ParseOptions(
        delimiter=delim,
        quote_char='"',
        double_quote=True,
        escape_char=False,
        newlines_in_values=True,
        ignore_empty_lines=True,
    )
    width = columns or 64
    while True:
        read = pacsv.ReadOptions(
            autogenerate_column_names=True,
            block_size=min(max(len(data) + 1, 1 << 20), (1 << 31) - 1),
        )
        convert = pacsv.ConvertOptions(
            column_types={f"f{i}": pa.string() for i in range(width)},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
            auto_dict_encode=False,
            check_utf8=True,
        )
        try:
            table = pacsv.read_csv(pa.py_buffer(data), read, parse, convert)
        except pa.ArrowInvalid as exc:
            message = str(exc)
            if "UTF8" in message or "utf8" in message.lower():
                raise _located(path, _bad_utf8_line(data), "not valid UTF-8") from None
            first = next(_records(data, delim), None)
            expected = columns or (len(first[1]) if first else 1)
            raise _count_error(path, data, delim, expected, message) from None
        if all(pa.types.is_string(t) for t in table.schema.types):
            break
        width = table.num_columns  # more columns than column_types named: again, all strings
    if columns is not None and table.num_columns != columns:
        raise _count_error(path, data, delim, columns, "wrong number of fields")
    return [c.combine_chunks() for c in table.columns]


def parse_csv_files(
    files: list[str], delim: str, column_defaults: Any, column_names: Sequence[str] | None
) -> tuple[list[str], list[str], _CSVRows]:
    """(column names, column kinds, rows) of ``files``."""
    kinds = _column_kinds(column_defaults)
    header: list[str] | None = None
    header_file = None
    per_file = []  # (path, data, first data record, arrays)
    ncols = len(column_names) if column_names is not None else None
    for path in files:
        data = read_regular_file(OP, path)
        arrays = _parse_file(path, data, delim, ncols)
        first = 0
        if column_names is None:
            if not arrays:
                raise _located(path, None, "has no header line (column_names is None)")
            names = [a[0].as_py() for a in arrays]
            if header is None:
                header, header_file, ncols = names, path, len(names)
                empty = [i for i, n in enumerate(names) if not n.strip()]
                if empty:
                    raise _located(path, 1, f"the header has an empty column name: {_clip(names)}")
                if len(set(names)) != len(names):
                    raise _located(
                        path, 1, f"the header has duplicate column names: {_clip(names)}"
                    )
            elif names != header:
                raise _located(
                    path,
                    _row_line(data, delim, 0),
                    f"the header {_clip(names)} differs from the header {_clip(header)} of "
                    f"'{header_file}'",
                )
            arrays = [a.slice(1) for a in arrays]
            first = 1
        per_file.append((path, data, first, arrays))
    names = list(column_names) if column_names is not None else list(header or [])
    if len(kinds) > len(names):
        raise ValueError(
            f"{OP}: column_defaults has {len(kinds)} entries for {len(names)} columns "
            f"{_clip(names)}. Received: column_defaults={_clip(column_defaults)}"
        )
    kinds += [("str", "")] * (len(names) - len(kinds))
    rows = [len(a[0]) if a else 0 for _, _, _, a in per_file]
    if sum(rows) == 0:
        raise ValueError(f"{OP}: the files hold no rows: {_clip(files)}")
    columns = []
    for c, (kind, default) in enumerate(kinds):
        arrays = [a[c] for _, _, _, a in per_file if a]
        where = [(p, d, f, delim) for p, d, f, a in per_file if a]
        if kind == "str":
            columns.append(_string_column(arrays))
        else:
            columns.append(_numeric_column(kind, default, arrays, where, names[c]))
    return names, [k for k, _ in kinds], _CSVRows(columns, files, rows)


class CSVDataset(Source):
    """Rows of CSV files (``mindspore.dataset.CSVDataset``).

    Args:
        dataset_files: a path or glob pattern, or a list of them; the matching files are read
            in sorted order.
        field_delim: the one-character field delimiter (not ``"``, ``\\r`` or ``\\n``);
            None: ``","``, as in MindSpore.
        column_defaults: one value per column (the first ones; the rest are strings) giving
            its type: an ``int`` gives ``int32``, a ``float`` ``float32``, a ``str`` a string
            column (default: all strings). An empty numeric field takes this value.
        column_names: names of the columns; then every line is data. None (default): the first
            line of each file is a header (all files' headers must be equal).
        num_samples, num_parallel_workers: as in :class:`GeneratorDataset`.
        num_shards, shard_id: MindSpore's rule for these files: shard ``k`` reads the
            contiguous block of ``ceil(n / num_shards)`` rows from row ``k * ceil(n /
            num_shards)`` of the files laid end to end, wrapping around to the first rows
            (see :mod:`jisu.dataset.sources.file_order`); ``num_samples`` keeps the block's
            first rows.
        shuffle: ``Shuffle.GLOBAL`` / True (default: the files in a new order each epoch, the
            shard's block taken from them, then its rows in a new order), ``Shuffle.FILES``
            (the same blocks, rows in file order), ``Shuffle.INFILE`` (the rows of
            ``shuffle=False``, shuffled within each file; MindSpore ignores this level) or
            False.
        cache: not supported (must be None).

    Fields are parsed as RFC 4180 (``"`` quotes, ``""`` inside quotes, quoted line breaks);
    blank lines are skipped; ``\\n``, ``\\r\\n`` and ``\\r`` end lines; a UTF-8 byte order mark
    is dropped. Every row is a tuple of 0-d arrays (``int32``, ``float32`` or ``numpy.str_``).

    Limits: at most :data:`MAX_COLUMNS` (16,384) columns; a quoted field must be closed
    before the end of its file (an open quote would otherwise swallow every line after it,
    silently: pyarrow and the ``csv`` module's default mode both read it as one field).

    Raises:
        ValueError, TypeError: bad arguments, naming the argument.
        ValueError: when the files are parsed (here, before any row is read): a file that is
            not valid CSV, a line with the wrong number of fields, a quoted field never closed
            (naming the line where it opens), more than :data:`MAX_COLUMNS` fields, a field
            that does not parse as its column's type, invalid UTF-8, headers that differ, no
            rows at all; the error (a :class:`MalformedFileError` for a file's content) names
            the file and the line, and quotes at most :data:`MAX_QUOTED_CHARS` characters of
            a value.
    """

    default_workers = None  # config's default
    serial_reads = False  # the rows are in memory
    reads_can_fail = False
    file_shuffle = True
    builds_indexed_source = True

    def __init__(
        self,
        dataset_files: Any,
        field_delim: str | None = ",",
        column_defaults: Sequence[Any] | None = None,
        column_names: Sequence[str] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | Shuffle | None = Shuffle.GLOBAL,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
    ) -> None:
        check_cache(OP, cache)
        if field_delim is None:  # MindSpore 2.10 reads None as its default, ','
            field_delim = ","
        if not isinstance(field_delim, str):
            raise TypeError(
                f"{OP}: field_delim must be a str of one character. "
                f"Received: field_delim={field_delim!r}"
            )
        if len(field_delim) != 1 or field_delim in '"\r\n' or not field_delim.isascii():
            raise ValueError(
                f"{OP}: field_delim must be a single ASCII character other than '\"', '\\r' "
                f"and '\\n' (pyarrow's parser reads one-byte delimiters). "
                f"Received: field_delim={field_delim!r}"
            )
        if column_names is not None:
            if not isinstance(column_names, (list, tuple)) or not all(
                isinstance(c, str) for c in column_names
            ):
                raise TypeError(
                    f"{OP}: column_names must be a list of str. "
                    f"Received: column_names={_clip(column_names)}"
                )
            if not column_names:
                raise ValueError(
                    f"{OP}: column_names must not be empty (None reads the names from the "
                    "header line). Received: column_names=[]"
                )
            if len(column_names) > MAX_COLUMNS:
                raise ValueError(
                    f"{OP}: column_names has {len(column_names)} names; at most {MAX_COLUMNS} "
                    "columns are read (jisu.dataset.sources.csv.MAX_COLUMNS)"
                )
        _column_kinds(column_defaults)  # argument errors before any file is read
        self.dataset_files = find_dataset_files(OP, dataset_files)
        names, kinds, rows = parse_csv_files(
            self.dataset_files, field_delim, column_defaults, column_names
        )
        self.column_kinds = kinds
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, None, num_shards, shard_id
        )
        super().__init__(rows, names, options)

    def _order(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return file_rows_order(self.order, n, rng, self.source.file_starts)

    def _sample_name(self, index: int) -> str:
        path, row = self.source.where(index)
        return f"source[{index}] ('{path}' data row {row})"

    def _read(self, ctx: ExecContext, index: int) -> tuple:
        return self.source[index]  # checked 0-d arrays already
