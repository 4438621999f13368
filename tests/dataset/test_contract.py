"""The node contract (``jisu.dataset.core.node``) over every ``Dataset`` subclass jisu defines,
and the iterator state's round trip at every position of a pipeline of each op.

The engine knows a node only through the contract: its stage kind, random-access kernels or
inline stream, row count, epoch fold, parallelism and label. A class that misses a piece
would fail only when a pipeline first reaches it; this test finds it at once.
"""

from __future__ import annotations

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.core.access import RandomAccess
from jisu.dataset.core.node import Dataset, Parallelism
from jisu.dataset.engine.plan import plan
from jisu.dataset.engine.tasks import StreamCut

STAGE_KINDS = (None, "map", "batch", "filter", "read")
for _name in ds.__all__:  # the package imports its names when used: every node class, now
    getattr(ds, _name)


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("jisu."):
            found += [sub, *_subclasses(sub)]
    return sorted(set(found), key=lambda c: (c.__module__, c.__qualname__))


#: (``StreamCut`` stands, in a worker's copy of a stage, for the stream that feeds the stage:
#: its rows arrive with each task, so it is never run itself)
NODE_CLASSES = [c for c in _subclasses(Dataset) if c is not StreamCut]


def _overrides(cls: type, name: str) -> bool:
    return getattr(cls, name) is not getattr(Dataset, name)


def test_the_classes_are_found():
    names = {c.__qualname__ for c in NODE_CLASSES}
    assert {"MapDataset", "BatchDataset.Indexed", "GeneratorDataset", "ZipDataset"} <= names
    assert len(NODE_CLASSES) > 60


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_node_class_keeps_the_contract(cls):
    assert _overrides(cls, "_row_count"), "every node class says how many rows it has"
    assert isinstance(cls.op_name, (str, property))
    if issubclass(cls, RandomAccess):
        assert cls._fetch is not RandomAccess._fetch, "random-access kernels compute a row"
    kind = cls.stream_stage
    if isinstance(kind, property):  # a source: a "read" stage in skip mode, else inline
        assert _overrides(cls, "_stream_rows") or issubclass(cls, RandomAccess)
        return
    assert kind in STAGE_KINDS
    if kind is None and not issubclass(cls, RandomAccess) and cls.random_access_kernels is None:
        assert _overrides(cls, "_stream_rows"), "a stream run inline yields its rows"
    if cls.random_access_kernels is not None and not issubclass(cls, RandomAccess):
        assert cls.Indexed.__bases__ == (cls.random_access_kernels, cls)


def _numbers(n: int = 10) -> ds.Dataset:
    return ds.NumpySlicesDataset({"x": np.arange(n)}, shuffle=False)


def _stream(n: int = 10) -> ds.Dataset:
    def rows():
        for i in range(n):
            yield (np.array(i),)

    return ds.GeneratorDataset(rows, ["x"])


#: one pipeline per op, on a random-access source and on a stream
PIPELINES = {
    "map": lambda s: s.map(lambda x: x * 2),
    "batch": lambda s: s.batch(3),
    "filter": lambda s: s.filter(lambda x: x % 3 != 0),
    "shuffle": lambda s: s.shuffle(4),
    "repeat": lambda s: s.repeat(2),
    "shard": lambda s: s.shard(3, 1),
    "take": lambda s: s.take(7),
    "skip": lambda s: s.skip(3),
    "project": lambda s: s.map(lambda x: (x, x + 1), output_columns=["x", "y"]).project("y"),
    "rename": lambda s: s.rename("x", "z"),
    "zip": lambda s: s.zip(_numbers().rename("x", "w")),
    "concat": lambda s: s.concat(_numbers(4)),
    "bucket_batch": lambda s: s.map(lambda x: np.zeros(int(x) % 3 + 1)).bucket_batch_by_length(
        ["x"], [2, 3], [2, 2, 2]
    ),
    "map_batch_chain": lambda s: s.map(lambda x: x + 1).batch(2, drop_remainder=True).repeat(2),
}


def _rows(iterator) -> list[list]:
    return [[np.asarray(c).tolist() for c in row] for row in iterator]


@pytest.mark.parametrize("source", [_numbers, _stream], ids=["random_access", "stream"])
@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_get_state_and_set_state_round_trip_at_every_position(name, source):
    ds.config.set_seed(7)
    build = PIPELINES[name]
    with build(source()).create_tuple_iterator(num_epochs=2, output_numpy=True) as it:
        epochs = [_rows(it), _rows(it)]
    every = [(e, k) for e, rows in enumerate(epochs) for k in range(len(rows) + 1)]
    for epoch, position in every:
        it = build(source()).create_tuple_iterator(num_epochs=2, output_numpy=True)
        for _ in range(epoch):
            _rows(it)
        for _ in range(position):
            next(it)
        state = it.get_state()
        it.close()
        resumed = build(source()).create_tuple_iterator(num_epochs=2, output_numpy=True)
        resumed.set_state(state)
        rest = _rows(resumed)
        if epoch == 0:
            rest += _rows(resumed)
        resumed.close()
        expected = epochs[epoch][position:] + (epochs[1] if epoch == 0 else [])
        assert rest == expected, f"{name}: resumed at epoch {epoch}, row {position}"


def test_describe_is_the_label_of_explain_and_of_stage_titles():
    data = _numbers().map([lambda x: x], input_columns="x").filter(lambda x: x > 1).batch(2)
    text = data.explain()
    ids = plan(data).ids
    node = data
    while node.children:
        assert node.describe(ids[id(node)]) in text
        node = node.children[0]
    assert data.describe() == "batch(2)"
    assert data.children[0].describe(3) == "filter#3(<lambda>)"


def test_parallelism_says_what_a_node_asks_for(at_least_two_cpus):
    mapped = _numbers().map(lambda x: x, num_parallel_workers=2, python_multiprocessing=True)
    assert mapped.parallelism == Parallelism(2, 2, True, False)
    assert _numbers().parallelism == Parallelism(None, 1, False, False)
    assert _stream().parallelism.serial_reads


def test_batch_leaves_its_child_as_it_was_and_the_plan_counts_rows_per_batch():
    point = _numbers(12).sync_wait("c", num_batch=1)
    before = {k: v for k, v in vars(point).items() if k != "_condition"}
    data = point.map(lambda x: x).batch(4)
    after = {k: v for k, v in vars(point).items() if k != "_condition"}
    assert after == before  # a parent never writes into its child
    stages = plan(data)
    assert stages.rows_per_batch(point) == 4
    assert stages.rows_per_batch(data) == 1
    assert plan(point.batch(lambda info: 2)).rows_per_batch(point) == 1  # a callable size
    # and the point lets one batch of 4 rows through per update
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    first = next(it)[0].tolist()
    data.sync_update("c")
    second = next(it)[0].tolist()
    it.close()
    assert (first, second) == ([0, 1, 2, 3], [4, 5, 6, 7])
