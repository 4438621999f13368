"""CSVDataset and TextFileDataset, compared with what MindSpore 2.10 reads from the same files
(tests/fixtures/csv_text, recorded by make_fixtures.py; MindSpore is not needed here)."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.sources import text_file
from jisu.dataset.sources.csv import CSVDataset
from jisu.dataset.sources.options import Shuffle
from jisu.dataset.sources.text_file import TextFileDataset
from tests.conftest import rows_of

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "csv_text"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))


def fx(name: str) -> str:
    return str(FIXTURES / name)


CASES = {
    "csv_strings": lambda **kw: CSVDataset([fx("mixed_b.csv"), fx("mixed_a.csv")], **kw),
    "csv_typed": lambda **kw: CSVDataset(
        fx("mixed_*.csv"), column_defaults=[0, 0.0, "", "none"], **kw
    ),
    "csv_names_delim": lambda **kw: CSVDataset(
        fx("semicolon.csv"),
        field_delim=";",
        column_defaults=[1, 1.0],
        column_names=["a", "b", "c"],
        **kw,
    ),
    "text": lambda **kw: TextFileDataset([fx("lines_b.txt"), fx("lines_a.txt")], **kw),
    "text_glob": lambda **kw: TextFileDataset(fx("lines_*.txt"), **kw),
}


def raw_rows(data) -> list[list[np.ndarray]]:
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        return [list(row) for row in it]
    finally:
        it.close()


def write(folder: Path, name: str, content: str | bytes) -> str:
    path = folder / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return str(path)


# ----------------------------------------------------------------- MindSpore's output
@pytest.mark.parametrize("case", sorted(CASES))
def test_rows_names_dtypes_and_shapes_match_mindspore(case):
    expected = EXPECTED[case]
    data = CASES[case](shuffle=False)
    assert data.get_col_names() == expected["columns"]
    assert data.get_dataset_size() == expected["size"]
    rows = raw_rows(data)
    assert len(rows) == len(expected["rows"])
    for row, ref in zip(rows, expected["rows"]):
        for value, spec in zip(row, ref, strict=True):
            assert str(value.dtype) == spec["dtype"]
            assert list(value.shape) == spec["shape"]
            assert value.tolist() == spec["value"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_shard_and_num_samples_sizes_match_mindspore(case):
    expected = EXPECTED[case]
    for n, sizes in expected["shard_sizes"].items():
        n = int(n)
        parts = [CASES[case](shuffle=False, num_shards=n, shard_id=k) for k in range(n)]
        assert [p.get_dataset_size() for p in parts] == sizes
        got = [len(rows_of(p)) for p in parts]
        assert got == sizes
    assert CASES[case](num_samples=4).get_dataset_size() == expected["num_samples_4_size"]
    assert len(rows_of(CASES[case](num_samples=4))) == expected["num_samples_4_size"]


def test_shards_cover_every_row_and_wrap():
    all_rows = rows_of(CASES["csv_typed"](shuffle=False), column=None)
    for n in (2, 5):
        seen = []
        for k in range(n):
            seen += rows_of(CASES["csv_typed"](num_shards=n, shard_id=k), column=None)
        assert len(seen) == -(-len(all_rows) // n) * n
        assert {json.dumps(r) for r in seen} == {json.dumps(r) for r in all_rows}


@pytest.mark.parametrize("case", ["csv_typed", "text"])
def test_default_shuffle_is_a_seeded_permutation(case):
    in_order = rows_of(CASES[case](shuffle=False), column=None)
    key = json.dumps
    ds.config.set_seed(7)
    first = rows_of(CASES[case](), column=None)
    ds.config.set_seed(7)
    again = rows_of(CASES[case](), column=None)
    assert first == again
    assert first != in_order
    assert Counter(map(key, first)) == Counter(map(key, in_order))
    two_epochs = CASES[case]().create_tuple_iterator(num_epochs=2, output_numpy=True)
    try:
        epochs = [[[v.tolist() for v in row] for row in two_epochs] for _ in range(2)]
    finally:
        two_epochs.close()
    assert epochs[0] != epochs[1]  # a new order each epoch
    assert Counter(map(key, epochs[1])) == Counter(map(key, in_order))


def test_file_level_shuffles_keep_the_files_rows_together():
    data = lambda shuffle: TextFileDataset([fx("lines_a.txt"), fx("lines_b.txt")], shuffle=shuffle)  # noqa: E731
    in_order = rows_of(data(False))
    a, b = in_order[:4], in_order[4:]
    seen_files_swapped = False
    for seed in range(6):
        ds.config.set_seed(seed)
        rows = rows_of(data(Shuffle.FILES))
        assert rows in (a + b, b + a)
        seen_files_swapped |= rows == b + a
        infile = rows_of(data(Shuffle.INFILE))
        assert sorted(infile[:4]) == sorted(a) and sorted(infile[4:]) == sorted(b)
    assert seen_files_swapped
    assert Counter(rows_of(data(True))) == Counter(in_order)


# ----------------------------------------------------------------- CSV behaviour
def test_typed_columns_empty_numeric_fields_and_spaces(tmp_path):
    path = write(tmp_path, "t.csv", 'i,f,s\n1,2.5,x\n,,\n +7 , -1e3 ,"q"\n')
    data = CSVDataset(path, column_defaults=[-1, 0.5, "d"], shuffle=False)
    rows = raw_rows(data)
    assert [[v.tolist() for v in r] for r in rows] == [
        [1, 2.5, "x"],
        [-1, 0.5, ""],  # an empty numeric field takes the default (MindSpore fails)
        [7, -1000.0, "q"],
    ]
    assert [str(v.dtype) for v in rows[0]] == ["int32", "float32", "<U1"]


def test_fewer_defaults_than_columns_leave_strings(tmp_path):
    path = write(tmp_path, "t.csv", "a,b\n1,2\n")
    assert rows_of(CSVDataset(path, column_defaults=[0]), column=None) == [[1, "2"]]


def test_header_of_every_file_is_skipped_and_must_agree(tmp_path):
    one = write(tmp_path, "1.csv", "a,b\n1,2\n")
    two = write(tmp_path, "2.csv", "a,b\r\n3,4\r\n")
    assert rows_of(CSVDataset([two, one], shuffle=False), column=None) == [
        ["1", "2"],
        ["3", "4"],
    ]
    three = write(tmp_path, "3.csv", "a,c\n5,6\n")
    with pytest.raises(ValueError, match=r"3\.csv' line 1: the header \['a', 'c'\] differs"):
        CSVDataset([one, three])
    # with column_names every line is data, headers too
    rows = rows_of(CSVDataset([one, two], column_names=["x", "y"], shuffle=False), column=0)
    assert rows == ["a", "1", "a", "3"]


def test_quotes_line_breaks_bom_and_blank_lines(tmp_path):
    path = write(tmp_path, "q.csv", '\ufeff"x",y\r\n"a ""b"", c","two\nlines"\r\n\r\na"b,\rlast,1')
    data = CSVDataset(path, shuffle=False)
    assert data.get_col_names() == ["x", "y"]
    assert rows_of(data, column=None) == [
        ['a "b", c', "two\nlines"],
        ['a"b', ""],
        ["last", "1"],
    ]


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"field_delim": "ab"}, ValueError, "CSVDataset: field_delim must be a single"),
        ({"field_delim": ""}, ValueError, "field_delim"),
        ({"field_delim": '"'}, ValueError, "field_delim"),
        ({"field_delim": "\n"}, ValueError, "field_delim"),
        ({"field_delim": 1}, TypeError, "CSVDataset: field_delim must be a str"),
        ({"column_defaults": [np.float32(1)]}, TypeError, r"column_defaults\[0\]"),
        ({"column_defaults": [None]}, TypeError, r"column_defaults\[0\]"),
        ({"column_defaults": 0}, TypeError, "column_defaults must be a list"),
        ({"column_defaults": [2**40]}, ValueError, "int32"),
        ({"column_defaults": [0, 0, 0, 0, 0]}, ValueError, "column_defaults has 5 entries"),
        ({"column_names": "ab"}, TypeError, "column_names must be a list of str"),
        ({"column_names": []}, ValueError, "column_names must not be empty"),
        ({"column_names": ["a", "a", "b", "c"]}, ValueError, "duplicates"),
        ({"cache": object()}, ValueError, "CSVDataset: cache is not supported"),
        ({"num_samples": -1}, ValueError, "CSVDataset: num_samples"),
        ({"num_shards": 2}, ValueError, "CSVDataset: num_shards and shard_id"),
        ({"shuffle": "yes"}, TypeError, "CSVDataset: shuffle"),
    ],
)
def test_bad_csv_arguments_name_the_op_and_argument(kwargs, error, message):
    with pytest.raises(error, match=message):
        CSVDataset(fx("mixed_a.csv"), **kwargs)


def test_bad_dataset_files(tmp_path):
    with pytest.raises(ValueError, match="CSVDataset: dataset_files must not be empty"):
        CSVDataset([])
    with pytest.raises(ValueError, match=r"match no regular file.*nope"):
        CSVDataset([fx("mixed_a.csv"), str(tmp_path / "nope.csv")])
    with pytest.raises(ValueError, match="match no regular file"):
        TextFileDataset(str(tmp_path))  # a folder
    with pytest.raises(TypeError, match="TextFileDataset: dataset_files"):
        TextFileDataset(3)
    with pytest.raises(ValueError, match="TextFileDataset: cache is not supported"):
        TextFileDataset(fx("lines_a.txt"), cache=1)
    odd = write(tmp_path, "[1].txt", "x\n")  # a literal name with glob characters
    assert rows_of(TextFileDataset(odd)) == ["x"]


@pytest.mark.parametrize(
    "content, defaults, message",
    [
        ("a,b\n1,2\n3,4,5\n", None, r"line 3: has 3 field\(s\), expected 2"),
        ("a,b\n1,2\n\n3\n", None, r"line 4: has 1 field\(s\), expected 2"),
        ('a,b\n1,2\n"3,4\n5,6\n', None, r"line 3: .*not closed"),
        ("a,b\n1,2\n5.5,1\n", [0, 0], r"line 3: column 'a': '5.5' is not an int"),
        ("a,b\n1,2\n0x10,1\n", [0, 0], r"line 3: column 'a': '0x10' is not an int"),
        ("a,b\n1,2\n\n3000000000,1\n", [0, 0], "line 4: column 'a': '3000000000' is out of"),
        ("a,b\n1,2\n1,1.5abc\n", [0, 0.0], r"line 3: column 'b': '1.5abc' is not a float"),
        ("a,b\n1,2\n1,1e50\n", [0, 0.0], "line 3: column 'b': '1e50' is out of the float32"),
        ('a,b\n1,"x\ny"\n2,3\n', [0, 0.0], r"line 2: column 'b': 'x\\ny' is not a float"),
        ("a,a\n1,2\n", None, "line 1: the header has duplicate column names"),
        ("a,\n1,2\n", None, "line 1: the header has an empty column name"),
        (b"a,b\n1,2\n\xff,3\n", None, "line 3: not valid UTF-8"),
        ("", None, "has no header line"),
        ("a,b\n\n", None, "the files hold no rows"),
    ],
)
def test_malformed_csv_names_the_file_and_line(tmp_path, content, defaults, message):
    path = write(tmp_path, "bad.csv", content)
    with pytest.raises(ValueError, match=message) as info:
        CSVDataset(path, column_defaults=defaults)
    assert "CSVDataset" in str(info.value)
    assert "bad.csv" in str(info.value) or "no rows" in str(info.value)


def test_wrong_column_names_count_names_the_line(tmp_path):
    path = write(tmp_path, "n.csv", "\n1,2\n")
    with pytest.raises(ValueError, match=r"n\.csv' line 2: has 2 field\(s\), expected 3"):
        CSVDataset(path, column_names=["a", "b", "c"])


# ----------------------------------------------------------------- text files
def test_text_lines_crlf_bom_and_empty_lines(tmp_path):
    path = write(tmp_path, "t.txt", b"\xef\xbb\xbfa\r\n\r\n\n b \n\tc\r\nlast\r")
    assert rows_of(TextFileDataset(path, shuffle=False)) == ["a", " b ", "\tc", "last"]
    with pytest.raises(ValueError, match="TextFileDataset: the files hold no lines"):
        TextFileDataset(write(tmp_path, "e.txt", "\n\r\n\n"))


def test_text_bad_utf8_fails_at_its_row_naming_file_and_line(tmp_path):
    path = write(tmp_path, "u.txt", b"ok\n\n\xff bad\nfine\n")
    data = TextFileDataset(path, shuffle=False)
    assert data.get_dataset_size() == 3
    with pytest.raises(RuntimeError, match=r"u\.txt' line 3: not valid UTF-8") as info:
        rows_of(data)
    assert isinstance(info.value, ValueError)


def test_text_bad_utf8_line_is_skipped_in_skip_mode(tmp_path):
    path = write(tmp_path, "u.txt", b"ok\n\xff bad\nfine\n")
    ds.config.set_error_samples_mode("skip")
    try:
        data = TextFileDataset(path, shuffle=False)
        assert rows_of(data) == ["ok", "fine"]
    finally:
        ds.config.set_error_samples_mode("raise")


def test_text_file_truncated_after_opening(tmp_path):
    path = write(tmp_path, "s.txt", "one\ntwo\nthree\n")
    data = TextFileDataset(path, shuffle=False)
    Path(path).write_text("one\n")
    with pytest.raises(RuntimeError, match="changed"):
        rows_of(data)


def test_text_index_across_chunk_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(text_file, "CHUNK", 5)
    content = b"ab\r\n\r\ncdefghij\r\n\n\nk\rl\r\nmn"
    path = write(tmp_path, "c.txt", content)
    expected = [line.rstrip(b"\r").decode() for line in content.split(b"\n")]
    assert rows_of(TextFileDataset(path, shuffle=False)) == [e for e in expected if e]


# ----------------------------------------------------------------- fuzz
ALPHABET = st.sampled_from(
    [b",", b'"', b"\n", b"\r", b"a", b"1", b"-", b".", b" ", b"e", b"\xff", b"\xc3\xa9", b"\x00"]
)


@settings(max_examples=50, deadline=None)
@given(
    content=st.lists(ALPHABET, max_size=40).map(b"".join),
    defaults=st.lists(st.sampled_from([0, 1.5, "s"]), max_size=3),
    names=st.booleans(),
)
def test_fuzz_csv_parser_returns_rows_or_a_clear_error(content, defaults, names):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "f.csv")
        with open(path, "wb") as f:
            f.write(content)
        try:
            data = CSVDataset(
                path,
                column_defaults=defaults or None,
                column_names=["a", "b"] if names else None,
                shuffle=False,
            )
        except ValueError as exc:
            assert str(exc).startswith("CSVDataset: ")
            return
        source = data.source
        for i in range(len(source)):
            row = source[i]
            assert len(row) == len(data.get_col_names())
            assert all(isinstance(v, np.ndarray) and v.shape == () for v in row)


@settings(max_examples=50, deadline=None)
@given(content=st.lists(ALPHABET, max_size=40).map(b"".join))
def test_fuzz_text_index_matches_a_reference_split(content):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "f.txt")
        with open(path, "wb") as f:
            f.write(content)
        body = content[3:] if content.startswith(b"\xef\xbb\xbf") else content
        lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in body.split(b"\n")]
        lines = [ln for ln in lines if ln]
        try:
            data = TextFileDataset(path, shuffle=False)
        except ValueError as exc:
            assert "TextFileDataset" in str(exc)
            assert not lines or lines[0] != lines[0].decode("utf-8", "ignore").encode()
            return
        assert data.get_dataset_size() == len(lines)
        for i, line in enumerate(lines):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                with pytest.raises(ValueError, match="not valid UTF-8"):
                    data.source[i]
            else:
                # NumPy str arrays drop trailing NUL characters (MindSpore's rows too)
                assert data.source[i][0].tolist() == text.rstrip("\x00")
