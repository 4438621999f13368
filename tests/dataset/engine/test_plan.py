"""The plan: stages, the ops each runs, worker counts and limits, and ``explain()``."""

from __future__ import annotations

import json
import logging
import threading
import time

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.core.cpus import CPUS_ENV
from jisu.dataset.engine.plan import plan
from tests.conftest import rows_of


@pytest.fixture
def cpus(monkeypatch):
    """``cpus(n)``: the library sees ``n`` usable CPUs (``JISU_CPUS``), whatever the machine has,
    so a worker count the plan derives from the CPUs is the same on a laptop and a 16-core box."""

    def set_cpus(n: int) -> None:
        monkeypatch.setenv(CPUS_ENV, str(n))

    return set_cpus


@pytest.fixture
def two_cpus(cpus):
    """Plans made as on 2 CPUs: stages wide enough (2 workers) for the limits under test. The
    threads are real; on a machine with one CPU they interleave, which is all these tests need
    (the calls that must meet wait for each other, releasing the GIL)."""
    cpus(2)


def quick(x):
    return x + 1


def slow_python(x):
    return x * 2


def ops_of(stage) -> list[str]:
    return [node.op_name for node in stage.ops]


def planned(data):
    return plan(data)


@pytest.mark.parametrize("usable, workers", [(1, 1), (2, 2), (3, 3), (16, 8)])
def test_a_random_access_chain_is_one_fused_stage(cpus, usable, workers):
    """The stage is as wide as its widest op: the map left to jisu gets the default,
    ``min(8, CPUs)`` (config's 8 clamped to the usable CPUs)."""
    cpus(usable)
    assert ds.config.get_num_parallel_workers() == min(8, usable) == workers
    data = ds.NumpySlicesDataset({"x": np.arange(40)}, shuffle=False)
    data = data.map(quick).map(slow_python, num_parallel_workers=1).batch(8)
    p = planned(data)
    (stage,) = p.stages
    assert stage.kind == "fetch" and not stage.processes
    assert ops_of(stage) == ["NumpySlicesDataset", "map", "map", "batch"]
    assert stage.workers == workers
    slow_map = stage.ops[2]
    text = data.explain()
    assert f"stage batch#4 (fetch): {workers} thread{'s' if workers > 1 else ''}" in text
    assert "map#2(quick)" in text and "random access" in text
    if workers > 1:  # a stage wider than the op: the op is limited inside it
        assert stage.limits == {id(slow_map): 1}
        assert "map#3(slow_python)  [at most 1 at once: its num_parallel_workers]" in text
    else:  # one worker: nothing to limit
        assert stage.limits == {} and "at most" not in text


@pytest.mark.parametrize("counts, workers", [((1,), 1), ((2, 1), 2), ((1, 3), 3)])
def test_a_stage_whose_maps_all_name_their_workers_runs_the_largest(cpus, counts, workers):
    """The source and the batch (left to jisu) follow the maps: a wider stage would only make
    its threads take turns at the maps' limits, once per row."""
    cpus(8)
    data = ds.NumpySlicesDataset({"x": np.arange(40)}, shuffle=False)
    for count in counts:
        data = data.map(quick, num_parallel_workers=count)
    data = data.batch(8)
    (stage,) = planned(data).stages
    assert stage.workers == workers
    maps = [n for n in stage.ops if n.op_name == "map"]
    assert stage.limits == {id(m): c for m, c in zip(maps, counts) if c < workers}
    text = data.explain()
    assert f"{workers} thread{'s' if workers > 1 else ''}, not 8: every map in it names" in text
    rows = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert np.concatenate([r[0] for r in rows]).tolist() == [x + len(counts) for x in range(40)]


def test_a_generator_feeds_a_batch_stage_that_runs_its_maps(two_cpus):
    data = ds.GeneratorDataset(lambda: iter(range(10)), ["x"]).shuffle(4)
    data = data.map(quick, num_parallel_workers=2).batch(2).repeat(2)
    p = planned(data)
    (stage,) = p.stages
    assert stage.kind == "batch" and ops_of(stage) == ["map", "batch"]
    assert [n.op_name for n in stage.inline] == ["GeneratorDataset", "shuffle"]
    assert [n.op_name for n in p.driver] == ["repeat"]
    text = data.explain()
    assert "feeder  one thread runs GeneratorDataset#1 -> shuffle#2" in text
    assert "driver thread runs repeat#5" in text


def test_a_process_stage_is_narrowed_to_an_explicit_worker_count(two_cpus):
    data = ds.GeneratorDataset(lambda: iter(range(10)), ["x"]).filter(lambda x: x > 2)
    data = data.map(quick, num_parallel_workers=2, python_multiprocessing=True)
    data = data.map(slow_python, num_parallel_workers=1)
    p = planned(data)
    assert [s.kind for s in p.stages] == ["filter", "map"]
    filter_stage, map_stage = p.stages
    assert map_stage.processes and map_stage.workers == 1 and map_stage.limits == {}
    assert map_stage.feed is filter_stage.owner
    assert "1 worker process, not 2: map#4(slow_python) asked for" in data.explain()
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert [int(r[0]) for r in it] == [2 * (x + 1) for x in range(3, 10)]


def test_zip_of_sources_is_fused_and_concat_with_a_stream_runs_on_the_driver():
    zipped = ds.NumpySlicesDataset({"x": np.arange(10)}).zip(
        ds.NumpySlicesDataset({"y": np.arange(10)})
    )
    stream = ds.GeneratorDataset(lambda: iter([(1, 2)] * 3), ["x", "y"])
    data = zipped.concat(stream)
    p = planned(data)
    (stage,) = p.stages
    assert stage.kind == "fetch" and stage.owner is zipped
    assert ops_of(stage) == ["NumpySlicesDataset", "NumpySlicesDataset", "zip"]
    assert sorted(n.op_name for n in p.driver) == ["GeneratorDataset", "concat"]


def test_skip_mode_sources_and_maps_get_stages_of_their_own():
    ds.config.set_error_samples_mode("skip")
    try:
        data = ds.GeneratorDataset([(np.array(i),) for i in range(6)], ["x"], shuffle=False)
        data = data.map(quick).batch(2)
        p = planned(data)
    finally:
        ds.config.set_error_samples_mode("raise")
    assert [s.kind for s in p.stages] == ["read", "map", "batch"]
    assert p.stages[2].ops == [data]  # the batch does not fuse a map that may drop samples


MEET_GUARD_S = 30.0  # a hang guard, not a verdict: two workers that may meet do so at once


class Overlap:
    """Records the most calls of an op running at the same time. With ``meet``, calls wait
    (once) until two of them run together: an op that may run on two workers then shows it
    whatever the machine's load, and one that may not fails plainly after ``MEET_GUARD_S``
    instead of hanging."""

    def __init__(self, meet: bool = False) -> None:
        self.meet, self.active, self.most = meet, 0, 0
        self.changed = threading.Condition()

    def __call__(self, x):
        with self.changed:
            self.active += 1
            self.most = max(self.most, self.active)
            self.changed.notify_all()
            if self.meet and self.most < 2:
                self.changed.wait_for(lambda: self.most >= 2, timeout=MEET_GUARD_S)
        time.sleep(0.002)  # room for another worker to enter if it may
        with self.changed:
            self.active -= 1
        return x


@pytest.mark.parametrize("random_access", [True, False])
def test_an_op_given_one_worker_never_runs_concurrently_with_itself(two_cpus, random_access):
    one, free = Overlap(), Overlap(meet=True)
    if random_access:
        data = ds.NumpySlicesDataset({"x": np.arange(48)}, shuffle=False)
    else:
        data = ds.GeneratorDataset(lambda: ((np.array(i),) for i in range(48)), ["x"])
    data = data.map(free, num_parallel_workers=2).map(one, num_parallel_workers=1).batch(4)
    stage = planned(data).stages[-1]
    assert stage.workers == 2  # the stage runs wider than the op: the case being tested
    rows = [int(v) for (b,) in data.create_tuple_iterator(num_epochs=1, output_numpy=True)
            for v in b]  # fmt: skip
    assert rows == list(range(48))
    assert one.most == 1
    assert free.most == 2  # the other op of the stage still runs two at a time


def test_a_python_sources_reads_are_serial_unless_told_otherwise(two_cpus):
    class Source:
        def __init__(self, overlap: Overlap) -> None:
            self.overlap = overlap

        def __len__(self) -> int:
            return 32

        def __getitem__(self, i: int):
            return (self.overlap(np.array(i)),)

    serial, parallel = Overlap(), Overlap()
    for source, workers in [(Source(serial), None), (Source(parallel), 2)]:
        data = ds.GeneratorDataset(source, ["x"], shuffle=False, num_parallel_workers=workers)
        parallel.meet = workers == 2  # from now on: its row 0 was read when it was built
        data = data.map(quick, num_parallel_workers=2).batch(2)
        assert len(list(data.create_tuple_iterator(num_epochs=1))) == 16
    assert serial.most == 1 and parallel.most == 2


def tuned(tmp_path, stages: dict) -> None:
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"version": 1, "stages": stages}))
    ds.config.load_autotune_config(str(path))


def test_a_saved_tuning_that_widens_a_stage_keeps_an_ops_worker_count(tmp_path):
    """AutoTune (or its saved settings) may widen a stage; never past an explicit count."""
    one = Overlap()
    data = ds.NumpySlicesDataset({"x": np.arange(32)}, shuffle=False)
    data = data.map(one, num_parallel_workers=1).batch(4, num_parallel_workers=1)
    assert planned(data).stages[0].workers == 1 and planned(data).stages[0].limits == {}
    tuned(tmp_path, {"batch#3": {"workers": 2, "inflight": 4}})
    try:
        rows = [int(v) for (b,) in data.create_tuple_iterator(num_epochs=1, output_numpy=True)
                for v in b]  # fmt: skip
    finally:
        ds.config.load_autotune_config(None)
    assert rows == list(range(32)) and one.most == 1


def test_a_saved_tuning_does_not_widen_a_process_stage_past_an_explicit_count(tmp_path):
    data = ds.NumpySlicesDataset({"x": np.arange(16)}, shuffle=False)
    data = data.map(quick, num_parallel_workers=1, python_multiprocessing=True).batch(4)
    tuned(tmp_path, {"batch#3": {"workers": 2, "inflight": 4}})
    try:
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        first = next(it)
        assert len(it.worker_pids()) == 1
        assert [int(v) for v in first[0]] == [1, 2, 3, 4]
    finally:
        it.close()
        ds.config.load_autotune_config(None)


def _stream_source():
    def rows():
        for i in range(12):
            yield np.array([i], dtype=np.int64)

    return ds.GeneratorDataset(rows, ["x"])


@pytest.mark.parametrize(
    "build",
    [
        lambda d: d.map(quick),
        lambda d: d.batch(3),
        lambda d: d.shuffle(4),
        lambda d: d.shard(2, 1),
        lambda d: d.take(5),
        lambda d: d.skip(2),
        lambda d: d.repeat(2),
        lambda d: d.project("x"),
        lambda d: d.rename("x", "y"),
        lambda d: d.concat(d),
        lambda d: d.zip(d.rename("x", "y")),
    ],
)
def test_random_access_is_the_type_of_a_node_chosen_by_its_inputs(build, monkeypatch):
    from jisu.dataset.core.access import RandomAccess
    from jisu.dataset.core.node import Dataset

    corrected = []  # a kind fixed after __init__ (slower objects): never for jisu's own ops
    settle = Dataset._settle_kind

    def spy(self, random_access):
        corrected.append(random_access != isinstance(self, RandomAccess))
        settle(self, random_access)

    monkeypatch.setattr(Dataset, "_settle_kind", spy)

    indexed = build(ds.NumpySlicesDataset(np.arange(12).reshape(12, 1), ["x"], shuffle=False))
    stream = build(_stream_source())
    assert isinstance(indexed, RandomAccess) and hasattr(indexed, "_fetch")
    assert not isinstance(stream, RandomAccess) and not hasattr(stream, "_fetch")
    # the same op either way, and both kinds give the same rows
    assert type(indexed).__name__ == type(stream).__name__
    assert isinstance(indexed, type(stream))
    if stream.op_name != "shuffle":  # (a buffer shuffle is another order)
        assert rows_of(indexed, None, num_epochs=1) == rows_of(stream, None, num_epochs=1)
    assert corrected and not any(corrected)


def test_a_source_subclass_with_other_arguments_still_gets_the_right_kind():
    from jisu.dataset.core.access import is_random_access

    class Squares(ds.GeneratorDataset):  # its first argument is not the source
        def __init__(self, count, indexed):
            rows = [np.array([i * i]) for i in range(count)]
            super().__init__(rows if indexed else iter(rows), ["x"], shuffle=False)

    assert is_random_access(Squares(4, True)) and not is_random_access(Squares(4, False))
    assert rows_of(Squares(4, False).map(quick)) == rows_of(Squares(4, True).map(quick))
    assert rows_of(Squares(4, True).map(quick)) == [[1], [2], [5], [10]]


def test_what_keeps_a_node_a_stream_over_random_access_inputs():
    from jisu.dataset.core.access import is_random_access

    data = ds.NumpySlicesDataset(np.arange(12).reshape(12, 1), ["x"], shuffle=False)
    assert not is_random_access(data.repeat(-1)) and is_random_access(data.repeat(3))
    assert not is_random_access(data.filter(lambda x: True))
    assert not is_random_access(data.filter(lambda x: True).map(quick))
    ds.config.set_error_samples_mode("skip")
    try:
        assert not is_random_access(data.map(quick))  # a failing sample would vanish
    finally:
        ds.config.set_error_samples_mode("raise")


def test_a_random_access_node_survives_pickling_as_its_own_kind():
    import pickle

    from jisu.dataset.core.access import RandomAccess

    node = ds.NumpySlicesDataset(np.arange(6), ["x"], shuffle=False).map(quick).batch(2)
    clone = pickle.loads(pickle.dumps(node))
    assert type(clone) is type(node) and isinstance(clone, RandomAccess)
    assert [b.tolist() for (b,) in clone.create_tuple_iterator(output_numpy=True)] == [
        [1, 2],
        [3, 4],
        [5, 6],
    ]


def test_workers_reduced_to_the_cpus_are_said_once_per_pipeline(monkeypatch, caplog):
    """``num_parallel_workers`` above the CPUs runs with the CPUs (MindSpore refuses it): one
    WARNING line at the first plan of the pipeline names each such op, none at later iterators
    of it, none for counts the CPUs allow. Two CPUs reported, whatever the machine."""
    monkeypatch.setenv(CPUS_ENV, "2")
    data = (
        ds.NumpySlicesDataset({"x": np.arange(8)}, shuffle=False)
        .map(lambda x: x, num_parallel_workers=64)
        .batch(2, num_parallel_workers=3)
    )
    with caplog.at_level(logging.WARNING, logger="jisu.dataset"):
        for _ in range(2):
            assert len(list(data.create_tuple_iterator())) == 4
        fits = ds.NumpySlicesDataset({"x": np.arange(8)}).map(lambda x: x, num_parallel_workers=2)
        list(fits.create_tuple_iterator())
    lines = [r.getMessage() for r in caplog.records if r.name == "jisu.dataset"]
    assert lines == [
        "num_parallel_workers reduced to the 2 CPUs this process may use: map(<lambda>) asked "
        "for 64; batch(2) asked for 3"
    ]
