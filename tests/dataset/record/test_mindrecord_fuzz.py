"""Fuzzing the MindRecord reader with damaged copies of files MindSpore wrote.

Whatever the damage, opening the data set and reading every row gives the original rows or
raises one MalformedFileError (FileNotFoundError for a shard that is not there), never another
exception, never a hang, never an allocation beyond a small multiple of the files. MindRecord has
no checksum, so a changed byte inside a row's value (where MindSpore's own index says the row's
records lie) may change that row, and only that row; everywhere else (header, page table, the
length fields, the gaps) damage gives an error or changes nothing.
"""

from __future__ import annotations

import functools
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from jisu.dataset.record.mindrecord import MindRecordReader
from jisu.dataset.record.validate import MalformedFileError

from .mindrecord_files import (
    FIXTURES,
    SETS,
    copy_set,
    header_of,
    row_records,
    snapshot,
    write_header,
)

FUZZ = settings(max_examples=200, deadline=None)
FEWER = settings(max_examples=100, deadline=None)  # damage of fewer kinds
ANY_SHARD = st.sampled_from(
    [(name, k) for name, shards in SETS.items() for k in range(len(shards))]
)


@functools.cache
def baseline(name: str) -> list[tuple]:
    """The rows of an untouched fixture (test_mindrecord.py checks them against MindSpore's)."""
    return snapshot(MindRecordReader(str(FIXTURES / SETS[name][0])))


@functools.cache
def layout(name: str, k: int) -> dict:
    """Where things lie in shard ``k`` of a fixture, from its header and MindSpore's index:
    the JSON's end, the rows' 8-byte length fields and each byte of a row's value (global row)."""
    path = FIXTURES / SETS[name][k]
    first_row = sum(len(row_records(FIXTURES / s)) for s in SETS[name][:k])
    records = row_records(path)
    values = {}
    lengths = []
    for row, record in enumerate(records, first_row):
        for begin, end in record.values():
            lengths.append(begin)
            values.update(dict.fromkeys(range(begin + 8, end), row))
    size = path.stat().st_size
    data = path.read_bytes()
    return {
        "size": size,
        "json_end": 8 + int.from_bytes(data[:8], "little"),
        "lengths": lengths,
        "values": values,
        "value_spans": [record["raw"] for record in records] + [r["blob"] for r in records],
    }


def outcome(
    name: str, damage: Callable[[list[Path]], None], trace: bool = False
) -> list[tuple] | Exception:
    """Read a damaged copy of fixture ``name`` (all of it): its rows, or the allowed error.
    Any other exception propagates. With ``trace``, the peak allocation (NumPy's included) is
    checked against the files' size: tracing is slow, so the fuzzers whose damage can declare
    sizes (counts, lengths, header numbers) use it."""
    with tempfile.TemporaryDirectory() as directory:
        paths = copy_set(Path(directory), name)
        damage(paths)
        size = sum(p.stat().st_size for p in Path(directory).iterdir())
        if trace:
            tracemalloc.start()
        try:
            result: list[tuple] | Exception = snapshot(MindRecordReader(str(paths[0])))
        except (MalformedFileError, FileNotFoundError) as exc:
            result = exc
        finally:
            peak = tracemalloc.get_traced_memory()[1] if trace else 0
            tracemalloc.stop()
    assert peak < 4 * size + (1 << 20), f"allocated {peak} bytes reading {size}"
    return result


def changed_rows(name: str, result: list[tuple]) -> set[int]:
    original = baseline(name)
    assert len(result) == len(original), "rows appeared or vanished without an error"
    return {i for i, (a, b) in enumerate(zip(result, original)) if a != b}


def assert_error_or_same(name: str, result: list[tuple] | Exception) -> None:
    if not isinstance(result, Exception):
        assert changed_rows(name, result) == set(), "damage outside any value changed rows"


@st.composite
def flips(draw: st.DrawFn) -> tuple[str, int, list[tuple[int, int]]]:
    """1 to 3 changed bytes in one shard, aimed at the JSON header, the rows' length fields,
    the rows' values, or anywhere."""
    name, k = draw(ANY_SHARD)
    where = layout(name, k)
    changes = []
    for _ in range(draw(st.integers(1, 3))):
        region = draw(st.sampled_from(["json", "length", "value", "anywhere"]))
        if region == "json":
            pos = draw(st.integers(0, where["json_end"] - 1))
        elif region == "length":
            pos = draw(st.sampled_from(where["lengths"])) + draw(st.integers(0, 7))
        elif region == "value":
            begin, end = draw(st.sampled_from(where["value_spans"]))
            pos = draw(st.integers(begin + 8, max(begin + 8, end - 1)))
        else:
            pos = draw(st.integers(0, where["size"] - 1))
        changes.append((pos, draw(st.integers(1, 255))))
    return name, k, changes


@FUZZ
@given(flips())
def test_changed_bytes_give_an_error_or_change_only_their_rows(case):
    name, k, changes = case

    def damage(paths: list[Path]) -> None:
        data = bytearray(paths[k].read_bytes())
        for pos, mask in changes:
            data[pos] ^= mask
        paths[k].write_bytes(bytes(data))

    result = outcome(name, damage, trace=True)
    if not isinstance(result, Exception):
        values = layout(name, k)["values"]
        touched = {values[pos] for pos, _ in changes if pos in values}
        assert changed_rows(name, result) <= touched


@FEWER
@given(ANY_SHARD, st.data())
def test_a_truncated_shard_or_index_is_an_error(shard, data):
    name, k = shard
    index = data.draw(st.booleans())

    def damage(paths: list[Path]) -> None:
        path = Path(f"{paths[k]}.db") if index else paths[k]
        size = path.stat().st_size
        keep = data.draw(st.integers(0, size - 1))
        path.write_bytes(path.read_bytes()[:keep])

    result = outcome(name, damage)
    if index:  # SQLite may still count the rows of a cut index, or not
        assert_error_or_same(name, result)
    else:
        assert isinstance(result, MalformedFileError), "a truncated shard read without error"


def header_paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """The path of every value in a JSON header (keys and list positions)."""
    paths = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            paths += header_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            paths += header_paths(item, (*prefix, position))
    return paths


# values no header field may hold: wrong types, huge, negative, odd names; a valid type name
# or a -1 in a shape would be a consistent edit (see the reader's docstring), so none is here
BAD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.sampled_from([2**63, 2**64 + 7, 10**30, -2, -(2**40), 1 << 31]),
    st.sampled_from(["", "x", "3.0x", "RAW", "int33", "../x", "/etc/passwd", "a/b", "a" * 300]),
    # lists with a dimension no shape may have (0, or below -1): [-1] or [3, 2] for a 2x3
    # column would be a consistent edit that reshapes its values
    st.lists(st.integers(-3, 3), min_size=1, max_size=3).filter(
        lambda dims: any(d == 0 or d < -1 for d in dims)
    ),
    st.dictionaries(st.sampled_from(["id", "type", "x"]), st.integers(-3, 3), max_size=2),
)


@FUZZ
@given(ANY_SHARD, st.data())
def test_a_header_field_replaced_or_removed_gives_an_error_or_changes_nothing(shard, data):
    name, k = shard
    header = header_of(FIXTURES / SETS[name][k])
    remove = data.draw(st.booleans())
    # removing a shard's name from the list is a consistent edit: the shards named are read
    paths = [p for p in header_paths(header) if not (remove and p[:-1] == ("shard_addresses",))]
    path = data.draw(st.sampled_from(paths))
    value = None if remove else data.draw(BAD_VALUES)

    def damage(paths: list[Path]) -> None:
        edited = header_of(paths[k])
        parent = functools.reduce(lambda node, key: node[key], path[:-1], edited)
        if remove:
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
        write_header(paths[k], edited)

    assert_error_or_same(name, outcome(name, damage, trace=True))


PAGE_EDITS = ["drop", "repeat", "swap", "retype", "empty", "null", "object"]


@FEWER
@given(ANY_SHARD, st.sampled_from(PAGE_EDITS), st.data())
def test_a_page_table_edit_gives_an_error_or_changes_nothing(shard, edit, data):
    name, k = shard
    count = len(header_of(FIXTURES / SETS[name][k])["page"])
    i, j = data.draw(st.integers(0, count - 1)), data.draw(st.integers(0, count - 1))

    def damage(paths: list[Path]) -> None:
        header = header_of(paths[k])
        pages = header["page"]
        if edit == "drop":
            del pages[i]
        elif edit == "repeat":
            pages.insert(j, dict(pages[i]))
        elif edit == "swap":
            pages[i], pages[j] = pages[j], pages[i]
        elif edit == "retype":
            pages[i]["page_type"] = (
                "RAW_DATA" if pages[i]["page_type"] == "BLOB_DATA" else "BLOB_DATA"
            )
        else:
            header["page"] = {"empty": [], "null": None, "object": {}}[edit]
        write_header(paths[k], header)

    assert_error_or_same(name, outcome(name, damage))


ADDRESS_EDITS = ["outside", "absolute", "folder", "repeat", "missing", "swap", "number"]


@FEWER
@given(ANY_SHARD, st.sampled_from(ADDRESS_EDITS), st.data())
def test_a_shard_address_edit_gives_an_error(shard, edit, data):
    name, k = shard
    count = len(SETS[name])
    i = data.draw(st.integers(0, count - 1))

    def damage(paths: list[Path]) -> None:
        header = header_of(paths[k])
        names = header["shard_addresses"]
        if edit == "swap" and count == 1:
            names.append(names[0])  # one shard: a repeat instead
        elif edit == "swap":
            names.reverse()
        else:
            names[i] = {
                "outside": f"../{names[i]}",
                "absolute": str(paths[i]),
                "folder": f"./{names[i]}",
                "repeat": names[(i + 1) % count] if count > 1 else names[i],
                "missing": names[i] + ".gone",
                "number": i,
            }[edit]
            if edit == "repeat" and count == 1:
                names.append(names[i])
        write_header(paths[k], header)

    result = outcome(name, damage)
    if edit in ("outside", "absolute", "folder", "repeat", "number", "swap"):
        # the first shard's header names the data set; another shard's header must agree
        assert isinstance(result, MalformedFileError), "a bad shard address was followed"
    else:
        assert isinstance(result, (MalformedFileError, FileNotFoundError))


@FEWER
@given(st.sampled_from(list(SETS)), st.data())
def test_a_damaged_index_gives_an_error_or_changes_nothing(name, data):
    def damage(paths: list[Path]) -> None:
        index = Path(f"{paths[0]}.db")
        content = bytearray(index.read_bytes())
        for _ in range(data.draw(st.integers(1, 8))):
            content[data.draw(st.integers(0, len(content) - 1))] ^= data.draw(st.integers(1, 255))
        index.write_bytes(bytes(content))

    assert_error_or_same(name, outcome(name, damage))
