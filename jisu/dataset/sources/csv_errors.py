"""Where a CSV file goes wrong, said briefly: errors naming the file and the line.

:class:`~jisu.dataset.sources.csv.CSVDataset` parses with pyarrow, whose errors name neither
the file nor its line. The helpers here find the line (1-based, as an editor shows it) again,
only when there is an error, by scanning the file with the ``csv`` module, and build the
:class:`~jisu.dataset.record.validate.MalformedFileError` that names it. Values and name lists
quoted in a message are clipped (:data:`MAX_QUOTED_CHARS`) so an error stays a few lines long
whatever the file holds. Kept apart from the parser so that the column conversion
(:mod:`.csv_columns`) and :mod:`.text_file` use the same messages without importing the
dataset class.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from ..record.validate import MalformedFileError

OP = "CSVDataset"
#: Longest quoted value (or list of names) in an error message, in characters.
MAX_QUOTED_CHARS = 200


def _clip(value: Any, limit: int | None = None) -> str:
    """``repr(value)`` (a field, a list of names) cut to ``limit`` characters
    (:data:`MAX_QUOTED_CHARS`), so an error message stays short whatever the file holds."""
    limit = MAX_QUOTED_CHARS if limit is None else limit
    text = repr(value)
    if len(text) <= limit:
        return text
    more = f" ({len(value)} in all)" if isinstance(value, (list, tuple)) else ""
    return f"{text[:limit]}...{more}"


def _clip_text(text: str) -> str:
    """``text`` (a parser's message, which may quote a whole row) cut to a few lines."""
    limit = 2 * MAX_QUOTED_CHARS
    return text if len(text) <= limit else f"{text[:limit]}..."


def _line_of(data: bytes, offset: int) -> int:
    """The line (1-based) holding byte ``offset``; ``\n``, ``\r\n`` and ``\r`` end lines."""
    breaks = data.count(b"\n", 0, offset) + data.count(b"\r", 0, offset)
    return breaks - data.count(b"\r\n", 0, offset) + 1


def _records(data: bytes, delim: str):
    """``(first line, fields)`` of every non-blank record, by the ``csv`` module."""
    text = data.decode("utf-8-sig", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, quotechar='"')
    end = 0
    for fields in reader:
        start, end = end + 1, reader.line_num
        if fields:
            yield start, fields, end


def _bad_utf8_line(data: bytes) -> int | None:
    for number, line in enumerate(data.splitlines(), 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return number
    return None


def _located(path: str, line: int | None, message: str, op: str = OP) -> MalformedFileError:
    """A :class:`MalformedFileError` (a ``ValueError``) naming the op, the file and the line
    (1-based; None: unknown), with ``path``, ``line`` and ``reason`` attributes."""
    reason = message if line is None else f"line {line}: {message}"
    exc = MalformedFileError(path, reason)
    exc.args = (f"{op}: '{path}'{'' if line is None else f' line {line}'}: {message}",)
    exc.line = line  # type: ignore[attr-defined]
    return exc


def _count_error(path: str, data: bytes, delim: str, ncols: int, detail: str) -> MalformedFileError:
    """The first record of ``data`` without ``ncols`` fields, named by its line."""
    total_lines = data.count(b"\n") + (not data.endswith(b"\n"))
    try:
        for start, fields, end in _records(data, delim):
            if len(fields) != ncols:
                message = f"has {len(fields)} field(s), expected {ncols}"
                if end >= total_lines and any("\n" in f or "\r" in f for f in fields):
                    message += " (a quoted field is not closed before the end of the file?)"
                return _located(path, start, message)
    except csv.Error as exc:  # e.g. a NUL byte the csv module refuses
        return _located(path, None, f"malformed CSV ({exc}); {_clip_text(detail)}")
    return _located(path, None, f"malformed CSV: {_clip_text(detail)}")


def _row_line(data: bytes, delim: str, row: int) -> int | None:
    """Line where data record ``row`` (counting the header, if any, as record 0) starts."""
    try:
        for k, (start, _, _) in enumerate(_records(data, delim)):
            if k == row:
                return start
    except csv.Error:
        pass
    return None
