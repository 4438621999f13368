"""Samplers as MindSpore 2.10 runs them (issue 51, bugs 6-8): a list of indices with
``num_samples``, a user sampler's ``reset()`` between passes, and ``concat`` read through a
``DistributedSampler``. Expectations are MindSpore's, recorded by
``tests/fixtures/sampler_parity/make_fixtures.py``."""

import json
import os

import numpy as np
import pytest

import jisu.dataset as ds

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "sampler_parity")
with open(os.path.join(FIXTURES, "expected.json")) as _f:
    EXPECTED = json.load(_f)

pytestmark = pytest.mark.timeout(120)


def rows_of(dataset, **kwargs):
    it = dataset.create_tuple_iterator(output_numpy=True, **kwargs)
    return [int(np.ravel(r[0])[0]) for r in it]


# ----------------------------------------------------------------- bug 6: list + num_samples
def _list_source(kind, sampler, num_samples):
    if kind == "numpy":
        return ds.NumpySlicesDataset(np.arange(10), ["c"], sampler=sampler, num_samples=num_samples)
    rows = [(np.array(i),) for i in range(10)]
    return ds.GeneratorDataset(rows, ["c"], sampler=sampler, num_samples=num_samples)


@pytest.mark.parametrize(
    "case",
    EXPECTED["list_sampler"],
    ids=lambda c: f"{c['kind']}-{len(c['sampler'])}-{c['num_samples']}",
)
def test_a_list_sampler_reads_its_first_num_samples_indices(case):
    d = _list_source(case["kind"], case["sampler"], case["num_samples"])
    assert rows_of(d) == case["rows"]
    assert d.get_dataset_size() == case["size"]


@pytest.mark.parametrize("case", EXPECTED["sampler_with_num_samples"], ids=lambda c: c["sampler"])
@pytest.mark.parametrize("kind", ["numpy", "generator"])
def test_a_sampler_object_with_num_samples_is_refused_at_build_time(case, kind):
    assert case["error"] == "ValueError"  # MindSpore: "Conflicting arguments ..."
    sampler = getattr(ds, case["sampler"])(*([[0, 9, 3, 2]] if "Subset" in case["sampler"] else []))
    with pytest.raises(ValueError, match="sampler cannot be combined with num_samples"):
        _list_source(kind, sampler, 2)


def test_other_sources_refuse_a_sampler_with_num_samples(tmp_path):
    # MindSpore 2.10: RuntimeError "sampler and num_samples cannot be specified at the same
    # time" from ImageFolderDataset and MindDataset, for a list as for a sampler object
    from PIL import Image

    (tmp_path / "a").mkdir()
    Image.new("RGB", (2, 2)).save(tmp_path / "a" / "x.png")
    for sampler in ([0], ds.SequentialSampler()):
        with pytest.raises(RuntimeError, match="ImageFolderDataset: sampler cannot be combined"):
            ds.ImageFolderDataset(str(tmp_path), sampler=sampler, num_samples=1)


# ----------------------------------------------------------------- bug 7: reset() per pass
LOG = []


class Logged(ds.Sampler):
    def __iter__(self):
        LOG.append("iter")
        return iter([0, 1, 2])

    def reset(self):
        LOG.append("reset")


class Shifting(ds.Sampler):
    """Gives ``[k, k + 1, k + 2]`` where ``k`` counts its resets."""

    def __init__(self):
        super().__init__()
        self.k = 0

    def __iter__(self):
        return iter([self.k, self.k + 1, self.k + 2])

    def reset(self):
        self.k += 1


def _run(sampler, repeat, epochs):
    d = ds.NumpySlicesDataset(np.arange(10), ["c"], sampler=sampler)
    if repeat > 1:
        d = d.repeat(repeat)
    it = d.create_tuple_iterator(output_numpy=True, num_epochs=epochs)
    return [[int(r[0]) for r in it] for _ in range(epochs)]


RUNS = {"one_epoch": (1, 1), "repeat_2": (2, 1), "epochs_2": (1, 2), "repeat_2_epochs_2": (2, 2)}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_user_samplers_reset_follows_every_pass_as_in_mindspore(name):
    LOG.clear()
    _run(Logged(), *RUNS[name])
    # MindSpore: one __iter__ to count the rows, then per pass (repeat or epoch) __iter__
    # and, once the pass is over, reset()
    assert EXPECTED["reset_calls"][name] == LOG


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_sampler_that_changes_on_reset_gives_mindspores_rows(name):
    assert _run(Shifting(), *RUNS[name]) == EXPECTED["reset_rows"][name]


def test_each_iterator_resets_its_own_copy_of_the_sampler():
    # MindSpore copies the pipeline for each iterator: the second starts where the first did
    sampler = Shifting()
    d = ds.NumpySlicesDataset(np.arange(10), ["c"], sampler=sampler)
    assert [rows_of(d, num_epochs=1) for _ in range(2)] == EXPECTED["reset_rows"]["two_iterators"]
    assert sampler.k == 0
    # one reset per pass in each iterator (MindSpore also calls __iter__ once per iterator to
    # count; jisu counts once per sampler)
    LOG.clear()
    d = ds.NumpySlicesDataset(np.arange(10), ["c"], sampler=Logged())
    for _ in range(2):
        rows_of(d, num_epochs=1)
    assert LOG.count("reset") == EXPECTED["reset_calls"]["two_iterators"].count("reset") == 2


def test_passes_are_drawn_in_turn_whatever_the_workers_and_batching():
    # many workers and a batch above may ask for a pass's order from several threads, and for
    # the next pass before this one is done: each pass is still drawn once, in order
    want = [[k, k + 1, k + 2] for k in range(6)]
    d = ds.GeneratorDataset(
        [(np.array(i),) for i in range(10)], ["c"], sampler=Shifting(), num_parallel_workers=4
    )
    got = [r[0].tolist() for r in d.repeat(6).batch(3).create_tuple_iterator(output_numpy=True)]
    assert got == want


def test_a_user_sampler_chained_under_a_builtin_one_is_reset_too():
    child = Shifting()
    top = ds.SequentialSampler(num_samples=2)
    top.add_child(child)
    d = ds.NumpySlicesDataset(np.arange(10), ["c"], sampler=top).repeat(3)
    assert rows_of(d) == [0, 1, 1, 2, 2, 3]


# ----------------------------------------------------------------- bug 8: concat + shards
def _parts(kind, lengths):
    if kind == "numpy":
        return [
            ds.NumpySlicesDataset(np.arange(100 * k, 100 * k + n), ["c"], shuffle=False)
            for k, n in enumerate(lengths)
        ]

    def rows(first, n):
        def gen():
            for i in range(first, first + n):
                yield (np.array([i]),)

        return gen

    return [ds.GeneratorDataset(rows(100 * k, n), ["c"]) for k, n in enumerate(lengths)]


def _joined(parts):
    d = parts[0]
    for p in parts[1:]:
        d = d + p
    return d


@pytest.mark.parametrize(
    "case",
    EXPECTED["concat_distributed"],
    ids=lambda c: f"{c['kind']}-{c['lengths']}-{c['num_shards']}-{c['shard_id']}",
)
def test_concat_through_a_distributed_sampler_matches_mindspore(case):
    d = _joined(_parts(case["kind"], case["lengths"]))
    d.use_sampler(ds.DistributedSampler(case["num_shards"], case["shard_id"], shuffle=False))
    assert rows_of(d) == case["rows"]
    assert d.get_dataset_size() == case["size"] == len(case["rows"])


@pytest.mark.parametrize("when", ["after", "before"])
def test_replacing_a_concats_sampler_recounts_its_size(when):
    # MindSpore's test_concat_17: one nested concat of iterable sources, its sampler replaced
    # shard after shard; the size was the first shard's for every later one
    a, b, c, e = _parts("generator", [3, 7, 10, 9])
    d = (a + b) + (c + e)
    expected = [x for x in EXPECTED["concat_reused"] if x["size_asked"] == when]
    for case in expected:
        d.use_sampler(ds.DistributedSampler(10, case["shard_id"], shuffle=False))
        size = d.get_dataset_size() if when == "before" else None
        rows = rows_of(d, num_epochs=1)
        size = d.get_dataset_size() if when == "after" else size
        assert (rows, size) == (case["rows"], case["size"])
        assert size == len(rows)
