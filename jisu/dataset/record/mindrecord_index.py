"""Reading a MindRecord shard's SQLite ``.db`` index as data, never as code.

A ``.db`` file is a whole SQL database: besides tables it can hold views (a query run when the
view is read, such as an endless recursive one), triggers, virtual tables (code of a module,
such as full-text search, behind a table's name) and generated columns (an expression computed
on every read). The reader needs one number from it (how many rows it lists), so it reads it as
data only:

- the file must be a regular file (a FIFO cannot hang the open), opened read-only and
  ``immutable`` (SQLite takes no lock and reads no ``-journal``/``-wal`` file that may lie
  beside it), with ``trusted_schema`` off, no attached databases and values of at most
  :data:`MAX_VALUE` bytes;
- before any query, its schema (``sqlite_master``) may hold only tables and their indexes,
  each stored in the file (no view, trigger or virtual table), and ``INDEXES`` must be such a
  table without generated columns;
- the one query (``SELECT COUNT(DISTINCT ROW_ID) FROM INDEXES``) runs under a progress handler
  that stops it after :data:`STEPS_PER_BYTE` SQLite instructions per byte of the file (plus
  :data:`BASE_STEPS`): more than 7 times what counting a table of that size takes (measured:
  at most 0.6 per byte), so the work, the time and the temporary storage (kept in memory,
  ``temp_store=MEMORY``) are bounded by the file's size.

Whatever is refused or fails is a :class:`~jisu.dataset.record.validate.MalformedFileError`
naming the index and what is wrong.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

from .validate import MalformedFileError, open_regular

MAX_VALUE = 1 << 20  # bytes: SQLite's length limit for any one value read (ROW_ID is a number)
BASE_STEPS = 10_000_000  # SQLite instructions any index may take (~0.3 s)
STEPS_PER_BYTE = 4  # and per byte of the file
_EVERY = 1000  # instructions between two calls of the progress handler
_QUERY = "SELECT COUNT(DISTINCT ROW_ID) FROM INDEXES"


def count_index_rows(db: str, shard: str) -> int:
    """How many distinct rows the index ``db`` of the shard ``shard`` lists, read as data.

    Raises:
        MalformedFileError: naming ``db``: not a regular file, not a database SQLite reads,
            a schema with anything but tables and their indexes, or a count that takes more
            work than an index of its size can.
    """
    fd = open_regular(db, shard)
    try:
        size = os.fstat(fd).st_size
        # SQLite opens by name: give it the checked descriptor's name where the system has
        # one, so the file checked is the file read (no window to swap it in between)
        by_fd = f"/proc/self/fd/{fd}"
        name = by_fd if os.path.exists(by_fd) else db
        uri = Path(name).as_uri() + "?mode=ro&immutable=1"
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            return _count(conn, db, size)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # a damaged name SQLite decodes
        raise MalformedFileError(db, f"is not a readable MindRecord index ({exc})") from None
    finally:
        os.close(fd)


def _count(conn: sqlite3.Connection, db: str, size: int) -> int:
    """The row count, after the schema check, under the work budget."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    budget = (BASE_STEPS + STEPS_PER_BYTE * size) // _EVERY
    calls = 0

    def progress() -> int:
        nonlocal calls
        calls += 1
        return calls > budget  # true: SQLite stops the statement ("interrupted")

    conn.set_progress_handler(progress, _EVERY)
    try:
        for pragma in ("trusted_schema = OFF", "temp_store = MEMORY", "query_only = ON"):
            conn.execute(f"PRAGMA {pragma}")
        _check_schema(conn, db)
        (count,) = conn.execute(_QUERY).fetchone()
    except sqlite3.OperationalError:
        if calls > budget:
            raise MalformedFileError(
                db,
                f"takes more work to count its rows than an index of {size} bytes can "
                f"(stopped after {calls * _EVERY} SQLite instructions): refused",
            ) from None
        raise
    if not isinstance(count, int):
        raise MalformedFileError(db, f"counts {count!r} rows, not a number")
    return count


def _check_schema(conn: sqlite3.Connection, db: str) -> None:
    """Only tables and indexes stored in the file (a root page), ``INDEXES`` a table of
    stored columns: anything that runs when read is refused before the query."""
    entries = conn.execute("SELECT type, name, rootpage FROM sqlite_master").fetchall()
    for kind, name, root in entries:
        if kind == "table" and not root:
            raise MalformedFileError(
                db, f"holds the virtual table {name!r}: a MindRecord index holds tables only"
            )
        if kind not in ("table", "index") or not root:
            raise MalformedFileError(
                db, f"holds the {kind} {name!r}: a MindRecord index holds tables only"
            )
    tables = {name.lower() for kind, name, _ in entries if kind == "table"}
    if "indexes" not in tables:
        raise MalformedFileError(db, "has no INDEXES table: not a MindRecord index")
    # table_xinfo's "hidden": 2 and 3 are generated columns, an expression run on every read
    generated = [row[1] for row in conn.execute("PRAGMA table_xinfo(INDEXES)") if row[6] in (2, 3)]
    if generated:
        raise MalformedFileError(
            db, f"INDEXES has generated columns {generated}: a MindRecord index stores values"
        )
