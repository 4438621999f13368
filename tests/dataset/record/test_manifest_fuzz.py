"""Fuzzing the jisu record reader: a mutated manifest, or a shard with flipped bytes or cut
short, gives exactly the original rows or one clear error; never another exception, never
other rows."""

from __future__ import annotations

import copy
import json
import os
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record import writer as writer_module
from jisu.dataset.record.format import class_indexing_problem
from jisu.dataset.record.reader import RecordReader
from jisu.dataset.record.validate import MalformedFileError

SCHEMA = {
    "x": {"type": "int64"},
    "s": {"type": "string"},
    "b": {"type": "bytes"},
    "v": {"type": "float32", "shape": [2]},
    "ids": {"type": "int32", "shape": [-1]},
}
ROWS = 14
CLASSES = {"cat": 0, "dog": 1, "狗": 1}
FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def expected_row(x: int) -> dict:
    """Row ``x`` as written: the independent expectation the reader is held to."""
    return {
        "x": np.int64(x),
        "s": np.array(f"行{x}"),
        "b": np.frombuffer(bytes(range(x % 5)), np.uint8),
        "v": np.array([x, -x], np.float32),
        "ids": np.arange(x % 4, dtype=np.int32),
    }


@pytest.fixture(scope="module")
def data_set(tmp_path_factory) -> str:
    """14 rows in 3 shards, blocks of 2 rows (shards of 6, 4 and 4 rows)."""
    path = str(tmp_path_factory.mktemp("fuzz") / "data.rec")
    with mock.patch.object(writer_module, "MAX_BLOCK_ROWS", 2):
        writer = ds.FileWriter(path, shard_num=3)
        writer.add_schema(SCHEMA)
        writer.set_class_indexing(CLASSES)  # so that mutations reach into it too
        rows = [expected_row(x) for x in range(ROWS)]
        writer.write_raw_data([{**r, "b": r["b"].tobytes(), "s": str(r["s"])} for r in rows])
        writer.commit()
    return path


def read_all(manifest: str) -> list[dict]:
    reader = RecordReader(manifest)
    return [dict(zip(reader.columns, reader[i])) for i in range(len(reader))]


def assert_original(rows: list[dict]) -> None:
    assert len(rows) == ROWS
    for x, row in enumerate(rows):
        want = expected_row(x)
        assert list(row) == list(want)
        for name, value in want.items():
            assert row[name].dtype == value.dtype and row[name].shape == value.shape, name
            np.testing.assert_array_equal(row[name], value)


def test_the_fuzzed_data_set_reads_back(data_set):
    assert_original(read_all(data_set + ".manifest.json"))
    assert RecordReader(data_set + ".manifest.json").class_indexing == CLASSES


# ---------------------------------------------------------------- manifest mutations
HOSTILE = st.one_of(
    st.sampled_from(
        [None, True, False, 0, 1, -1, 2, 3, 6, 2**31, 2**32, 2**63, -(2**63), 1.5, float("nan")]
    ),
    st.sampled_from(["", "x", "..", "../data.rec0", "/etc/passwd", "data.rec0", "data.rec1"]),
    st.sampled_from([[], {}, [0], ["x"], {"type": "int64"}, {"file": "data.rec0"}]),
    st.integers(-(2**70), 2**70),
    st.text(max_size=8),
)


def _containers(node, path=()):
    """(path, container) of every dict and list in a JSON tree."""
    if isinstance(node, (dict, list)):
        yield path, node
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            yield from _containers(child, (*path, key))


@st.composite
def mutated(draw, original: dict) -> dict:
    """``original`` after 1-3 mutations: a key or element deleted, replaced by a hostile
    value, nudged by +-1, duplicated, or two elements of a list swapped."""
    manifest = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 3))):
        containers = list(_containers(manifest))
        _, node = draw(st.sampled_from(containers))
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            continue
        key = draw(st.sampled_from(keys))
        action = draw(st.sampled_from(["delete", "replace", "nudge", "duplicate", "swap"]))
        if action == "delete":
            del node[key]
        elif action == "replace":
            node[key] = copy.deepcopy(draw(HOSTILE))  # later mutations must not alter HOSTILE
        elif action == "nudge" and isinstance(node[key], int):
            node[key] += draw(st.sampled_from([-1, 1]))
        elif action == "duplicate" and isinstance(node, list):
            node.insert(key, copy.deepcopy(node[key]))
        elif action == "swap" and isinstance(node, list):
            other = draw(st.sampled_from(keys))
            node[key], node[other] = node[other], node[key]
    return manifest


@pytest.fixture(scope="module")
def original_manifest(data_set) -> dict:
    with open(data_set + ".manifest.json") as f:
        return json.load(f)


@FUZZ
@given(data=st.data())
def test_a_mutated_manifest_reads_the_original_rows_or_fails_clearly(
    data_set, original_manifest, data
):
    manifest = data.draw(mutated(original_manifest))
    target = os.path.join(os.path.dirname(data_set), "fuzzed.manifest.json")
    with open(target, "w") as f:
        json.dump(manifest, f)
    try:
        rows = read_all(target)
    except (MalformedFileError, FileNotFoundError) as exc:
        event(f"{type(exc).__name__}: {getattr(exc, 'reason', str(exc))[:30]}")
        return
    event("the original rows")
    assert_original(rows)
    # whatever class map was accepted is one (str -> int label in [0, 2**31))
    assert class_indexing_problem(RecordReader(target).class_indexing) is None


@FUZZ
@given(text=st.binary(max_size=300))
def test_a_manifest_of_random_bytes_fails_clearly(data_set, text):
    target = os.path.join(os.path.dirname(data_set), "random.manifest.json")
    with open(target, "wb") as f:
        f.write(text)
    with pytest.raises(MalformedFileError):
        read_all(target)


# ---------------------------------------------------------------- damaged shards
@FUZZ
@given(shard=st.integers(0, 2), where=st.floats(0, 1, exclude_max=True), flip=st.integers(1, 255))
def test_a_flipped_byte_in_a_shard_is_caught(data_set, shard, where, flip):
    path = f"{data_set}{shard}"
    with open(path, "rb") as f:
        original = f.read()
    damaged = bytearray(original)
    damaged[int(where * len(damaged))] ^= flip
    try:
        _write_over(path, bytes(damaged))
        with pytest.raises(MalformedFileError, match=rf"data.rec{shard}'.*checksum"):
            read_all(data_set + ".manifest.json")
    finally:
        _write_over(path, original)


@FUZZ
@given(shard=st.integers(0, 2), keep=st.floats(0, 1, exclude_max=True))
def test_a_shard_cut_short_is_caught(data_set, shard, keep):
    path = f"{data_set}{shard}"
    with open(path, "rb") as f:
        original = f.read()
    try:
        _write_over(path, original[: int(keep * len(original))])
        with pytest.raises(MalformedFileError, match=rf"data.rec{shard}'.*bytes but"):
            read_all(data_set + ".manifest.json")
    finally:
        _write_over(path, original)


def _write_over(path: str, content: bytes) -> None:
    with open(path, "wb") as f:
        f.write(content)
