"""MNIST / Fashion-MNIST / CIFAR-10 / CIFAR-100 sources and MindSpore's samplers, against what
MindSpore 2.10 read from the same files (tests/fixtures/vision_sets, made by make_fixtures.py)
and against the bytes the tests write themselves."""

from __future__ import annotations

import json
import os
import struct
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset.record.validate import MalformedFileError
from tests.conftest import rows_of

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "vision_sets")
MNIST = os.path.join(FIXTURES, "mnist")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)


def read(data):
    return list(data.create_tuple_iterator(output_numpy=True, num_epochs=1))


# ---------------------------------------------------------------------------- MNIST
@pytest.mark.parametrize("usage", [None, "train", "test", "all"])
@pytest.mark.parametrize("cls", [ds.MnistDataset, ds.FashionMnistDataset])
def test_mnist_rows_match_mindspore(cls, usage):
    want = EXPECTED["mnist"][str(usage)]
    data = cls(MNIST, usage=usage, shuffle=False)
    got = read(data)
    assert data.get_col_names() == want["columns"]
    assert data.get_dataset_size() == want["size"] == len(got)
    assert [str(a.dtype) for a in got[0]] == want["dtypes"]
    assert [list(a.shape) for a in got[0]] == want["shapes"]
    assert [int(r[1]) for r in got] == want["labels"]
    assert [int(r[0].sum()) for r in got] == want["image_sums"]


def test_mnist_images_are_the_idx_bytes():
    with open(os.path.join(MNIST, "t10k-images-idx3-ubyte"), "rb") as f:
        raw = np.frombuffer(f.read()[16:], np.uint8).reshape(3, 28, 28, 1)
    got = read(ds.MnistDataset(MNIST, usage="test", shuffle=False).batch(3))[0][0]
    np.testing.assert_array_equal(got, raw)


def test_mnist_shards_and_pk_sampler_match_mindspore():
    shard = ds.MnistDataset(MNIST, shuffle=False, num_shards=3, shard_id=1)
    assert rows_of(shard, 1) == EXPECTED["mnist_shard_1_of_3"]
    pk = ds.MnistDataset(MNIST, sampler=ds.PKSampler(2))
    assert rows_of(pk, 1) == EXPECTED["mnist_pk2_labels"]  # classes in order, 2 each
    assert pk.get_dataset_size() == len(EXPECTED["mnist_pk2_labels"])


def test_pk_sampler_draws_within_each_class_uniformly_and_shuffles_classes():
    labels = np.array(EXPECTED["mnist"]["all"]["labels"])
    sums = EXPECTED["mnist"]["all"]["image_sums"]  # distinct: they identify the rows
    row_of = {s: k for k, s in enumerate(sums)}
    picks: Counter = Counter()
    ds.config.set_seed(7)
    data = ds.MnistDataset(MNIST, usage="all", sampler=ds.PKSampler(1))
    with data.create_tuple_iterator(output_numpy=True, num_epochs=300) as it:
        for _ in range(300):
            for image, label in it:  # one epoch
                row = row_of[int(image.sum())]
                assert labels[row] == label  # the draw comes from the label's class
                picks[row] += 1
    assert sum(picks.values()) == 300 * len(set(labels.tolist()))
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        counts = [picks[m] for m in members]
        expected = 300 / len(members)  # uniform within the class, with replacement
        assert all(abs(c - expected) < 5 * np.sqrt(expected) + 1 for c in counts), (cls, counts)
    shuffled = ds.MnistDataset(MNIST, usage="all", sampler=ds.PKSampler(2, shuffle=True))
    with shuffled.create_tuple_iterator(output_numpy=True, num_epochs=3) as it:
        epochs = [[int(r[1]) for r in it] for _ in range(3)]
    classes = sorted(set(labels.tolist()))
    for order in epochs:
        assert sorted(order[::2]) == classes and order[::2] == order[1::2]
    # as MindSpore, the classes are shuffled once per iterator (epochs redraw the rows only)
    assert len({tuple(o) for o in epochs}) == 1


def test_pk_sampler_needs_a_source_that_knows_its_classes():
    with pytest.raises(ValueError, match="NumpySlicesDataset doesn't support PKSampler"):
        ds.NumpySlicesDataset(np.arange(10), ["x"], sampler=ds.PKSampler(2))
    with pytest.raises(ValueError, match="MnistDataset doesn't support PKSampler"):
        ds.MnistDataset(MNIST, sampler=ds.PKSampler(2, class_column="image"))
    with pytest.raises(NotImplementedError, match="num_class"):
        ds.PKSampler(2, num_class=3)


def _write_idx(path, magic, shape, payload):
    with open(path, "wb") as f:
        f.write(struct.pack(f">I{len(shape)}I", magic, *shape) + payload)


def _mnist_folder(tmp_path, images_header=None, images_payload=None):
    for split, n in [("train", 2), ("t10k", 1)]:
        shape = images_header or (n, 28, 28)
        payload = images_payload if images_payload is not None else bytes(n * 784)
        _write_idx(tmp_path / f"{split}-images-idx3-ubyte", 0x803, shape, payload)
        _write_idx(tmp_path / f"{split}-labels-idx1-ubyte", 0x801, (n,), bytes(n))
    return tmp_path


def test_malformed_mnist_files_are_refused_naming_the_file(tmp_path):
    with pytest.raises(MalformedFileError, match="train-images-idx3-ubyte' declares shape"):
        ds.MnistDataset(str(_mnist_folder(tmp_path, images_payload=bytes(100))), usage="train")
    good = tmp_path / "good"
    good.mkdir()
    _mnist_folder(good)
    (good / "train-labels-idx1-ubyte").write_bytes(struct.pack(">II", 0x803, 2) + bytes(2))
    with pytest.raises(MalformedFileError, match="train-labels-idx1-ubyte' is not an idx file"):
        ds.MnistDataset(str(good), usage="train")
    _write_idx(good / "train-labels-idx1-ubyte", 0x801, (3,), bytes(3))
    with pytest.raises(MalformedFileError, match=r"holds 2 images but .* 3 labels"):
        ds.MnistDataset(str(good), usage="train")


def test_mnist_arguments_are_checked_naming_them(tmp_path):
    with pytest.raises(ValueError, match=r"MnistDataset: usage must be one of"):
        ds.MnistDataset(MNIST, usage="val")
    with pytest.raises(ValueError, match=r"MnistDataset: dataset_dir '.*' does not exist"):
        ds.MnistDataset(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"MnistDataset: no 'train-images' .* usage='train'"):
        ds.MnistDataset(str(tmp_path), usage="train")
    with pytest.raises(ValueError, match=r"MnistDataset: cache is not supported"):
        ds.MnistDataset(MNIST, cache=object())
    fifo = _mnist_folder(tmp_path) / "t10k-images-idx3-ubyte"
    fifo.unlink()
    os.mkfifo(fifo)  # a FIFO must not hang open()
    with pytest.raises(MalformedFileError, match="is not a regular file"):
        ds.MnistDataset(str(tmp_path), usage="test")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(header=st.binary(min_size=0, max_size=20), payload=st.binary(max_size=64))
def test_fuzzed_idx_headers_give_rows_or_a_clear_error(tmp_path, header, payload):
    folder = tmp_path / "fuzz"
    folder.mkdir(exist_ok=True)
    (folder / "train-images-idx3-ubyte").write_bytes(header + payload)
    _write_idx(folder / "train-labels-idx1-ubyte", 0x801, (1,), bytes(1))
    try:
        data = ds.MnistDataset(str(folder), usage="train", shuffle=False)
    except MalformedFileError:
        return
    rows = read(data)
    assert len(rows) == data.get_dataset_size()


# ---------------------------------------------------------------------------- CIFAR
def _cifar_file(path, n, label_bytes, rng):
    records = rng.integers(0, 256, (n, label_bytes + 3072), dtype=np.uint8)
    records.tofile(path)
    return records


def test_cifar10_layout_order_and_dtypes(tmp_path):
    rng = np.random.default_rng(3)
    files = {
        f"data_batch_{k}.bin": _cifar_file(tmp_path / f"data_batch_{k}.bin", k, 1, rng)
        for k in range(1, 6)
    }
    files["test_batch.bin"] = _cifar_file(tmp_path / "test_batch.bin", 2, 1, rng)
    order = sorted(files)  # MindSpore: data_batch_1..5, then test_batch (name order)
    assert order[-1] == "test_batch.bin"
    records = np.concatenate([files[name] for name in order])
    data = ds.Cifar10Dataset(str(tmp_path), usage="all", shuffle=False)
    got = read(data)
    assert data.get_col_names() == ["image", "label"] and data.get_dataset_size() == 17
    images = records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)  # CHW bytes -> HWC
    for (image, label), want_image, want_label in zip(got, images, records[:, 0]):
        assert image.dtype == np.uint8 and image.shape == (32, 32, 3)
        assert image.flags["C_CONTIGUOUS"]
        np.testing.assert_array_equal(image, want_image)
        assert label.dtype == np.uint32 and label.shape == () and label == want_label
    batches = read(ds.Cifar10Dataset(str(tmp_path), usage="train", shuffle=False).batch(6))
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), images[:15])
    assert len(read(ds.Cifar10Dataset(str(tmp_path), usage="test"))) == 2


def test_cifar100_columns_and_order(tmp_path):
    rng = np.random.default_rng(4)
    train = _cifar_file(tmp_path / "train.bin", 4, 2, rng)
    test = _cifar_file(tmp_path / "test.bin", 3, 2, rng)
    data = ds.Cifar100Dataset(str(tmp_path), shuffle=False)  # all: test, then train
    got = read(data)
    assert data.get_col_names() == ["image", "coarse_label", "fine_label"]
    records = np.concatenate([test, train])
    assert [(int(r[1]), int(r[2])) for r in got] == [tuple(map(int, r[:2])) for r in records]
    pk = ds.Cifar100Dataset(str(tmp_path), sampler=ds.PKSampler(1, class_column="fine_label"))
    assert sorted(rows_of(pk, 2)) == sorted(set(records[:, 1].tolist()))


def test_a_cifar_file_that_is_not_whole_records_is_refused(tmp_path):
    (tmp_path / "test_batch.bin").write_bytes(bytes(3073 * 2 + 5))
    with pytest.raises(MalformedFileError, match=r"test_batch\.bin' holds 6151 bytes"):
        ds.Cifar10Dataset(str(tmp_path), usage="test")
    with pytest.raises(ValueError, match=r"no CIFAR binary file .*'data_batch'.* usage='train'"):
        ds.Cifar10Dataset(str(tmp_path), usage="train")


# ---------------------------------------------------------------------------- samplers
def ids(sampler, n=10, workers=None):
    data = ds.NumpySlicesDataset(np.arange(n), ["x"], sampler=sampler)
    if workers:
        data = data.map(lambda x: x, num_parallel_workers=workers)
    return rows_of(data)


class EveryThird(ds.Sampler):
    def __iter__(self):
        return iter(range(0, 10, 3))


class Backwards(ds.Sampler):
    def __iter__(self):
        return iter(range(self.dataset_size - 1, -1, -4))


def chained(parent, child):
    parent.add_child(child)
    return parent


SAMPLER_CASES = {
    "sequential_2_5": lambda: ds.SequentialSampler(2, 5),
    "sequential_8": lambda: ds.SequentialSampler(8),
    "subset_ns3": lambda: ds.SubsetSampler([7, 2, 2, 9], num_samples=3),
    "chain_distributed_over_sequential": lambda: chained(
        ds.DistributedSampler(2, 1, shuffle=False), ds.SequentialSampler(3, 6)
    ),
    "chain_sequential_over_subset": lambda: chained(
        ds.SequentialSampler(1, 3), ds.SubsetSampler([9, 8, 7, 6, 5])
    ),
    "chain_subset_over_subset": lambda: chained(
        ds.SubsetSampler([0, 2]), ds.SubsetSampler([9, 8, 7, 6, 5])
    ),
    "user_every_third": lambda: EveryThird(),
    "user_every_third_ns2": lambda: EveryThird(num_samples=2),
    "user_dataset_size": lambda: Backwards(),
}


@pytest.mark.parametrize("name", sorted(SAMPLER_CASES))
def test_samplers_give_mindspores_indices(name):
    sampler = SAMPLER_CASES[name]()
    assert ids(sampler) == EXPECTED["samplers"][name]
    data = ds.NumpySlicesDataset(np.arange(10), ["x"], sampler=SAMPLER_CASES[name]())
    assert data.get_dataset_size() == len(EXPECTED["samplers"][name])


@pytest.mark.parametrize("offset", [-1, 0, 1, 3])
def test_distributed_sampler_offset_matches_mindspore(offset):
    shards = [ids(ds.DistributedSampler(3, k, shuffle=False, offset=offset)) for k in range(3)]
    assert shards == EXPECTED["samplers"][f"distributed_offset_{offset}"]
    limited = [ids(ds.DistributedSampler(3, k, shuffle=False, num_samples=2)) for k in range(3)]
    assert limited == EXPECTED["samplers"]["distributed_ns2"]


def test_use_sampler_replaces_the_sources_order():
    data = ds.NumpySlicesDataset(np.arange(10), ["x"], shuffle=False)
    data.use_sampler(ds.SequentialSampler(4, 3))
    assert rows_of(data) == EXPECTED["use_sampler_sequential_4_3"]
    assert data.get_dataset_size() == 3


def test_chained_random_samplers_are_seeded_and_independent_of_workers():
    def make():
        return chained(ds.DistributedSampler(2, 0), ds.RandomSampler())

    ds.config.set_seed(11)
    one = ids(make(), 40, workers=1)
    ds.config.set_seed(11)
    four = ids(make(), 40, workers=4)
    assert one == four and len(one) == 20 and len(set(one)) == 20
    ds.config.set_seed(12)
    assert ids(make(), 40) != one


def test_add_child_refuses_cycles_and_non_samplers():
    a, b = ds.SequentialSampler(), ds.RandomSampler()
    a.add_child(b)
    with pytest.raises(ValueError, match="cycle"):
        b.add_child(a)
    with pytest.raises(TypeError, match="add_child: sampler must be a jisu Sampler"):
        b.add_child([1, 2])
    assert a.get_child() is b


# ---------------------------------------------------------------------------- split
@pytest.mark.parametrize("case", sorted(EXPECTED["split"]))
def test_split_sizes_and_rounding_match_mindspore(case):
    n, sizes = case.split(" ", 1)
    parts = ds.NumpySlicesDataset(np.arange(int(n)), ["x"], shuffle=False).split(
        json.loads(sizes), randomize=False
    )
    assert [rows_of(p) for p in parts] == EXPECTED["split"][case]
    assert [p.get_dataset_size() for p in parts] == [len(r) for r in EXPECTED["split"][case]]


def test_a_randomized_split_of_a_shuffled_source_stays_disjoint_in_every_epoch():
    data = ds.MnistDataset(MNIST).map(lambda image: image // 2, "image")
    train, test = data.split([0.7, 0.3])  # rows are told apart by their image sums

    def epochs(part, count=4):
        with part.create_tuple_iterator(output_numpy=True, num_epochs=count) as it:
            return [[int(r[0].sum()) for r in it] for _ in range(count)]

    train_epochs, test_epochs = epochs(train), epochs(test)
    for a, b in zip(train_epochs, test_epochs):
        assert not set(a) & set(b) and len(a) == 7 and len(b) == 3
        assert len(set(a)) + len(set(b)) == 10
    assert all(sorted(e) == sorted(train_epochs[0]) for e in train_epochs)  # same rows ...
    assert len({tuple(e) for e in train_epochs}) > 1  # ... in a new order every epoch
    ds.config.set_seed(1234)
    again = ds.MnistDataset(MNIST).map(lambda image: image // 2, "image").split([0.7, 0.3])[0]
    assert sorted(epochs(again, 1)[0]) == sorted(train_epochs[0])  # the seed fixes the split


def test_split_of_other_pipelines_and_streams():
    batched = ds.NumpySlicesDataset(np.arange(10), ["x"], shuffle=False).batch(2)
    first, second = batched.split([2, 3])
    got = [
        [b.tolist() for (b,) in p.create_tuple_iterator(output_numpy=True)] for p in (first, second)
    ]
    flat = sorted(v for part in got for batch in part for v in batch)
    assert flat == list(range(10)) and [len(p) for p in got] == [2, 3]

    def gen():
        for i in range(10):
            yield (np.array(i),)

    stream = ds.GeneratorDataset(gen, ["x"])
    assert [rows_of(p) for p in stream.split([4, 6], randomize=False)] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7, 8, 9],
    ]
    with pytest.raises(ValueError, match="randomize=True needs a random-access dataset"):
        stream.split([4, 6])
    with pytest.raises(ValueError, match="split: the sizes sum to 9"):
        stream.split([4, 5], randomize=False)
    with pytest.raises(TypeError, match="split: sizes must be all ints or all floats"):
        batched.split([2, 0.6])


def test_mnist_usage_all_reads_the_splits_present(tmp_path):
    # MindSpore's tutorial layout: MNIST_Data/train holds only the train files
    _mnist_folder(tmp_path)
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (tmp_path / name).unlink()
    assert ds.MnistDataset(str(tmp_path)).get_dataset_size() == 2
    assert ds.MnistDataset(str(tmp_path), usage="all").get_dataset_size() == 2
    with pytest.raises(ValueError, match=r"no 't10k-images' idx file .* usage='test'"):
        ds.MnistDataset(str(tmp_path), usage="test")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"no 'train-images' or 't10k-images' .* usage='all'"):
        ds.MnistDataset(str(empty))


def test_cifar10_all_reads_the_files_present(tmp_path):
    """The model zoo's eval folder (cifar-10-verify-bin) holds test_batch.bin alone; a folder
    may hold one training batch (MindSpore reads what is there)."""
    rng = np.random.default_rng(5)
    verify = tmp_path / "verify"
    verify.mkdir()
    records = _cifar_file(verify / "test_batch.bin", 3, 1, rng)
    got = read(ds.Cifar10Dataset(str(verify), shuffle=False))
    assert [int(label) for _, label in got] == records[:, 0].tolist()
    batch = _cifar_file(verify / "data_batch_1.bin", 2, 1, rng)
    got = read(ds.Cifar10Dataset(str(verify), shuffle=False))  # data_batch_1, then test_batch
    assert [int(label) for _, label in got] == [*batch[:, 0].tolist(), *records[:, 0].tolist()]
    with pytest.raises(ValueError, match=r"no CIFAR binary file .* usage='all'"):
        ds.Cifar10Dataset(str(tmp_path))
