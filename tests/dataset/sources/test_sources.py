"""Sources: GeneratorDataset (function, iterable, random access), NumpySlices, torch, samplers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import jisu
import jisu.dataset as ds
from jisu.dataset.core.access import is_random_access
from jisu.dataset.sources.samplers import IterableSampler
from tests.conftest import rows_of


def gen10():
    for i in range(10):
        yield np.array(i), np.array([i, 2 * i])


class Squares:
    """A random-access source."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if not 0 <= i < 12:
            raise IndexError(i)
        return np.array(i * i), np.float32(i)


def test_generator_function_runs_once_per_epoch_in_order():
    data = ds.GeneratorDataset(gen10, ["a", "b"])
    assert rows_of(data, None) == [[i, [i, 2 * i]] for i in range(10)]
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    assert [int(r[0]) for r in it] == list(range(10))
    assert [int(r[0]) for r in it] == list(range(10))
    with pytest.raises(RuntimeError, match="epoch\\(s\\) are consumed"):
        next(it)


def test_iterable_source_and_single_column_items():
    class Iterable:
        def __iter__(self):
            return iter([np.arange(3) + i for i in range(4)])

    data = ds.GeneratorDataset(Iterable(), ["x"])
    assert not is_random_access(data)
    assert rows_of(data) == [[i, i + 1, i + 2] for i in range(4)]
    assert data.get_dataset_size() == 4  # counted by running the pipeline
    as_list = ds.GeneratorDataset([np.arange(3) + i for i in range(4)], ["x"], shuffle=False)
    assert is_random_access(as_list) and rows_of(as_list) == rows_of(data)


def test_random_access_source_is_shuffled_by_default_and_covers_every_index():
    data = ds.GeneratorDataset(Squares(), ["sq", "f"])
    values = rows_of(data)
    assert sorted(values) == [i * i for i in range(12)]
    assert values != [i * i for i in range(12)]
    assert rows_of(ds.GeneratorDataset(Squares(), ["sq", "f"], shuffle=False)) == [
        i * i for i in range(12)
    ]


def test_column_types_cast_and_python_values_become_arrays():
    def gen():
        for i in range(3):
            yield i, [float(i)] * 2, f"s{i}"

    data = ds.GeneratorDataset(gen, ["i", "f", "s"], column_types=[np.int32, jisu.float32, None])
    row = next(iter(data.create_tuple_iterator(output_numpy=True)))
    assert row[0].dtype == np.int32 and row[1].dtype == np.float32 and row[2].dtype.kind == "U"
    torch_row = next(iter(data))
    assert torch_row[0].dtype == torch.int32
    assert isinstance(torch_row[2], np.ndarray)  # strings stay NumPy


def test_generator_num_samples_limits_rows():
    assert rows_of(ds.GeneratorDataset(gen10, ["a", "b"], num_samples=4)) == [0, 1, 2, 3]
    data = ds.GeneratorDataset(Squares(), ["a", "b"], num_samples=5, shuffle=False)
    assert data.get_dataset_size() == 5 and rows_of(data) == [0, 1, 4, 9, 16]


def test_shards_of_random_access_source_match_mindspore():
    # MindSpore 2.10: NumpySlicesDataset(np.arange(7), shuffle=False, num_shards=3, shard_id=k)
    expected = {0: [0, 3, 6], 1: [1, 4, 0], 2: [2, 5, 1]}
    for k, rows in expected.items():
        data = ds.NumpySlicesDataset(np.arange(7), shuffle=False, num_shards=3, shard_id=k)
        assert rows_of(data) == rows
        assert data.get_dataset_size() == 3


def test_shards_of_iterable_source_wrap_like_random_access():
    for k in range(3):
        it_rows = rows_of(ds.GeneratorDataset(gen10, ["a", "b"], num_shards=3, shard_id=k))
        ra_rows = rows_of(
            ds.NumpySlicesDataset(np.arange(10), shuffle=False, num_shards=3, shard_id=k)
        )
        assert it_rows == ra_rows


def test_shuffled_shards_partition_the_data():
    shards = [
        rows_of(ds.NumpySlicesDataset(np.arange(9), shuffle=True, num_shards=3, shard_id=k))
        for k in range(3)
    ]
    assert sorted(v for s in shards for v in s) == list(range(9))


def test_iterable_shuffle_is_a_seeded_permutation_that_changes_per_epoch():
    data = ds.GeneratorDataset(gen10, ["a", "b"], shuffle=True)
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    first, second = [int(r[0]) for r in it], [int(r[0]) for r in it]
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != second
    assert rows_of(data) == first  # same seed, same order


@pytest.mark.parametrize(
    "data, names, columns",
    [
        (np.arange(6).reshape(3, 2), ["column_0"], [[[0, 1], [2, 3], [4, 5]]]),
        ([1, 2, 3], ["column_0"], [[1, 2, 3]]),
        ((np.arange(3), np.arange(3) * 2), ["column_0", "column_1"], [[0, 1, 2], [0, 2, 4]]),
        ({"x": [1, 2], "y": [3, 4]}, ["x", "y"], [[1, 2], [3, 4]]),
    ],
)
def test_numpy_slices_forms(data, names, columns):
    d = ds.NumpySlicesDataset(data, shuffle=False)
    assert d.get_col_names() == names
    for k, expected in enumerate(columns):
        assert rows_of(d, k) == expected


def test_numpy_slices_shuffles_by_default_and_rejects_bad_data():
    values = rows_of(ds.NumpySlicesDataset(np.arange(50)))
    assert sorted(values) == list(range(50)) and values != list(range(50))
    with pytest.raises(ValueError, match="same length"):
        ds.NumpySlicesDataset((np.arange(3), np.arange(4)))
    with pytest.raises(ValueError, match="column_names has 1"):
        ds.NumpySlicesDataset((np.arange(3), np.arange(3)), column_names=["a"])


def test_torch_map_style_and_iterable_datasets():
    class MapStyle(torch.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": torch.full((2,), float(i)), "y": i}

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            for i in range(4):
                yield torch.tensor([i, i]), torch.tensor(i)

    data = ds.TorchDataset(MapStyle(), shuffle=False)
    assert data.get_col_names() == ["x", "y"] and is_random_access(data)
    assert rows_of(data, 0) == [[float(i)] * 2 for i in range(5)]
    stream = ds.TorchDataset(Stream())
    assert not is_random_access(stream)
    assert rows_of(stream, 1) == [0, 1, 2, 3]


def test_samplers():
    def run(sampler):
        return rows_of(ds.GeneratorDataset(Squares(), ["a", "b"], sampler=sampler), 1)

    assert run(ds.SequentialSampler(start_index=3, num_samples=4)) == [3.0, 4.0, 5.0, 6.0]
    assert sorted(run(ds.RandomSampler())) == [float(i) for i in range(12)]
    assert run(ds.SubsetSampler([5, 1, 7])) == [5.0, 1.0, 7.0]
    assert sorted(run(ds.SubsetRandomSampler([5, 1, 7]))) == [1.0, 5.0, 7.0]
    assert run([2, 2, 0]) == [2.0, 2.0, 0.0]
    shards = [run(ds.DistributedSampler(4, k, shuffle=False)) for k in range(4)]
    assert shards == [[0.0, 4.0, 8.0], [1.0, 5.0, 9.0], [2.0, 6.0, 10.0], [3.0, 7.0, 11.0]]
    weighted = run(ds.WeightedRandomSampler([0, 0, 1] + [0] * 9, num_samples=5))
    assert weighted == [2.0] * 5


def test_non_thread_safe_source_is_never_read_concurrently():
    import threading
    import time

    class Guarded:
        def __init__(self):
            self.inside = 0
            self.max_inside = 0
            self.lock = threading.Lock()

        def __len__(self):
            return 40

        def __getitem__(self, i):
            with self.lock:
                self.inside += 1
                self.max_inside = max(self.max_inside, self.inside)
            time.sleep(0.001)
            with self.lock:
                self.inside -= 1
            return np.array(i)

    source = Guarded()
    data = ds.GeneratorDataset(source, ["x"], shuffle=False).map(
        lambda x: x + 1, num_parallel_workers=4
    )
    assert rows_of(data) == list(range(1, 41))
    assert source.max_inside == 1


def test_sampler_counts_match_their_indices():
    rng = np.random.default_rng(0)
    samplers = [
        ds.SequentialSampler(),
        ds.SequentialSampler(3, 4),
        ds.SequentialSampler(50),
        ds.RandomSampler(),
        ds.RandomSampler(True, 7),
        ds.RandomSampler(num_samples=5),
        ds.DistributedSampler(3, 1),
        ds.DistributedSampler(4, 0, num_samples=2),
        ds.SubsetSampler([1, 2, 3]),
        ds.SubsetRandomSampler([4, 5], num_samples=1),
        ds.WeightedRandomSampler([1, 2, 3], 10),
        IterableSampler(IterRange()),
    ]
    for sampler in samplers:
        for n in (0, 1, 10, 31):
            if n == 0 and isinstance(sampler, (ds.RandomSampler,)) and sampler.replacement:
                continue
            start = getattr(sampler, "start_index", 0)
            if start and start >= n:  # past the data: refused both ways, as in MindSpore
                with pytest.raises(RuntimeError, match="start_index must be less"):
                    sampler.count(n)
                with pytest.raises(RuntimeError, match="start_index must be less"):
                    sampler.indices(n, rng)
                continue
            assert sampler.count(n) == len(sampler.indices(n, rng)), (sampler, n)


class IterRange:  # an iterable without a length
    def __iter__(self):
        return iter(range(6))


def test_shards_default_to_the_torch_distributed_group(monkeypatch):
    import torch.distributed as dist

    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda: 3)
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    assert rows_of(ds.NumpySlicesDataset(np.arange(7), shuffle=False)) == [1, 4, 0]


def test_generator_failure_names_the_row():
    def gen():
        for i in range(10):
            if i == 3:
                raise RuntimeError("stream broke")
            yield (np.array(i),)

    with pytest.raises(RuntimeError, match=r"the source raised at row 3: RuntimeError: stream"):
        rows_of(ds.GeneratorDataset(gen, ["x"]).batch(2))


def test_each_repeat_is_a_new_epoch_with_a_new_order():
    data = ds.NumpySlicesDataset(np.arange(20)).repeat(2)
    rows = rows_of(data)
    first, second = rows[:20], rows[20:]
    assert sorted(first) == sorted(second) == list(range(20))
    assert first != second


def test_iterable_with_length_reports_its_size_with_shards_and_num_samples():
    class Sized:
        def __len__(self):
            return 10

        def __iter__(self):
            return ((np.array(i),) for i in range(10))

    for kwargs, size in [
        ({}, 10),
        ({"num_shards": 3, "shard_id": 2}, 4),
        ({"num_shards": 3, "shard_id": 0, "num_samples": 2}, 2),
    ]:
        data = ds.GeneratorDataset(Sized(), ["x"], **kwargs)
        assert data._row_count() == size
        assert len(rows_of(data)) == size


def test_read_options_are_checked_once_for_every_source_naming_it(tmp_path):
    with pytest.raises(TypeError, match=r"NumpySlicesDataset: shuffle must be a bool or None"):
        ds.NumpySlicesDataset(np.arange(4), shuffle=ds.Shuffle.FILES)
    with pytest.raises(TypeError, match=r"GeneratorDataset: shuffle must be a bool or None"):
        ds.GeneratorDataset(Squares(), ["x"], shuffle="yes")
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "0.jpg").write_bytes(b"x")
    with pytest.raises(ValueError, match=r"ImageFolderDataset: sampler cannot be combined"):
        ds.ImageFolderDataset(str(tmp_path), sampler=[0], shuffle=False)
    with pytest.raises(ValueError, match=r"NumpySlicesDataset: num_samples must be"):
        ds.NumpySlicesDataset(np.arange(4), num_samples=-1)


def test_image_folder_takes_a_sampler(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for k in range(3):
            (tmp_path / name / f"{k}.jpg").write_bytes(bytes([k]) * 4)
    data = ds.ImageFolderDataset(str(tmp_path), sampler=ds.SubsetSampler([5, 0, 3]))
    assert rows_of(data, 1) == [1, 0, 1]
    assert [bytes(r[0]) for r in data.create_tuple_iterator(output_numpy=True)] == [
        bytes([2]) * 4,
        bytes([0]) * 4,
        bytes([0]) * 4,
    ]
