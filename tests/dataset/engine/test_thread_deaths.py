"""A background thread of the engine that dies, for any reason, is an error at the iterator
(issue 47): the driver, a stage's feeder, a thread pool's worker thread, a process pool's
collector, the pipeline process's reader thread. A failure is injected at the first call of
the function each thread runs; the iterator must raise, never wait forever.

pytest's timeout is a hang guard only: the verdict is the error raised.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine import context, run
from jisu.dataset.engine.processes.pool import ProcessPool
from jisu.dataset.engine.thread_pool import ThreadPool

pytestmark = pytest.mark.timeout(90)


class Injected(Exception):
    """The failure put into a thread."""


def _boom(*args, **kwargs):
    raise Injected("injected failure")


def plus_one(x):
    return x + 1


def _pipeline(processes: bool = False):
    return ds.NumpySlicesDataset({"v": np.arange(16)}, shuffle=False).map(
        plus_one, "v", num_parallel_workers=2, python_multiprocessing=processes
    )


def _inject_driver(monkeypatch):
    monkeypatch.setattr(run, "drive", _boom)
    return _pipeline(), "the pipeline's driver thread failed"


def _inject_feeder(monkeypatch):
    original = context.ExecContext.spawn

    def spawn(self, target, name, *args):
        return original(self, _boom if name.endswith("-feeder") else target, name, *args)

    monkeypatch.setattr(context.ExecContext, "spawn", spawn)
    return _pipeline(), "map(plus_one): its feeder thread failed"


def _inject_thread_pool(monkeypatch):
    monkeypatch.setattr(ThreadPool, "_run", _boom)
    return _pipeline(), "map(plus_one) at sample 0 of epoch 0: its worker thread failed"


def _inject_process_collector(monkeypatch):
    monkeypatch.setattr(ProcessPool, "_collect", _boom)
    return _pipeline(processes=True), (
        "map(plus_one) at sample 0 of epoch 0: the collector thread of its worker processes failed"
    )


@pytest.mark.parametrize(
    "inject",
    [_inject_driver, _inject_feeder, _inject_thread_pool, _inject_process_collector],
    ids=["driver", "feeder", "thread-pool-worker", "process-collector"],
)
def test_a_dead_engine_thread_is_an_error_at_the_iterator(monkeypatch, inject):
    data, what = inject(monkeypatch)
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        with pytest.raises(Injected) as info:
            list(it)
    finally:
        it.close()
    assert isinstance(info.value, RuntimeError)  # MindSpore's contract: a pipeline error
    assert what in str(info.value)
    assert "injected failure" in str(info.value)


def test_a_dead_pipeline_process_reader_is_an_error_at_the_iterator():
    """The pipeline process's reader thread (credits, questions from the parent) fails on a
    message it cannot read: the parent hears the error instead of waiting for rows."""
    ds.config.set_pipeline_process(True)
    try:
        it = _pipeline().create_tuple_iterator(num_epochs=1, output_numpy=True)
        try:
            next(it)
            it._ctx._send(b"not a pickle")  # what the reader thread runs on first
            with pytest.raises(RuntimeError, match="its reader thread failed") as info:
                list(it)
        finally:
            it.close()
    finally:
        ds.config.set_pipeline_process(False)
    assert "UnpicklingError" in str(info.value)


def test_a_dead_autotune_thread_is_logged_and_the_pipeline_goes_on(monkeypatch, caplog):
    """AutoTune only tunes: should its thread fail, the rows still come, and the log says."""
    from jisu.dataset.engine import policies

    monkeypatch.setattr(policies, "make_tuner", lambda *a: _DeadTuner())
    ds.config.set_enable_autotune(True)
    try:
        with caplog.at_level(logging.ERROR, logger="jisu.dataset"):
            rows = [int(r[0]) for r in _pipeline().create_tuple_iterator(num_epochs=1)]
    finally:
        ds.config.set_enable_autotune(False)
    assert rows == list(range(1, 17))
    assert any("jisu-autotune failed" in r.getMessage() for r in caplog.records)


class _DeadTuner:
    """A tuner whose thread fails at once (every other call does nothing)."""

    def run(self, stop):
        raise Injected("injected failure")

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def test_a_dead_ray_collector_fails_the_tasks_it_was_collecting():
    """The Ray pool's collector thread body, run on a pool whose Ray only answers ``wait``
    (no cluster: the failure is injected at the collector's first call that takes results
    in): the task in flight fails with the error, naming the stage's ops."""
    import threading
    from collections import deque

    from jisu.dataset.engine.ray.dispatch import _Actor, _Task
    from jisu.dataset.engine.ray.pool import RayPool
    from jisu.dataset.engine.worker_pool import TaskFuture

    class _Ray:
        def wait(self, refs, num_returns=1, timeout=None):
            return list(refs)[:num_returns], []

    pool = RayPool.__new__(RayPool)  # the state _run reads; no actor is started
    pool.name, pool._ops, pool._ray = "map", "NumpySlicesDataset -> map(plus_one)", _Ray()
    pool._init_queue(threading.Lock())
    future = TaskFuture()
    future.set_running_or_notify_cancel()
    task = _Task(future, 0, [3])
    actor = _Actor(0, "map", handle=None, tasks=deque([task]))
    pool._actors, pool._refs, pool._wake = [actor], {"ref": (actor, task)}, threading.Event()
    pool._collect = _boom
    runner = threading.Thread(target=pool._run, daemon=True)
    runner.start()
    runner.join(30)
    assert not runner.is_alive()
    with pytest.raises(RuntimeError, match=r"map\(plus_one\): the collector thread of its Ray"):
        future.result(timeout=0)
    assert isinstance(future.exception().__cause__, Injected)
