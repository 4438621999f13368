"""``GeneratorDataset(batch_sampler=, collate_fn=)``: each index list one batch, checked against
MindSpore 2.10's answers in ``tests/fixtures/ds_callbacks_config/expected.json`` (keys
``batch_sampler`` and ``batch_sampler_more``, recorded by ``make_fixtures.py`` there, whose
cases these rebuild), and jisu's own promises: workers (threads, processes) keep the batch
order, each epoch iterates the batch sampler again on the iterator's own copy, errors name
the batch and come at build time where jisu can know."""

from __future__ import annotations

import builtins
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu.dataset as ds

FIXTURE = Path(__file__).parents[2] / "fixtures" / "ds_callbacks_config" / "expected.json"
RECORDED = json.loads(FIXTURE.read_text())
WANT = RECORDED["batch_sampler"]
MORE = RECORDED["batch_sampler_more"]

pytestmark = pytest.mark.timeout(120)


class Source:
    """The recorded cases' source: row i is ([i, 10 i], 1.5 i)."""

    def __getitem__(self, i):
        return np.array([i, i * 10]), np.array(i * 1.5)

    def __len__(self):
        return 5


class Passes:
    """A batch sampler whose lists change each pass: shows when it is iterated."""

    def __init__(self):
        self.n = 0

    def __iter__(self):
        self.n += 1
        return iter([[self.n % 5], [0, self.n % 5]])

    def __len__(self):
        return 2


class NoLen:
    def __iter__(self):
        return iter([[0], [1], [2]])


class WrongLen(NoLen):
    def __len__(self):
        return 5


def pairs(a, b):
    return np.stack(a).sum(0), np.stack(b)


def gen_lists():
    yield [0, 1]


def epochs_rows(data, num_epochs: int = 1) -> list:
    it = data.create_tuple_iterator(num_epochs=num_epochs, output_numpy=True)
    return [[[c.tolist() for c in row] for row in it] for _ in range(num_epochs)]


def check_error(want: dict, build) -> None:
    """``build()`` (making and reading the pipeline) raises MindSpore's class."""
    cls = getattr(builtins, want["error"])
    with pytest.raises(cls) as info:
        epochs_rows(build())
    if want["runtime"]:
        assert isinstance(info.value, RuntimeError), type(info.value).__mro__


# ------------------------------------------------------------------ recorded: batch_sampler
CASES = {
    "lists": dict(batch_sampler=[[0, 1], [2, 3, 4]]),
    "lists_collate": dict(batch_sampler=[[0, 1], [3, 4]], collate_fn=pairs),
    "iterator": dict(batch_sampler=lambda: iter([[4, 0], [2]])),
    "collate_only": dict(collate_fn=pairs),
    "with_shuffle_false": dict(batch_sampler=[[0, 1]], shuffle=False),
    "with_shuffle_true": dict(batch_sampler=[[0, 1]], shuffle=True),
    "with_sampler": dict(batch_sampler=[[0, 1]], sampler=[0, 1]),
    "with_num_samples": dict(batch_sampler=[[0, 1]], num_samples=1),
    "with_shards": dict(batch_sampler=[[0, 1]], num_shards=2, shard_id=0),
    "int_sampler": dict(batch_sampler=3),
    "collate_not_callable": dict(batch_sampler=[[0, 1]], collate_fn=3),
    "collate_one_column": dict(batch_sampler=[[0, 1]], collate_fn=lambda a, b: np.stack(a)),
    "processes": dict(
        batch_sampler=[[0, 1], [2, 3, 4]], python_multiprocessing=True, num_parallel_workers=2
    ),
}


def make(kwargs: dict, source=None, columns=("a", "b")):
    kwargs = dict(kwargs)
    if callable(kwargs.get("batch_sampler")):  # a fresh one-shot iterator per call
        kwargs["batch_sampler"] = kwargs["batch_sampler"]()
    return ds.GeneratorDataset(Source() if source is None else source, list(columns), **kwargs)


@pytest.mark.parametrize("case", sorted(CASES))
def test_recorded_case(case):
    want = WANT[case]
    if "rows" in want:
        assert epochs_rows(make(CASES[case]))[0] == want["rows"]
    else:
        check_error(want, lambda: make(CASES[case]))


def test_recorded_iterable_source_refused():
    # a generator function is no random-access source: refused when built
    check_error(
        WANT["iterable_source"],
        lambda: ds.GeneratorDataset(lambda: iter([(np.array(1),)] * 3), ["a"], batch_sampler=[[0]]),
    )


def test_recorded_ragged_rows_without_collate():
    ragged = [(np.arange(i),) for i in range(1, 4)]
    check_error(
        WANT["ragged_no_collate"],
        lambda: ds.GeneratorDataset(ragged, ["a"], batch_sampler=[[0, 1, 2]]),
    )
    with pytest.raises(RuntimeError, match=r"batch 0 of epoch 0.*column 'a'.*collate_fn"):
        epochs_rows(ds.GeneratorDataset(ragged, ["a"], batch_sampler=[[0, 1, 2]]))


def test_recorded_dataset_size():
    data = ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=[[0, 1], [2, 3, 4]])
    assert data.get_dataset_size() == WANT["dataset_size"]


def test_every_recorded_case_is_checked():
    checked = set(CASES) | {"iterable_source", "ragged_no_collate", "dataset_size"}
    assert checked == set(WANT)


# ------------------------------------------------------------------ recorded: batch_sampler_more
MORE_CASES = {
    "tuple_lists": dict(batch_sampler=[(0, 1), (2,)]),
    "numpy_lists": dict(batch_sampler=[np.array([0, 1]), np.array([3])]),
    "index_past_end": dict(batch_sampler=[[0, 7]]),  # the source answers: MindSpore asks it
    "negative_index": dict(batch_sampler=[[0, -1]]),
    "empty_list": dict(batch_sampler=[[0], []]),
    "empty_sampler": dict(batch_sampler=[]),
    "flat_ints": dict(batch_sampler=[0, 1, 2]),
    "float_index": dict(batch_sampler=[[1.0]]),
    "builtin_sampler": dict(batch_sampler=lambda: ds.SequentialSampler(num_samples=3)),
    "string": dict(batch_sampler="ab"),
    "generator_object": dict(batch_sampler=gen_lists),
    "wrong_len": dict(batch_sampler=WrongLen()),
    "collate_three_columns": dict(
        batch_sampler=[[0, 1]], collate_fn=lambda a, b: (np.stack(a), np.stack(b), np.stack(b))
    ),
    "collate_list": dict(
        batch_sampler=[[0, 1]], collate_fn=lambda a, b: [np.stack(a), np.stack(b)]
    ),
    "collate_raises": dict(batch_sampler=[[0, 1]], collate_fn=lambda a, b: 1 / 0),
    "collate_other_row_count": dict(batch_sampler=[[0, 1, 2]], collate_fn=pairs),
    "collate_zero_d": dict(
        batch_sampler=[[0, 1, 2]], collate_fn=lambda a, b: (np.array(5), np.stack(b))
    ),
    "processes_many": dict(
        batch_sampler=[[i, (i + 1) % 5] for i in range(5)] * 4,
        python_multiprocessing=True,
        num_parallel_workers=2,
    ),
}
#: MindSpore refuses these when it runs; jisu when the pipeline is built (the lists are known)
BUILD_TIME = {"empty_list", "empty_sampler", "flat_ints", "float_index", "builtin_sampler"}
BUILD_TIME |= {"string", "generator_object"}


@pytest.mark.parametrize("case", sorted(MORE_CASES))
def test_recorded_more(case):
    want = MORE[case]
    if "rows" in want:
        assert epochs_rows(make(MORE_CASES[case]))[0] == want["rows"]
        return
    check_error(want, lambda: make(MORE_CASES[case]))
    if case in BUILD_TIME:
        with pytest.raises(RuntimeError):
            make(MORE_CASES[case])


def test_recorded_epochs_iterate_a_copy_again():
    passes = Passes()
    data = ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=passes)
    assert epochs_rows(data, 3) == MORE["epochs"]
    assert epochs_rows(data, 1) == MORE["epochs_again"]  # a new iterator: a fresh copy
    assert passes.n == MORE["user_object_iterated"] == 0


def test_recorded_repeat_passes():
    data = ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=Passes()).repeat(2)
    assert epochs_rows(data, 1) == MORE["repeat"]


def test_recorded_size_without_len_counts_a_copy():
    sampler = NoLen()
    data = ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=sampler)
    assert data.get_dataset_size() == MORE["no_len_size"]
    assert len(epochs_rows(data)[0]) == MORE["no_len_size"]


def test_recorded_one_shot_iterator():
    once = ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=iter([[0, 1], [2]]))
    assert [len(epochs_rows(once)[0]), len(epochs_rows(once)[0])] == MORE["iterator_two_iterators"]
    assert MORE["iterator_two_epochs"] == "error"
    with pytest.raises(RuntimeError, match="no index lists"):
        epochs_rows(once, 2)  # the copy's second pass is empty


def test_recorded_ops_after_and_metadata():
    def base():
        return ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=[[0, 1], [2, 3]])

    doubled = base().map(lambda x: x * 2, input_columns=["b"])
    assert epochs_rows(doubled)[0] == MORE["then_map"]
    assert epochs_rows(base().batch(2))[0] == MORE["then_batch"]
    data = base()
    assert data.get_col_names() == MORE["columns"]
    assert [list(s) for s in data.output_shapes()] == MORE["shapes"]
    assert [str(np.dtype(t)) for t in data.output_types()] == MORE["types"]


def test_every_recorded_more_case_is_checked():
    own = {"epochs", "epochs_again", "user_object_iterated", "repeat", "no_len_size"}
    own |= {"iterator_two_iterators", "iterator_two_epochs", "then_map", "then_batch"}
    own |= {"columns", "shapes", "types"}
    assert set(MORE_CASES) | own == set(MORE)


# ------------------------------------------------------------------ jisu's own promises
def expected_batches(lists):
    """Each list's batch by the formula: column a stacks [i, 10 i], column b 1.5 i."""
    return [[[[i, 10 * i] for i in lst], [1.5 * i for i in lst]] for lst in lists]


@pytest.mark.parametrize("processes", [False, True])
def test_workers_keep_the_batch_order(processes):
    lists = [[(7 * k) % 5, (3 * k + 1) % 5, k % 5][: 1 + k % 3] for k in range(40)]
    data = ds.GeneratorDataset(
        Source(),
        ["a", "b"],
        batch_sampler=lists,
        num_parallel_workers=2,
        python_multiprocessing=processes,
    )
    assert epochs_rows(data, 2) == [expected_batches(lists)] * 2


class PidSource(Source):
    def __getitem__(self, i):
        return np.array(os.getpid()), np.array(i)


def test_processes_read_and_collate_in_workers():
    def collate(pid, index):  # runs where the batch is made
        return np.array(pid), np.array([os.getpid()] * len(index))

    data = ds.GeneratorDataset(
        PidSource(),
        ["pid", "where"],
        batch_sampler=[[0, 1], [2], [3, 4]] * 4,
        collate_fn=collate,
        num_parallel_workers=2,
        python_multiprocessing=True,
    )
    rows = epochs_rows(data)[0]
    assert len(rows) == 12
    pids = {p for pid, where in rows for p in pid + where}
    assert os.getpid() not in pids


def test_collate_fn_gets_one_list_per_column():
    seen = []

    def collate(a, b):
        seen.append((type(a), len(a), [x.tolist() for x in b]))
        return np.stack(a), np.stack(b)

    epochs_rows(
        ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=[[3, 1]], collate_fn=collate)
    )
    assert seen == [(list, 2, [4.5, 1.5])]


def test_torch_batch_sampler():
    seq = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(5)), 2, False)
    data = ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=seq)
    assert data.get_dataset_size() == 3
    assert epochs_rows(data)[0] == expected_batches([[0, 1], [2, 3], [4]])


@pytest.mark.parametrize("processes", [False, True])
def test_seeded_torch_random_batches_are_one_permutation_per_epoch(processes):
    def make_data():
        generator = torch.Generator().manual_seed(7)
        random = torch.utils.data.RandomSampler(range(5), generator=generator)
        sampler = torch.utils.data.BatchSampler(random, 2, False)
        return ds.GeneratorDataset(
            Source(),
            ["a", "b"],
            batch_sampler=sampler,
            num_parallel_workers=2,
            python_multiprocessing=processes,
        )

    epochs = epochs_rows(make_data(), 3)
    for rows in epochs:
        assert sorted(i for a, _ in rows for i, _ in a) == list(range(5))
    assert epochs_rows(make_data(), 3) == epochs  # the same draws from the same seed
    assert len({json.dumps(e) for e in epochs}) > 1  # each epoch drew again


def test_a_lying_len_names_the_epoch():
    with pytest.raises(RuntimeError, match=r"3 index lists in epoch 0 but 5 batches"):
        epochs_rows(ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=WrongLen()))


def test_collate_errors_name_the_batch():
    bad = ds.GeneratorDataset(
        Source(), ["a", "b"], batch_sampler=[[0], [1]], collate_fn=lambda a, b: 1 / 0
    )
    with pytest.raises(ZeroDivisionError, match="batch 0 of epoch 0: collate_fn"):
        epochs_rows(bad)
    short = ds.GeneratorDataset(
        Source(), ["a", "b"], batch_sampler=[[0]], collate_fn=lambda a, b: (np.stack(a),)
    )
    with pytest.raises(RuntimeError, match=r"returned 1 values.*\['a', 'b'\]"):
        epochs_rows(short)


def test_build_time_messages():
    with pytest.raises(ValueError, match=r"mutually exclusive.*'shuffle'"):
        ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=[[0]], shuffle=False)
    with pytest.raises(TypeError, match=r"iterable of index lists\. Received: batch_sampler=3"):
        ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=3)
    with pytest.raises(ValueError, match="collate_fn can be given only with batch_sampler"):
        ds.GeneratorDataset(Source(), ["a", "b"], collate_fn=pairs)
    with pytest.raises(RuntimeError, match="gave \\[\\] as batch 1"):
        ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=[[0], []])


def test_positional_batch_sampler_and_pickle():
    args = [Source(), ["a", "b"], None, None, None, None, None, None, None, None, False, None]
    data = ds.GeneratorDataset(*args, [[1, 2]], pairs)
    assert epochs_rows(data)[0] == [[[3, 30], [1.5, 3.0]]]
    again = pickle.loads(
        pickle.dumps(ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=[[4]]))
    )
    assert isinstance(again, ds.GeneratorDataset)
    assert epochs_rows(again)[0] == expected_batches([[4]])


def test_use_sampler_refused():
    data = ds.GeneratorDataset(Source(), ["a", "b"], batch_sampler=[[0]])
    with pytest.raises(ValueError, match="cannot replace a batch_sampler"):
        data.use_sampler(ds.SequentialSampler())
