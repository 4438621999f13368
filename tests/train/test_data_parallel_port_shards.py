"""How a data-parallel rank's dataset is split (``num_shards``/``shard_id``, a
``DistributedSampler``), against MindSpore's recorded answers
(tests/fixtures/ms_data_parallel, from MindSpore 2.10.0 and 2.0.0), and ``Model`` leaving a
dataset that shards itself as it is under ``torchrun``."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import jisu.dataset as ds
from jisu import distributed
from jisu.mindrecord import FileWriter
from jisu.train.model import shard_by_rank

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures", "ms_data_parallel")
KINDS = ("generator", "numpy_slices", "distributed_sampler", "image_folder", "mindrecord")


def _expected(version):
    with open(os.path.join(FIXTURES, f"shards-{version}.json")) as f:
        return json.load(f)


class Source:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return (np.array(i, np.int64),)

    def __len__(self):
        return self.n


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """The fixture script's files: n images in two class folders (file k holds the byte k),
    and a record file of ids 0..n-1."""
    root = tmp_path_factory.mktemp("shards")
    for n in (7, 8):
        for k in range(n):
            folder = root / f"images{n}" / f"class{k % 2}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"img{k:02d}.jpg").write_bytes(bytes([k]) * 4)
        writer = FileWriter(str(root / f"ids{n}.mindrecord"), shard_num=1, overwrite=True)
        writer.add_schema({"id": {"type": "int64"}}, "ids")
        writer.write_raw_data([{"id": k} for k in range(n)])
        writer.commit()
    return root


def make(kind, n, shards, shard_id, root, shuffle=False):
    kw = {"num_shards": shards, "shard_id": shard_id, "shuffle": shuffle}
    if kind == "generator":
        return ds.GeneratorDataset(Source(n), ["id"], **kw)
    if kind == "numpy_slices":
        return ds.NumpySlicesDataset({"id": np.arange(n)}, **kw)
    if kind == "distributed_sampler":
        sampler = ds.DistributedSampler(shards, shard_id, shuffle=shuffle)
        return ds.GeneratorDataset(Source(n), ["id"], sampler=sampler)
    if kind == "image_folder":
        return ds.ImageFolderDataset(str(root / f"images{n}"), decode=False, **kw)
    return ds.MindDataset(str(root / f"ids{n}.mindrecord"), **kw)


def row_ids(data, kind, epochs=1):
    it = data.create_tuple_iterator(output_numpy=True, num_epochs=epochs)
    pick = (lambda row: int(row[0][0])) if kind == "image_folder" else (lambda row: int(row[0]))
    return [[pick(row) for row in it] for _ in range(epochs)]


@pytest.mark.parametrize("kind", KINDS)
def test_each_shard_reads_the_rows_mindspore_reads(kind, root):
    """Round-robin over the source's order, short shards wrapping to its first rows, every
    shard as long (MindSpore 2.10; 2.0.0 too, except MindDataset's contiguous blocks)."""
    new, old = _expected("2.10.0"), _expected("2.0.0")
    for n in (7, 8):
        for shards in (2, 3):
            key = f"{kind} n={n} shards={shards}"
            got = []
            for k in range(shards):
                data = make(kind, n, shards, k, root)
                got.append(
                    {"rows": row_ids(data, kind)[0], "batches": data.batch(2).get_dataset_size()}
                )
            assert got == new["ordered"][key], key
            if kind != "mindrecord":
                assert got == old["ordered"][key], key


@pytest.mark.parametrize("kind", KINDS)
def test_shuffled_shards_split_each_epoch_as_mindspore_does(kind, root):
    """shuffle=True: each epoch the shards are disjoint and together read every row, in
    MindSpore's recorded epochs and in jisu's (the orders differ: another generator)."""
    ds.config.set_seed(5)
    got = [row_ids(make(kind, 8, 2, k, root, shuffle=True), kind, epochs=2) for k in range(2)]
    for parts in (got, _expected("2.10.0")["shuffled"][f"{kind} n=8 shards=2"]):
        for epoch in range(2):
            first, second = parts[0][epoch], parts[1][epoch]
            assert len(first) == len(second) == 4
            assert sorted(first + second) == list(range(8)), (kind, epoch, parts)
    assert got[0][0] != got[0][1]  # a new order each epoch


def test_model_leaves_a_dataset_that_shards_itself_as_it_is(root, monkeypatch):
    """Under torchrun (2 ranks here), Model shards only a dataset that does not shard itself:
    a source's num_shards or DistributedSampler (MindSpore's only ways) is the split."""
    monkeypatch.setattr(distributed, "get_group_size", lambda: 2)
    monkeypatch.setattr(distributed, "get_rank", lambda: 1)
    for kind in KINDS:
        data = make(kind, 8, 2, 1, root).batch(2)
        assert data.children[0].shards == (2, 1)
        assert shard_by_rank(data) is data
    plain = ds.NumpySlicesDataset({"id": np.arange(8)}, shuffle=False).batch(2)
    assert plain.children[0].shards is None
    sharded = shard_by_rank(plain)
    assert sharded is not plain
    assert [row[0].tolist() for row in sharded.create_tuple_iterator(output_numpy=True)] == [
        [2, 3],
        [6, 7],
    ]
