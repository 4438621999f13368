"""ManifestDataset and PaddedDataset against MindSpore 2.10's recorded output
(tests/fixtures/manifest_edges/make_fixtures.py)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record.validate import MalformedFileError
from jisu.dataset.sources.manifest import ManifestDataset
from jisu.dataset.sources.padded import PaddedDataset
from tests.conftest import rows_of

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "manifest_edges")
with open(os.path.join(HERE, "expected.json"), encoding="utf-8") as _f:
    EXPECTED = json.load(_f)


def encode(value):
    value = np.asarray(value)
    if value.dtype.kind in "SU":
        return {"str": [v.decode() if isinstance(v, bytes) else v for v in value.ravel().tolist()]}
    return {"dtype": str(value.dtype), "shape": list(value.shape), "values": value.ravel().tolist()}


def encoded_rows(data):
    it = data.create_tuple_iterator(output_numpy=True, num_epochs=1)
    try:
        return [[encode(v) for v in row] for row in it]
    finally:
        it.close()


@pytest.fixture
def in_fixtures(monkeypatch):
    monkeypatch.chdir(HERE)  # the manifest's relative paths are relative to the working dir


def _cases():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mf", os.path.join(HERE, "make_fixtures.py"))
    with open(spec.origin, encoding="utf-8") as f:
        source = f.read()
    start = source.index("CASES = {")
    scope: dict = {}
    exec(source[start : source.index("}\n\n", start) + 2], scope)  # the dict literal only
    return scope["CASES"]


CASES = _cases()


@pytest.mark.parametrize("case", sorted(CASES))
def test_manifest_rows(in_fixtures, case):
    expected = EXPECTED["manifest"][case]
    data = ManifestDataset("train.manifest", shuffle=False, **CASES[case])
    assert data.get_class_indexing() == expected["class_indexing"]
    assert data.get_dataset_size() == expected["size"]
    assert encoded_rows(data) == expected["rows"]


def test_manifest_shards(in_fixtures):
    for sid in (0, 1):
        data = ManifestDataset("train.manifest", shuffle=False, num_shards=2, shard_id=sid)
        assert encoded_rows(data) == EXPECTED["manifest"]["shards"][str(sid)]


def test_manifest_absolute_paths_and_shuffle(tmp_path):
    image = os.path.abspath(os.path.join(HERE, "images", "0.png"))
    path = tmp_path / "abs.manifest"
    lines = [
        {"source": image, "usage": "train", "annotation": [{"name": f"c{i}"}]} for i in range(6)
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    data = ManifestDataset(str(path))  # shuffled by default, like MindSpore
    labels = rows_of(data, 1)
    assert sorted(labels) == list(range(6))
    pk = ManifestDataset(str(path), sampler=ds.PKSampler(1))
    assert sorted(rows_of(pk, 1)) == list(range(6))


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"usage": "train", "annotation": []}', "'source'"),
        ('{"source": "images/0.png", "annotation": []}', "'usage'"),
        ('{"source": "images/0.png", "usage": "train"}', "'annotation'"),
        ('{"source": "images/0.png", "usage": "train", "annotation": {"name": "a"}}', "list"),
        ('{"source": "images/0.png", "usage": "train", "annotation": [{"name": ""}]}', "'name'"),
        ('{"source": "images/0.png", "usage": "train", "annotation": [{"name": 3}]}', "'name'"),
        ("{not json", "not JSON"),
        ("", "not JSON"),  # a blank line: MindSpore fails too
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_manifest_malformed_lines(in_fixtures, tmp_path, line, message):
    path = tmp_path / "bad.manifest"
    good = '{"source": "images/1.png", "usage": "train", "annotation": [{"name": "b"}]}'
    path.write_text(line + "\n" + good + "\n")
    with pytest.raises(MalformedFileError, match=message) as info:
        ManifestDataset(str(path))
    assert str(path) in str(info.value)


def test_manifest_arguments_and_files(in_fixtures, tmp_path):
    with pytest.raises(ValueError, match="usage"):
        ManifestDataset("train.manifest", usage="TRAIN")  # MindSpore: case-sensitive too
    with pytest.raises(TypeError, match="class_indexing"):
        ManifestDataset("train.manifest", class_indexing=["a"])
    with pytest.raises(ValueError, match="cache"):
        ManifestDataset("train.manifest", cache=object())
    with pytest.raises(FileNotFoundError):
        ManifestDataset(str(tmp_path / "missing.manifest"))
    empty = tmp_path / "empty.manifest"
    empty.write_text("")
    with pytest.raises(ValueError, match="no images"):
        ManifestDataset(str(empty))
    missing = tmp_path / "m.manifest"
    missing.write_text('{"source": "images/nope.png", "usage": "train", "annotation": []}\n')
    with pytest.raises(FileNotFoundError, match=r"nope\.png"):
        ManifestDataset(str(missing))
    short = tmp_path / "short.png"
    short.write_bytes(b"BM")
    tiny = tmp_path / "t.manifest"
    tiny.write_text(json.dumps({"source": str(short), "usage": "train", "annotation": []}) + "\n")
    with pytest.raises(MalformedFileError, match="fewer than 3 bytes"):
        ManifestDataset(str(tiny))


def test_manifest_refuses_fifo(tmp_path):
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    path = tmp_path / "f.manifest"
    path.write_text(json.dumps({"source": str(fifo), "usage": "train", "annotation": []}) + "\n")
    with pytest.raises(MalformedFileError, match="regular file"):
        ManifestDataset(str(path))


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=200))
def test_manifest_fuzz(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "f.manifest"
    path.write_bytes(raw)
    try:
        ManifestDataset(str(path))
    except (MalformedFileError, ValueError, FileNotFoundError):
        pass


# ----------------------------------------------------------------------------- PaddedDataset
def test_padded_rows_match_mindspore():
    samples = [
        {"image": np.zeros(2, np.uint8), "label": np.array(-1, np.int32)},
        {"label": np.array(5, np.int32), "image": np.ones(3, np.uint8), "extra": 1},
    ]
    data = PaddedDataset(samples)
    assert data.get_col_names() == EXPECTED["padded"]["basic"]["columns"]
    assert encoded_rows(data) == EXPECTED["padded"]["basic"]["rows"]
    data = PaddedDataset([{"a": 1, "b": 2.5, "c": "s", "d": [1, 2], "e": True}])
    assert data.get_col_names() == EXPECTED["padded"]["python_values"]["columns"]
    assert encoded_rows(data) == EXPECTED["padded"]["python_values"]["rows"]


def test_padded_arguments():
    with pytest.raises(ValueError, match="empty"):
        PaddedDataset([])
    with pytest.raises(TypeError, match="list"):
        PaddedDataset(({"a": 1},))
    with pytest.raises(TypeError, match=r"padded_samples\[1\]"):
        PaddedDataset([{"a": 1}, [1]])
    with pytest.raises(ValueError, match=r"padded_samples\[1\] lacks"):
        PaddedDataset([{"a": 1, "b": 2}, {"a": 3}])
    with pytest.raises(ValueError, match="no keys"):
        PaddedDataset([{}])


def _padded_concat(n, pads):
    return ds.NumpySlicesDataset(
        {"image": np.arange(n, dtype=np.int64)}, shuffle=False
    ) + PaddedDataset([{"image": np.array(-1 - k, np.int64)} for k in range(pads)])


@pytest.mark.parametrize("key", sorted(EXPECTED["padded"]["distributed"]))
def test_padded_distributed_matches_mindspore(key):
    sizes, sid = key.split(":")
    counts, shards = sizes.split("/")
    n, pads = map(int, counts.split("+"))
    data = _padded_concat(n, pads)
    data.use_sampler(
        ds.DistributedSampler(num_shards=int(shards), shard_id=int(sid), shuffle=False)
    )
    expected = EXPECTED["padded"]["distributed"][key]
    assert rows_of(data) == expected
    assert data.get_dataset_size() == len(expected)
    assert rows_of(data, num_epochs=2) == expected  # every epoch the same shard


def test_padded_distributed_shuffled_input_is_unshuffled():
    # MindSpore gives [0, 10], [1, 10], [2, -1] here (a shuffled input's rows repeat across
    # shards, 11 is lost): jisu deals the joined rows round-robin, each row once.
    got = []
    for sid in range(3):
        data = (
            ds.NumpySlicesDataset({"x": np.arange(3)}, shuffle=False)
            + ds.NumpySlicesDataset({"x": np.arange(10, 12)}, shuffle=True)
            + PaddedDataset([{"x": np.array(-1)}])
        )
        data.use_sampler(ds.DistributedSampler(num_shards=3, shard_id=sid, shuffle=False))
        got.append(rows_of(data))
    assert got == [[0, 10], [1, 11], [2, -1]]


def test_padded_concat_use_sampler_arguments():
    data = _padded_concat(5, 3)
    with pytest.raises(ValueError, match="shuffle=False"):
        data.use_sampler(ds.DistributedSampler(4, 0, shuffle=True))
    with pytest.raises(ValueError, match="num_samples"):
        data.use_sampler(ds.DistributedSampler(4, 0, shuffle=False, num_samples=2))
    with pytest.raises(TypeError, match="DistributedSampler or a RandomSampler"):
        data.use_sampler(ds.SequentialSampler())
    limited = ds.NumpySlicesDataset({"image": np.arange(3)}, num_samples=2) + PaddedDataset(
        [{"image": np.array(-1)}]
    )
    with pytest.raises(ValueError, match="num_samples"):
        limited.use_sampler(ds.DistributedSampler(2, 0, shuffle=False))
    data.use_sampler(ds.RandomSampler())
    assert sorted(rows_of(data)) == [-3, -2, -1, 0, 1, 2, 3, 4]


def test_padded_concat_iterable_input_round_robin():
    def gen():
        yield from (np.array(i) for i in range(3))

    got = []
    for sid in range(2):
        data = ds.GeneratorDataset(gen, ["x"]) + PaddedDataset([{"x": np.array(-1)}])
        data.use_sampler(ds.DistributedSampler(num_shards=2, shard_id=sid, shuffle=False))
        got.append(rows_of(data))
    assert got == [[0, 2], [1, -1]]  # MindSpore: [0, 2, -1] and [1] (iterable inputs unsharded)
