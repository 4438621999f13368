"""The pipeline profiler: per-stage figures and the bottleneck.

The figures and the verdict are tested on fixed numbers (a stage's statistics on a fake
clock, then ``bottleneck``), so they cannot change with the load of the machine; real
pipelines check only what no timing can change (counts, sizes, bounds that sleeping sets).
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.stats import StageStats
from jisu.profiler import pipeline as bottleneck_module
from jisu.profiler.pipeline import bottleneck

VERDICTS = {"consumer", "source"}


@pytest.fixture
def profiling():
    ds.config.set_enable_profiler(True)
    yield
    ds.config.set_enable_profiler(False)


def slow(x):
    time.sleep(0.005)  # a stage of known cost: 5 ms per row
    return x


def test_a_slow_stage_is_named_with_a_busy_share_near_one(profiling):
    data = ds.NumpySlicesDataset(np.arange(80, dtype=np.float32), shuffle=False)
    data = data.map(slow, num_parallel_workers=1).batch(8, num_parallel_workers=1)
    iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert sum(len(b[0]) for b in iterator) == 80
    report = iterator.profile()
    (stage,) = report["stages"]  # map and batch run fused, as one stage
    assert stage["rows"] == 10 and stage["workers"] == 1  # its output rows: 10 batches of 8
    assert stage["ms_per_row"] >= 8 * 5.0  # 8 sleeps of 5 ms per batch, at least
    assert stage["bytes_per_row"] == pytest.approx(8 * 4.0)  # a batch of 8 float32
    assert 0.0 <= stage["busy_share"] <= 1.0
    assert 0.0 <= report["output"]["consumer_wait_share"] <= 1.0
    assert report["bottleneck"] in VERDICTS | {stage["stage"]} and report["suggestion"]


def test_the_consumers_own_time_is_not_counted_as_waiting(profiling):
    data = ds.NumpySlicesDataset(np.arange(64, dtype=np.float32), shuffle=False).batch(8)
    begin = time.perf_counter()
    iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    for _ in iterator:
        time.sleep(0.01)  # the training step
    wall = time.perf_counter() - begin
    report = iterator.profile()
    # its waits and its 8 steps of 10 ms are disjoint stretches of the iterator's life
    assert 0.0 <= report["output"]["consumer_wait_share"] <= 1 - 8 * 0.01 / wall
    assert report["bottleneck"] in VERDICTS | {s["stage"] for s in report["stages"]}


def stage(busy: float, workers: int = 1, seconds: float = 2.0, batches: int = 10) -> dict:
    """The summary of a stage that ran ``seconds`` on a fake clock, its workers busy
    ``busy`` of it, turning out ``batches`` batches of 8 float32."""
    stats = StageStats("batch#1", workers=workers, started=100.0)
    for i in range(batches):
        batch = (np.zeros(8, np.float32),)
        stats.finished(batch, busy * seconds * workers / batches, 0.01, was_ready=i % 2 == 0)
    return stats.summary(now=100.0 + seconds)


def test_a_stage_summary_is_its_figures_over_the_wall_time():
    s = stage(busy=0.9)
    assert s["rows"] == 10 and s["seconds"] == pytest.approx(2.0)
    assert s["rows_per_s"] == pytest.approx(5.0)
    assert s["ms_per_row"] == pytest.approx(180.0)  # 1.8 s of work over 10 batches
    assert s["busy_share"] == pytest.approx(0.9)
    assert s["queue_empty_share"] == pytest.approx(0.5)  # every other result was not ready
    assert s["consumer_wait_s"] == pytest.approx(0.1)
    assert s["bytes_per_row"] == pytest.approx(32.0)
    assert stage(busy=0.45, workers=2)["busy_share"] == pytest.approx(0.45)
    assert stage(busy=1.2)["busy_share"] == 1.0  # a task straddling the end: clamped
    assert StageStats("x", 1, started=0.0).summary(now=0.0)["seconds"] == pytest.approx(1e-9)


@pytest.mark.parametrize(
    "busy, workers, consumer_wait, verdict, says",
    [
        (0.9, 1, 0.85, "batch#1", "raise num_parallel_workers"),
        (0.7, 1, 0.05, "batch#1", "busy 70%"),  # both at their bound (>=)
        (0.9, 4, 0.85, "batch#1", "already has a worker per CPU"),
        (0.9, 1, 0.04, "consumer", "waited only 4%"),
        (0.69, 1, 0.85, "source", "no stage is busy"),
    ],
)
def test_the_bottleneck_follows_from_the_figures(
    monkeypatch, busy, workers, consumer_wait, verdict, says
):
    monkeypatch.setattr(bottleneck_module, "available_cpus", lambda: 4)
    busiest = {**stage(busy, workers), "busy_share": busy}  # exactly the figure, bounds too
    idle = {**stage(0.2), "stage": "map#2"}
    output = {"consumer_wait_share": consumer_wait}
    judged = bottleneck([busiest], output)
    assert judged["bottleneck"] == verdict and says in judged["suggestion"], judged
    assert bottleneck([idle, busiest], output) == judged  # the busiest stage is the one


def test_profile_needs_the_profiler_on():
    iterator = ds.NumpySlicesDataset(np.arange(4)).create_tuple_iterator(num_epochs=1)
    with pytest.raises(RuntimeError, match="set_enable_profiler"):
        iterator.profile()
    iterator.close()


class ThreadClock:
    """A fake ``perf_counter``, one per thread: it stands still except when the thread calls
    :meth:`sleep`, which moves that thread's clock on at once. What the profiler measures on
    it is exact whatever the load: each op's time is what it "slept". It starts at the real
    clock's reading, so code that still reads the real one (the stuck-task watch) sees a task
    as just started, not hours old."""

    def __init__(self) -> None:
        self._base = time.perf_counter()
        self._local = threading.local()

    def perf_counter(self) -> float:
        return self._base + getattr(self._local, "slept", 0.0)

    def sleep(self, seconds: float) -> None:
        self._local.slept = getattr(self._local, "slept", 0.0) + seconds


class TimeOn:
    """The ``time`` module, but for ``perf_counter``, which reads ``clock``."""

    def __init__(self, clock: ThreadClock) -> None:
        self.perf_counter = clock.perf_counter

    def __getattr__(self, name: str):
        return getattr(time, name)


# the modules whose clock readings make the op figures: the ops' own timings (map, batch) and
# the task times they are shares of (a thread pool's, or a worker process's)
TIMED_MODULES = (
    "jisu.dataset.ops.map",
    "jisu.dataset.ops.batch",
    "jisu.dataset.engine.thread_pool",
    "jisu.dataset.engine.processes.worker",
)
_clock: ThreadClock | None = None  # this process's fake clock, once installed


def install_clock(setattr_=setattr) -> ThreadClock:
    """Make the timed modules of this process read a fresh :class:`ThreadClock`."""
    global _clock
    clock = ThreadClock()
    for name in TIMED_MODULES:
        setattr_(importlib.import_module(name), "time", TimeOn(clock))
    _clock = clock
    return clock


class Sleepy:
    """The slow op among cheap ones: 3 ms per row on the fake clock (really asleep where no
    fake clock is installed). A worker process installs its own fake clock as it unpickles
    the op, before it runs any task."""

    MS = 3.0

    def __init__(self) -> None:
        self.__name__ = "sleepy"
        self.owner = os.getpid()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if os.getpid() != self.owner and _clock is None:  # a worker process, not the test's
            install_clock()

    def __call__(self, x):
        if _clock is None:
            time.sleep(self.MS / 1000)
        else:
            _clock.sleep(self.MS / 1000)
        return x


def plus_one(x):
    return x + 1


@pytest.fixture
def fake_clock(monkeypatch):
    """A fake clock for this process's pipeline threads (undone after the test)."""
    monkeypatch.setattr(sys.modules[__name__], "_clock", None)
    clock = install_clock(monkeypatch.setattr)
    yield clock


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_the_profile_names_the_slow_op_inside_a_fused_stage(profiling, fake_clock, processes):
    """Also in worker processes, which send their op timings back with their results. On the
    fake clock the figures are exact: the slow op's 3 ms a call are all of the stage's work."""
    data = ds.NumpySlicesDataset(np.arange(320, dtype=np.float32), shuffle=False)
    data = data.map(plus_one).map(Sleepy(), python_multiprocessing=processes).map(plus_one)
    data = data.batch(8)
    iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert sum(len(b[0]) for b in iterator) == 320
    (stage,) = iterator.profile()["stages"]  # source, three maps and batch: one fused stage
    assert stage["unit"] == "batch" and stage["processes"] == processes
    ops = stage["ops"]
    names = {o["op"] for o in ops}
    assert {"map#2: plus_one", "map#3: sleepy", "map#4: plus_one"} <= names
    assert {"batch#5: batch assembly"} <= names
    top = ops[0]
    assert top["op"] == "map#3: sleepy"
    assert top["ms_per_call"] == pytest.approx(Sleepy.MS)
    assert top["share"] == pytest.approx(1.0)  # the other ops take no time on this clock
    assert all(o["ms_per_call"] == 0.0 and o["share"] == 0.0 for o in ops[1:]), ops
    assert stage["ms_per_row"] == pytest.approx(8 * Sleepy.MS)  # a batch of 8 rows
    # the rows of an epoch's first 64 batches are timed, then those of one batch in 16 with a
    # weight of 16: 40 batches here, all timed
    assert top["calls"] == 320


def with_ops(figures: dict, *ops: dict) -> dict:
    base = {"limit": None, "explicit_workers": None, "python": False, "elementwise": False}
    return {**figures, "ops": [{**base, **op} for op in ops]}


@pytest.mark.parametrize(
    "op, says",
    [
        (
            {"op": "map#3: slow", "node": "map#3", "name": "slow", "kind": "map", "python": True},
            "python_multiprocessing=True on map#3",
        ),
        (
            {"op": "map#3: slow", "node": "map#3", "name": "slow", "kind": "map",
             "limit": 1, "explicit_workers": 1},
            "its num_parallel_workers=1 lets only 1 of the stage's 2 workers run map#3",
        ),
        (
            {"op": "map#2: Normalize", "node": "map#2", "name": "Normalize", "kind": "map",
             "elementwise": True},
            "move Normalize after batch",
        ),
        (
            {"op": "GeneratorDataset#1: read", "node": "GeneratorDataset#1", "name": "read",
             "kind": "read", "python": True},
            "the Python source is read one row at a time",
        ),
        (
            {"op": "map#2: Decode", "node": "map#2", "name": "Decode", "kind": "map"},
            "raise num_parallel_workers on map#2 (up to 4 CPUs)",
        ),
    ],
)  # fmt: skip
def test_the_verdict_names_the_costliest_op_and_a_change_for_it(monkeypatch, op, says):
    monkeypatch.setattr(bottleneck_module, "available_cpus", lambda: 4)
    busiest = with_ops(
        {**stage(0.9, workers=2), "unit": "batch"},
        {**op, "share": 0.8, "ms_per_call": 2.0},
        {"op": "batch#4: batch assembly", "node": "batch#4", "name": "batch assembly",
         "kind": "batch", "share": 0.1, "ms_per_call": 0.1},
    )  # fmt: skip
    judged = bottleneck([busiest], {"consumer_wait_share": 0.8})
    assert judged["bottleneck"] == "batch#1" and judged["op"] == op["op"]
    assert judged["share"] == 0.8 and f"{op['op']} takes 80% of its work" in judged["suggestion"]
    assert says in judged["suggestion"], judged["suggestion"]
    assert "ms per batch" in judged["suggestion"]
