"""AutoTune gives a slow stage workers, within the CPUs; its saved settings reproduce."""

from __future__ import annotations

import json
import logging
import os
import time

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.core.cpus import CPUS_ENV, available_cpus


def slow(x):
    time.sleep(0.005)
    return x


def pipeline(processes: bool = False, op=slow):
    """Workers left to jisu (an explicit count would cap the stage): one by default, as
    ``settings_reset`` sets, so that AutoTune has room to add one."""
    data = ds.NumpySlicesDataset(np.arange(240, dtype=np.float32), shuffle=False)
    data = data.map(op, python_multiprocessing=processes)
    return data.batch(4)


@pytest.fixture
def settings_reset():
    default = ds.config._num_parallel_workers  # the setting, not get_'s clamped value
    ds.config.set_num_parallel_workers(1)
    yield
    ds.config.set_num_parallel_workers(default)
    ds.config.set_enable_autotune(False)
    ds.config.set_enable_profiler(False)
    ds.config.load_autotune_config(None)


HOLD_GUARD_S = 60.0  # a held row goes on by itself after this: a tuner that never grows fails


class HeldUntilGrown:
    """The slow op (5 ms a row) of a pipeline whose rows are all held until the file
    ``grown`` exists (a file: the op may run in worker processes). The test writes it when
    the tuner says it added a worker, so the stage is still there to grow however late the
    tuner's thread runs on a busy machine: an event, not the epoch's length against the
    tuner's interval."""

    def __init__(self, grown: str) -> None:
        self.__name__ = "slow"
        self.grown = grown

    def __call__(self, x):
        deadline = time.monotonic() + HOLD_GUARD_S
        while not os.path.exists(self.grown) and time.monotonic() < deadline:
            time.sleep(0.01)
        return slow(x)


class OnGrowth(logging.Handler):
    """Touches ``path`` when AutoTune logs that a stage went from 1 to 2 workers."""

    def __init__(self, path) -> None:
        super().__init__()
        self.path = path

    def emit(self, record: logging.LogRecord) -> None:
        if "workers 1 -> 2" in record.getMessage():
            self.path.touch()


@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_autotune_grows_the_slow_stage_and_the_json_reproduces_it(
    tmp_path, caplog, monkeypatch, settings_reset, processes
):
    """The tuner at work on a real pipeline: it reads the stage's statistics, resizes its
    pool, writes and reloads its settings. Its decisions depend on measured shares, which a
    busy machine changes: they are tested on a fake clock below; here every stage counts as
    needy, so that the stage grows whatever the timing, and the rows wait until it has grown.
    As on 2 CPUs (``JISU_CPUS``), so that there is room for the second worker on any machine;
    no row comes out before the growth, so nothing looks slower after it: the 2 stay."""
    from jisu.profiler import autotune

    monkeypatch.setenv(CPUS_ENV, "2")
    monkeypatch.setattr(autotune, "WAIT_SHARE", 0.0)
    monkeypatch.setattr(autotune, "BUSY_SHARE", 0.0)
    path = tmp_path / "tuned.json"
    grown = tmp_path / "grown"
    op = HeldUntilGrown(str(grown))
    ds.config.set_enable_autotune(True, filepath=str(path))
    caplog.set_level(logging.INFO, logger="jisu.dataset.autotune")
    growth = OnGrowth(grown)
    logging.getLogger("jisu.dataset.autotune").addHandler(growth)
    try:
        iterator = pipeline(processes, op).create_tuple_iterator(num_epochs=1, output_numpy=True)
        values = np.concatenate([batch[0] for batch in iterator])
    finally:
        logging.getLogger("jisu.dataset.autotune").removeHandler(growth)
        grown.touch()
    np.testing.assert_array_equal(values, np.arange(240))  # tuning changes no output
    changes = [r.getMessage() for r in caplog.records if "workers 1 -> 2" in r.getMessage()]
    assert changes and "busy" in changes[0] and "waited" in changes[0]

    saved = json.loads(path.read_text())
    (stage,) = saved["stages"].values()
    assert stage["workers"] == 2 == available_cpus()  # never more workers than CPUs
    assert stage["inflight"] >= stage["workers"]

    ds.config.set_enable_autotune(False)
    ds.config.load_autotune_config(str(path))
    ds.config.set_enable_profiler(True)
    iterator = pipeline(processes, op).create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert sum(len(batch[0]) for batch in iterator) == 240
    (profiled,) = iterator.profile()["stages"]
    assert profiled["workers"] == stage["workers"]  # starts where tuning ended


def test_load_rejects_a_file_that_is_not_autotune_output(tmp_path, settings_reset):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a jisu AutoTune file"):
        ds.config.load_autotune_config(str(path))


class FakePool:
    start_seconds = 0.0

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def resize(self, workers: int) -> None:
        self.workers = workers


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeProcessPool(FakePool):
    start_seconds = 2.0


def tuner_with_one_stage(monkeypatch, cpus: int, pool_type=FakePool, max_workers=None):
    """An AutoTuner over one fake stage, on a clock the test moves."""
    import threading

    from jisu.dataset.engine.stats import StageStats
    from jisu.profiler import autotune

    clock = Clock()
    monkeypatch.setattr(autotune.time, "perf_counter", clock)
    tuner = autotune.AutoTuner(cpus=cpus, budget_bytes=1 << 30, interval=1.0)
    stats = StageStats("map#1", workers=1)
    stats.tasks = stats.sampled_rows = 1
    stats.sampled_bytes = 1000
    pool, slots = pool_type(1), threading.Semaphore(1)
    tuner.register("map#1", pool, slots, stats, inflight=1, max_workers=max_workers)

    def interval(rows: int, busy: float, waited: float) -> None:
        """One second of the stage: ``rows`` out, its workers ``busy``, its consumer waiting
        ``waited`` of it; then the tuner looks."""
        clock.now += 1.0
        stats.rows += rows
        stats.tasks += rows
        stats.compute_s += busy * pool.workers
        stats.wait_s += waited
        tuner.step()

    return tuner, pool, interval


def test_a_change_that_slows_the_stage_is_undone_and_the_stage_left_alone(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="jisu.dataset.autotune")
    tuner, pool, interval = tuner_with_one_stage(monkeypatch, cpus=4)
    interval(rows=100, busy=1.0, waited=0.5)  # first look: nothing to compare with yet
    assert pool.workers == 1
    interval(rows=100, busy=1.0, waited=0.5)  # busy and waited for: one more worker
    assert pool.workers == 2
    interval(rows=80, busy=1.0, waited=0.5)  # output fell by 20 % (> 10 %): undone
    assert pool.workers == 1
    assert any(
        "workers 2 -> 1" in r.getMessage() and "output fell from 100.0 to 80.0" in r.getMessage()
        for r in caplog.records
    )
    for _ in range(3):  # still needy, but frozen
        interval(rows=80, busy=1.0, waited=0.5)
    assert pool.workers == 1
    assert tuner.settings()["stages"]["map#1"] == {"workers": 1, "inflight": 1}


def test_a_change_that_helps_is_kept_and_growth_stops_at_the_cpu_count(monkeypatch):
    tuner, pool, interval = tuner_with_one_stage(monkeypatch, cpus=3)
    interval(rows=100, busy=1.0, waited=0.5)
    for expected, rows in [(2, 100), (3, 190), (3, 270), (3, 270)]:
        interval(rows=rows, busy=1.0, waited=0.5)
        assert pool.workers == expected
    assert tuner.settings()["stages"]["map#1"] == {"workers": 3, "inflight": 3}


def test_a_stage_nobody_waits_for_or_that_idles_gets_no_worker(monkeypatch):
    _, pool, interval = tuner_with_one_stage(monkeypatch, cpus=4)
    interval(rows=100, busy=1.0, waited=0.0)
    interval(rows=100, busy=1.0, waited=0.01)  # its consumer hardly waits
    interval(rows=100, busy=0.3, waited=0.5)  # waited for, but its workers idle (input-bound)
    assert pool.workers == 1


def test_a_process_stage_is_judged_only_once_its_new_worker_had_time_to_start(monkeypatch):
    _, pool, interval = tuner_with_one_stage(monkeypatch, cpus=4, pool_type=FakeProcessPool)
    interval(rows=100, busy=1.0, waited=0.5)
    interval(rows=100, busy=1.0, waited=0.5)  # grows; judged 2 s later
    assert pool.workers == 2
    interval(rows=80, busy=1.0, waited=0.5)  # slower while the process starts: not undone
    assert pool.workers == 2
    interval(rows=80, busy=1.0, waited=0.5)  # 2 s on and still slower: undone
    assert pool.workers == 1


def test_a_stage_capped_by_an_explicit_worker_count_grows_no_further(monkeypatch):
    """A process stage whose op asked for num_parallel_workers=2 (the plan's max_workers)."""
    _, pool, interval = tuner_with_one_stage(monkeypatch, cpus=4, max_workers=2)
    for rows in (100, 100, 190, 270, 270):  # needy every time, and each change helps
        interval(rows=rows, busy=1.0, waited=0.5)
    assert pool.workers == 2
