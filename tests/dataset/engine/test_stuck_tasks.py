"""A task that never returns: a warning at config's interval, and the opt-in timeout.

The stuck op blocks until the test releases it, so no assertion depends on how fast the other
tasks run: warnings are only looked at when they name the stuck sample (another task slowed
down on a busy machine may be warned about too), and the timeout tests stick at sample 0, the
first task the stage's consumer waits for (no other task is ever timed before it).
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import threading
import time

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.context import RunSettings
from jisu.dataset.engine.tasks import StageTask
from jisu.dataset.engine.watchdog import StuckTaskWatch
from jisu.dataset.engine.worker_pool import TaskFuture
from tests.conftest import rows_of
from tests.dataset.engine.test_processes import wait_dead

STUCK_AT = 3
GIVE_UP_S = 60  # a stuck op ends by itself after this, so old code fails instead of hanging


@pytest.fixture(autouse=True)
def _short_interval():
    """Warn every 0.2 s; restore the settings afterwards."""
    interval = ds.config.get_multiprocessing_timeout_interval()
    timeout = ds.config.get_sample_timeout()
    ds.config.set_multiprocessing_timeout_interval(0.2)
    yield
    ds.config.set_multiprocessing_timeout_interval(interval)
    ds.config.set_sample_timeout(timeout)


def samples_named(message: str) -> set[int]:
    """The samples a stuck-task message names: ``sample 3``, ``samples 2..5`` or
    ``samples 1, 3, ... (n in all)`` (how many a task holds depends on the chunking)."""
    match = re.search(r"\bsamples? (\d+)(?:\.\.(\d+))?((?:, \d+)*)", message)
    if match is None:
        return set()
    first, last, more = match.groups()
    named = set(range(int(first), int(last or first) + 1))
    return named | {int(k) for k in re.findall(r"\d+", more or "")}


class OnStuckWarning(logging.Handler):
    """Keeps the stuck-task warnings of the ``jisu`` loggers that are ``about`` the stuck task
    and runs ``action`` on the first (a warning about another task, slow on a busy machine,
    is left out)."""

    def __init__(self, action, about=lambda message: STUCK_AT in samples_named(message)):
        super().__init__()
        self.action = action
        self.about = about
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "a task has been running for" in message and self.about(message):
            self.messages.append(message)
            self.action()

    def __enter__(self):
        logging.getLogger("jisu").addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("jisu").removeHandler(self)


def numbers(op, processes: bool = False, workers: int = 2):
    return ds.NumpySlicesDataset({"v": np.arange(8)}, shuffle=False).map(
        op, "v", num_parallel_workers=workers, python_multiprocessing=processes
    )


def test_a_stuck_thread_task_is_reported_naming_op_thread_sample_and_code():
    released = threading.Event()

    def stuck_at_3(x):
        if int(x) == STUCK_AT:
            released.wait(GIVE_UP_S)  # until the warning is out
        return x

    with OnStuckWarning(released.set) as warnings:
        rows = rows_of(numbers(stuck_at_3))
    assert rows == list(range(8))  # the pipeline went on once the op returned
    assert warnings.messages, "no warning about the stuck task"
    message = warnings.messages[0]
    assert "map operation stuck_at_3 on column(s) ['v'] at sample 3 of epoch 0" in message
    assert re.search(r"running in thread jisu-map-\d", message)
    assert re.search(r"in stuck_at_3 \(.*test_stuck_tasks.py:\d+\) -> wait", message)
    assert "config.set_multiprocessing_timeout_interval" in message


def test_a_stuck_per_batch_map_is_reported_naming_the_batch():
    released = threading.Event()

    def stuck_at_batch_1(x, info):
        if info.get_batch_num() == 1:
            released.wait(GIVE_UP_S)
        return (x,)

    data = ds.NumpySlicesDataset({"v": np.arange(8)}, shuffle=False).batch(
        2, per_batch_map=stuck_at_batch_1, num_parallel_workers=2
    )
    with OnStuckWarning(released.set, about=lambda m: "at batch 1 " in m) as warnings:
        assert len(rows_of(data)) == 4
    assert warnings.messages, "no warning about the stuck task"
    assert (
        "batch operation stuck_at_batch_1 on column(s) ['v'] at batch 1 of epoch 0"
        in (warnings.messages[0])
    )


def test_a_stuck_filter_predicate_is_reported_naming_the_predicate_and_sample():
    released = threading.Event()

    def keep_but_stuck_at_3(x):
        if int(x) == STUCK_AT:
            released.wait(GIVE_UP_S)
        return True

    data = ds.NumpySlicesDataset({"v": np.arange(8)}, shuffle=False).filter(
        keep_but_stuck_at_3, ["v"], num_parallel_workers=2
    )
    with OnStuckWarning(released.set) as warnings:
        assert rows_of(data) == list(range(8))
    assert warnings.messages, "no warning about the stuck task"
    assert (
        "filter operation keep_but_stuck_at_3 on column(s) ['v'] at sample 3 of epoch 0"
        in warnings.messages[0]
    )


class StuckRead:
    """A random-access source whose read of row ``STUCK_AT`` blocks until released."""

    def __init__(self, released: threading.Event) -> None:
        self.released = released

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int):
        if index == STUCK_AT:
            self.released.wait(GIVE_UP_S)
        return (np.int64(index),)


def test_a_stuck_source_read_is_reported_naming_the_source_and_sample():
    released = threading.Event()
    data = ds.GeneratorDataset(
        StuckRead(released), ["v"], shuffle=False, num_parallel_workers=2
    ).map(lambda v: v, "v")
    with OnStuckWarning(released.set) as warnings:
        assert rows_of(data) == list(range(8))
    assert warnings.messages, "no warning about the stuck task"
    message = warnings.messages[0]
    assert "GeneratorDataset at sample 3 of epoch 0" in message, message
    assert re.search(r"in __getitem__ \(.*test_stuck_tasks.py:\d+\) -> wait", message)


def test_a_warning_repeats_at_the_interval_while_the_task_runs():
    released = threading.Event()
    warnings = OnStuckWarning(lambda: len(warnings.messages) >= 3 and released.set())

    def stuck_at_3(x):
        if int(x) == STUCK_AT:
            released.wait(GIVE_UP_S)
        return x

    with warnings:
        rows_of(numbers(stuck_at_3))
    waited = [float(re.search(r"running for ([\d.]+) s", m).group(1)) for m in warnings.messages]
    assert len(waited) >= 3
    assert all(later > earlier for earlier, later in itertools.pairwise(waited))
    assert waited[0] >= 0.2  # not before the interval


def until_file(path: str, stuck_at: int = STUCK_AT):
    """An op stuck at sample ``stuck_at`` until ``path`` exists (a file, as the op runs in a
    worker process)."""

    def stuck_until_file(x):
        if int(x) == stuck_at:
            deadline = time.monotonic() + GIVE_UP_S
            while not os.path.exists(path) and time.monotonic() < deadline:
                time.sleep(0.01)
        return x

    return stuck_until_file


def test_a_stuck_worker_process_is_reported_naming_ops_pid_and_sample(tmp_path):
    flag = str(tmp_path / "warned")
    it = numbers(until_file(flag), processes=True).create_tuple_iterator(
        num_epochs=2, output_numpy=True
    )
    with OnStuckWarning(lambda: open(flag, "w").close()) as warnings:
        rows = [int(row[0]) for row in it]
    pids = it.worker_pids()
    it.close()
    assert rows == list(range(8))
    assert warnings.messages, "no warning about the stuck task"
    message = warnings.messages[0]  # names the samples of its task: they hold sample 3
    assert re.search(r"NumpySlicesDataset -> map\(stuck_until_file\) on samples? \S+ of", message)
    pid = int(re.search(r"running in worker process jisu-map-\d \(pid (\d+)", message).group(1))
    assert pid in pids
    assert f"py-spy dump --pid {pid}" in message


def test_opt_in_timeout_fails_a_stuck_thread_task_and_stops_the_pipeline():
    release = threading.Event()

    def stuck_at_0(x):
        if int(x) == 0:
            release.wait(GIVE_UP_S)
        return x

    ds.config.set_sample_timeout(0.5)
    try:
        with pytest.raises(TimeoutError) as info:
            rows_of(numbers(stuck_at_0))
    finally:
        release.set()  # the thread ends once its op returns (the conftest checks it does)
    assert isinstance(info.value, RuntimeError)  # like every pipeline error
    message = str(info.value)
    assert "longer than the sample timeout of 0.5 s (config.set_sample_timeout)" in message
    assert "map operation stuck_at_0 on column(s) ['v'] at sample 0 of epoch 0" in message
    assert re.search(r"running in thread jisu-map-\d", message)


def test_opt_in_timeout_kills_a_stuck_worker_process(tmp_path):
    never = str(tmp_path / "never")  # the op is never released: only the kill ends it
    ds.config.set_sample_timeout(0.5)
    data = numbers(until_file(never, stuck_at=0), processes=True)
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    with pytest.raises(TimeoutError, match=r"sample timeout of 0\.5 s") as info:
        list(it)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert "NumpySlicesDataset -> map(stuck_until_file) on sample" in message
    assert 0 in samples_named(message)
    pid = int(re.search(r"worker process jisu-map-\d \(pid (\d+)", message).group(1))
    assert not wait_dead([pid]), "the stuck worker process still runs"


def test_a_worker_process_slow_to_start_is_not_timed_before_it_starts():
    """A worker process loads the stage (source and ops) before its first task, which can take
    long (a big model, a remote file); the sample timeout is for tasks, so it must not count."""

    class SlowToLoad:
        """An identity op that takes ``delay`` seconds to unpickle in a worker process."""

        def __init__(self, delay: float) -> None:
            self.delay = delay

        def __call__(self, x):
            return x

        def __setstate__(self, state: dict) -> None:
            time.sleep(state["delay"])
            self.__dict__.update(state)

    ds.config.set_sample_timeout(1.0)
    # every worker starts for 1.5 s or more: a clock started at sending always ran out
    assert rows_of(numbers(SlowToLoad(1.5), processes=True)) == list(range(8))


def test_the_watch_ignores_a_task_not_started():
    """A task no worker has started (``TaskFuture.started`` None) is not a running task,
    however short the timeout; nor is one that has finished."""
    ds.config.set_sample_timeout(0.001)
    data = ds.NumpySlicesDataset({"v": np.arange(2)})
    settings = RunSettings.from_config()
    watch = StuckTaskWatch("map", StageTask(data, "fetch_rows"), pool=None, settings=settings)
    future = TaskFuture()
    time.sleep(0.002)
    watch.check(future)  # neither a TypeError nor a timeout
    future.started = (time.perf_counter() - 1.0, None, 0, [0])
    future.set_result([])
    watch.check(future)  # done: not stuck


class BlocksWhileLoading:
    """An identity op whose unpickling in a worker process waits for ``release`` to exist."""

    def __init__(self, release: str) -> None:
        self.release = release

    def __call__(self, x):
        return x

    def __setstate__(self, state: dict) -> None:
        deadline = time.monotonic() + GIVE_UP_S
        while not os.path.exists(state["release"]) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.__dict__.update(state)


def test_a_worker_process_stuck_while_loading_the_stage_is_reported(tmp_path):
    """Loading the stage is not a task (no timeout), but a worker that never finishes it
    leaves the pipeline waiting: it is reported at the interval, naming the worker's pid."""
    release = tmp_path / "release"
    warnings: list[str] = []

    class OnLoadingWarning(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "has been loading the stage" in record.getMessage():
                warnings.append(record.getMessage())
                release.touch()

    handler = OnLoadingWarning()
    logging.getLogger("jisu").addHandler(handler)
    try:
        data = numbers(BlocksWhileLoading(str(release)), processes=True, workers=1)
        assert rows_of(data) == list(range(8))
    finally:
        logging.getLogger("jisu").removeHandler(handler)
    assert warnings, "the worker stuck while loading was never reported"
    assert re.search(r"worker process \S+ \(pid \d+\) has been loading the stage", warnings[0])
    assert "map(BlocksWhileLoading)" in warnings[0]
