"""A task that never returns: a warning at config's interval, and the opt-in timeout."""

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
from tests.conftest import rows_of
from tests.dataset.test_processes import wait_dead

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


class OnStuckWarning(logging.Handler):
    """Keeps the stuck-task warnings of the ``jisu`` loggers and runs ``action`` on the first."""

    def __init__(self, action):
        super().__init__()
        self.action = action
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "a task has been running for" in message:
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
    with OnStuckWarning(released.set) as warnings:
        assert len(rows_of(data)) == 4
    assert warnings.messages, "no warning about the stuck task"
    assert (
        "batch operation stuck_at_batch_1 on column(s) ['v'] at batch 1 of epoch 0"
        in (warnings.messages[0])
    )


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


def until_file(path: str):
    """An op stuck at sample 3 until ``path`` exists; every sample takes 5 ms, so that tasks
    hold one sample each (the chunker groups faster samples)."""

    def stuck_until_file(x):
        time.sleep(0.005)
        if int(x) == STUCK_AT:
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
    message = warnings.messages[0]
    assert "NumpySlicesDataset -> map(stuck_until_file) on sample 3 of epoch 0" in message
    pid = int(re.search(r"running in worker process jisu-map-\d \(pid (\d+)", message).group(1))
    assert pid in pids
    assert f"py-spy dump --pid {pid}" in message


def test_opt_in_timeout_fails_a_stuck_thread_task_and_stops_the_pipeline():
    release = threading.Event()

    def stuck_at_3(x):
        if int(x) == STUCK_AT:
            release.wait(GIVE_UP_S)
        return x

    ds.config.set_sample_timeout(0.5)
    try:
        with pytest.raises(TimeoutError) as info:
            rows_of(numbers(stuck_at_3))
    finally:
        release.set()  # the thread ends once its op returns (the conftest checks it does)
    assert isinstance(info.value, RuntimeError)  # like every pipeline error
    message = str(info.value)
    assert "longer than the sample timeout of 0.5 s (config.set_sample_timeout)" in message
    assert "map operation stuck_at_3 on column(s) ['v'] at sample 3 of epoch 0" in message
    assert re.search(r"running in thread jisu-map-\d", message)


def test_opt_in_timeout_kills_a_stuck_worker_process():
    def sleeps_at_3(x):
        time.sleep(0.005)
        if int(x) == STUCK_AT:
            time.sleep(GIVE_UP_S)
        return x

    ds.config.set_sample_timeout(0.5)
    it = numbers(sleeps_at_3, processes=True).create_tuple_iterator(num_epochs=1, output_numpy=True)
    with pytest.raises(TimeoutError, match=r"sample timeout of 0\.5 s") as info:
        list(it)
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert "map(sleeps_at_3) on sample 3 of epoch 0" in message
    pid = int(re.search(r"worker process jisu-map-\d \(pid (\d+)", message).group(1))
    assert not wait_dead([pid]), "the stuck worker process still runs"
