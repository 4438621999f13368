"""A MindRecord ``.db`` index is read as data, never as code (issue 47, item 1): views (an
endless recursive query), triggers, virtual tables and generated columns are refused before any
query, the count's work is bounded by the file's size, and a fuzzer of random schemas, rows and
byte damage gets the rows right or one MalformedFileError, never a hang or another exception."""

from __future__ import annotations

import functools
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from jisu.cli import main
from jisu.dataset.record import mindrecord_index
from jisu.dataset.record.mindrecord import MindRecordReader
from jisu.dataset.record.validate import MalformedFileError

from .mindrecord_files import FIXTURES, copy_set, snapshot

ROWS = 12  # all_types has 12 rows
TABLE = "CREATE TABLE INDEXES(ROW_ID INT NOT NULL, PAGE_ID_RAW INT, INC_0 INT, id_0 INTEGER)"
RECURSIVE_VIEW = (
    "CREATE VIEW INDEXES AS WITH RECURSIVE r(ROW_ID) AS "
    "(SELECT 0 UNION ALL SELECT ROW_ID + 1 FROM r) SELECT ROW_ID FROM r"
)


@functools.cache
def baseline() -> list[tuple]:
    return snapshot(MindRecordReader(str(FIXTURES / "all_types.mindrecord")))


def with_index(directory: Path, *statements: str, rows: int = ROWS) -> Path:
    """A copy of all_types whose ``.db`` is made by ``statements`` (after which ``rows``
    rows 0, 1, ... are put in INDEXES when it is a table with ROW_ID)."""
    (shard,) = copy_set(directory, "all_types")
    db = Path(f"{shard}.db")
    db.unlink()
    with closing(sqlite3.connect(db)) as conn:
        for statement in statements:
            conn.execute(statement)
        if rows:
            conn.executemany("INSERT INTO INDEXES (ROW_ID) VALUES (?)", ((i,) for i in range(rows)))
        conn.commit()
    return shard


def read_quickly(shard: Path, seconds: float = 5.0) -> list[tuple]:
    start = time.monotonic()
    try:
        return snapshot(MindRecordReader(str(shard)))
    finally:
        assert time.monotonic() - start < seconds, "the index took too long to refuse"


def test_a_table_index_reads(tmp_path):
    assert read_quickly(with_index(tmp_path, TABLE)) == baseline()


def test_a_view_over_an_endless_recursive_query_is_refused_quickly(tmp_path):
    shard = with_index(tmp_path, RECURSIVE_VIEW, rows=0)
    # in a child, so that a reader that runs the view is killed (it fills a temporary file)
    code = (
        "import sys\n"
        "from jisu.dataset.record.mindrecord import MindRecordReader\n"
        "from jisu.dataset.record.validate import MalformedFileError\n"
        "try:\n"
        "    MindRecordReader(sys.argv[1])\n"
        "except MalformedFileError as exc:\n"
        "    print(exc)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(shard)], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the reader ran the index's endless view")
    assert done.returncode == 0, done.stderr
    assert f"'{shard}.db': holds the view 'INDEXES'" in done.stdout
    with pytest.raises(MalformedFileError, match=r"holds the view 'INDEXES': a MindRecord index"):
        read_quickly(shard)


def test_jisu_convert_of_a_mindrecord_with_a_recursive_view_fails_at_once(tmp_path, capsys):
    shard = with_index(tmp_path, RECURSIVE_VIEW, rows=0)
    (tmp_path / "out").mkdir()
    start = time.monotonic()
    assert main(["convert", str(shard), str(tmp_path / "out" / "data")]) == 1
    assert time.monotonic() - start < 10
    assert f"'{shard}.db': holds the view 'INDEXES'" in capsys.readouterr().err
    assert os.listdir(tmp_path / "out") == []


@pytest.mark.parametrize(
    ("statements", "rows", "message"),
    [
        (
            [TABLE, "CREATE TRIGGER t AFTER INSERT ON INDEXES BEGIN SELECT 1; END"],
            ROWS,
            r"holds the trigger 't'",
        ),
        ([TABLE, "CREATE VIEW v AS SELECT * FROM INDEXES"], ROWS, r"holds the view 'v'"),
        (
            ["CREATE VIRTUAL TABLE INDEXES USING fts5(ROW_ID)"],
            ROWS,
            r"holds the virtual table 'INDEXES'",
        ),
        (
            [TABLE, "CREATE VIRTUAL TABLE other USING fts4(x)"],
            ROWS,
            r"holds the virtual table 'other'",
        ),
        (
            [
                "CREATE TABLE INDEXES(n INT, ROW_ID INT GENERATED ALWAYS AS "
                "(length(hex(zeroblob(n)))) VIRTUAL)"
            ],
            0,
            r"INDEXES has generated columns \['ROW_ID'\]",
        ),
        (["CREATE TABLE other(ROW_ID INT)"], 0, r"has no INDEXES table"),
        (
            ["CREATE TABLE INDEXES(x INT)"],
            0,
            r"is not a readable MindRecord index \(no such column",
        ),
    ],
)
def test_an_index_that_is_code_not_data_is_refused(tmp_path, statements, rows, message):
    if "fts" in " ".join(statements):
        with closing(sqlite3.connect(":memory:")) as conn:
            try:
                conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
                conn.execute("CREATE VIRTUAL TABLE probe4 USING fts4(x)")
            except sqlite3.OperationalError:
                pytest.skip("this SQLite has no full-text search")
    shard = with_index(tmp_path, *statements, rows=rows)
    with pytest.raises(MalformedFileError, match=message) as info:
        read_quickly(shard)
    assert info.value.path == f"{shard}.db"


def test_a_huge_declared_size_is_refused_or_ignored_quickly(tmp_path):
    shard = with_index(tmp_path, TABLE)
    db = Path(f"{shard}.db")

    def rows_or_error() -> list[tuple] | MalformedFileError:
        try:
            return read_quickly(shard)
        except MalformedFileError as exc:
            assert exc.path == str(db)
            return exc

    data = bytearray(db.read_bytes())
    data[28:32] = (0x7FFFFFFF).to_bytes(4, "big")  # the header's page count
    db.write_bytes(bytes(data))
    result = rows_or_error()
    assert isinstance(result, MalformedFileError) or result == baseline()
    with open(db, "r+b") as f:  # a sparse 60 GiB index: costs no disk
        f.truncate(60 << 30)
    result = rows_or_error()
    assert isinstance(result, MalformedFileError) or result == baseline()


def test_ids_beyond_the_shard_are_a_count_mismatch(tmp_path):
    shard = with_index(tmp_path, TABLE, rows=0)
    with closing(sqlite3.connect(f"{shard}.db")) as conn:
        conn.executemany(
            "INSERT INTO INDEXES (ROW_ID) VALUES (?)", [(2**63 - 1 - i,) for i in range(ROWS + 1)]
        )
        conn.commit()
    with pytest.raises(MalformedFileError, match=r"has 12 rows but its index .* lists 13"):
        read_quickly(shard)


def test_the_count_stops_after_its_work_budget(tmp_path, monkeypatch):
    shard = with_index(tmp_path, TABLE, rows=0)
    with closing(sqlite3.connect(f"{shard}.db")) as conn:
        conn.executemany(
            "INSERT INTO INDEXES (ROW_ID) VALUES (?)", ((i % 12,) for i in range(50000))
        )
        conn.commit()
    assert read_quickly(shard) == baseline()
    monkeypatch.setattr(mindrecord_index, "BASE_STEPS", 0)
    monkeypatch.setattr(mindrecord_index, "STEPS_PER_BYTE", 0.05)
    with pytest.raises(MalformedFileError, match=r"takes more work to count its rows than"):
        read_quickly(shard)


def test_a_journal_beside_the_index_is_not_read(tmp_path):
    shard = with_index(tmp_path, TABLE)
    # a hot journal SQLite would replay (or fail on) if it looked for one
    Path(f"{shard}.db-journal").write_bytes(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + bytes(4088))
    Path(f"{shard}.db-wal").write_bytes(b"garbage" * 100)
    assert read_quickly(shard) == baseline()


# ---- the fuzzer: random schemas, objects and rows, then random byte damage ----

COLUMN_TYPES = ["INT", "INTEGER", "TEXT", "REAL", "BLOB", ""]
EXTRAS = {
    "view": "CREATE VIEW v AS SELECT 1",
    "recursive view": RECURSIVE_VIEW.replace("VIEW INDEXES", "VIEW v2"),
    "trigger": "CREATE TRIGGER t AFTER INSERT ON other BEGIN SELECT 1; END",
    "virtual": "CREATE VIRTUAL TABLE vt USING rtree(id, a, b)",
    "index": "CREATE INDEX i ON INDEXES (ROW_ID)",
    "table": "CREATE TABLE other(x)",
}
ROW_IDS = st.one_of(
    st.integers(0, ROWS + 1), st.none(), st.sampled_from([-1, 2**63 - 1, "3", 1.5, b"\x00"])
)


@st.composite
def index_files(draw: st.DrawFn) -> tuple[list[str], list[tuple], list[tuple[int, int]]]:
    """Statements, rows (ROW_ID first) and byte flips of a random index."""
    has_row_id = draw(st.integers(0, 9)) > 0
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3, unique=True))
    columns = [f"{n} {draw(st.sampled_from(COLUMN_TYPES))}" for n in names]
    if has_row_id:
        columns.insert(0, f"ROW_ID {draw(st.sampled_from(COLUMN_TYPES))}")
    key = draw(st.sampled_from(["", "rowid", "without"])) if has_row_id else ""
    if key:
        columns.append("PRIMARY KEY(ROW_ID)")
    suffix = " WITHOUT ROWID" if key == "without" else ""
    statements = [f"CREATE TABLE INDEXES({', '.join(columns)}){suffix}"]
    extras = draw(st.lists(st.sampled_from(sorted(EXTRAS)), max_size=2, unique=True))
    if "trigger" in extras and "table" not in extras:
        extras.append("table")
    statements += [EXTRAS[e] for e in sorted(extras, key=lambda e: e != "table")]
    if draw(st.booleans()):  # the shard's ids, in any order (repeated without a key)
        ids = list(draw(st.permutations(range(ROWS))))
        if not key:
            ids += draw(st.lists(st.integers(0, ROWS - 1), max_size=4))
    elif key:  # a primary key: unique, non-null ids
        ids = draw(st.lists(st.integers(0, ROWS + 1), max_size=ROWS + 2, unique=True))
    else:
        ids = draw(st.lists(ROW_IDS, max_size=ROWS * 2))
    values = st.integers(-5, 5)
    rows = [((i,) if has_row_id else ()) + tuple(draw(values) for _ in names) for i in ids]
    rows = [row for row in rows if row]  # a table without columns is not built anyway
    flips = draw(
        st.lists(st.tuples(st.integers(0, 1 << 14), st.integers(1, 255)), max_size=3)
        if draw(st.booleans())
        else st.just([])
    )
    return statements, rows, flips


def expected(statements: list[str], db: Path) -> str | None:
    """What an undamaged index must give: None (the rows) or the error's words. The count
    of a table-only index is SQLite's own, read plainly (the file was made here)."""
    if any(s.startswith(("CREATE VIEW", "CREATE TRIGGER", "CREATE VIRTUAL")) for s in statements):
        return "holds the"
    if "ROW_ID" not in statements[0]:
        return "no such column"
    with closing(sqlite3.connect(db)) as conn:
        (count,) = conn.execute("SELECT COUNT(DISTINCT ROW_ID) FROM INDEXES").fetchone()
    return None if count == ROWS else "rows but its index"


@settings(max_examples=150, deadline=None)
@given(index_files())
def test_random_indexes_read_right_or_give_one_error(case):
    statements, rows, flips = case
    with tempfile.TemporaryDirectory() as directory:
        (shard,) = copy_set(Path(directory), "all_types")
        db = Path(f"{shard}.db")
        db.unlink()
        try:
            with closing(sqlite3.connect(db)) as conn:
                for statement in statements:
                    conn.execute(statement)
                if rows:
                    marks = ", ".join("?" * len(rows[0]))
                    conn.executemany(f"INSERT INTO INDEXES VALUES ({marks})", rows)
                conn.commit()
        except sqlite3.Error:  # a row the table's types refuse (WITHOUT ROWID, say)
            event("not built")
            return
        words = None if flips else expected(statements, db)
        data = bytearray(db.read_bytes())
        for pos, mask in flips:
            data[pos % len(data)] ^= mask
        db.write_bytes(bytes(data))
        try:
            result: list[tuple] | MalformedFileError = read_quickly(shard)
        except MalformedFileError as exc:
            assert exc.path in (str(db), str(shard)), exc
            result = exc
        event(f"{'damaged' if flips else 'intact'}: {type(result).__name__}")
        if isinstance(result, list):
            assert result == baseline()
        if not flips:
            if words is None:
                assert result == baseline()
            else:
                assert isinstance(result, MalformedFileError)
                assert words in str(result)
