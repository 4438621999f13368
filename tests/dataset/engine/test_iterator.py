"""Iterators: epochs, outputs, state save/restore, and closing without leaving threads."""

from __future__ import annotations

import _thread
import multiprocessing
import signal
import sys
import threading
import time

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset import vision
from tests.conftest import image_source, jisu_threads, wait_no_jisu_threads
from tests.dataset.engine.test_skip_resume import CountingSource


def pipeline(random_access: bool, n: int = 23):
    data = image_source(n, (4, 4, 3), 5, random_access)
    data = data.map(
        [vision.RandomHorizontalFlip(), vision.Rescale(1 / 255, 0)], "image", num_parallel_workers=2
    )
    return data.batch(3, num_parallel_workers=2)


def take_all(it, count=None):
    out = []
    for row in it:
        out.append([v.tolist() for v in row])
        if count is not None and len(out) == count:
            break
    return out


@pytest.mark.parametrize("random_access", [True, False])
def test_state_round_trip_at_every_step(random_access):
    """Restoring the state saved after any step continues with exactly the next batch."""
    data = pipeline(random_access)
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    full, states = [], []
    for _ in range(2):
        for row in it:
            full.append([v.tolist() for v in row])
            states.append(it.get_state())
    for k in range(0, len(states) - 1, 2):
        fresh = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
        fresh.set_state(states[k])
        rest = []
        while fresh.get_state()["epoch"] < 2:  # the epochs left (past them: an error)
            rest += take_all(fresh)
        fresh.close()
        assert rest == full[k + 1 :], f"after step {k}"


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(position=st.integers(0, 40), n=st.integers(1, 40), bs=st.integers(1, 6))
def test_random_access_restore_matches_for_any_position(position, n, bs):
    data = ds.NumpySlicesDataset(np.arange(n), shuffle=True).map(lambda x: x * 3).batch(bs)
    reference = take_all(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    position = min(position, len(reference))
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    it.set_state({"seed": ds.config.get_seed(), "epoch": 0, "position": position})
    assert take_all(it) == reference[position:]


def test_state_carries_the_seed():
    data = ds.NumpySlicesDataset(np.arange(30), shuffle=True)
    ds.config.set_seed(11)
    it = data.create_tuple_iterator(output_numpy=True)
    next(it)
    state = it.get_state()
    expected = take_all(it)
    ds.config.set_seed(99)  # a different global seed must not change the resumed stream
    resumed = data.create_tuple_iterator(output_numpy=True)
    resumed.set_state(state)
    assert take_all(resumed) == expected
    with pytest.raises(ValueError, match="set_state: state must be a dict"):
        resumed.set_state({"epoch": 0})


def test_no_thread_runs_and_nothing_is_read_before_the_first_row_is_asked_for():
    """So a set_state() right after creation (a resumed run) reads nothing before it. No
    sleep stands for "nothing happened": the iterator's creation started no thread and no
    process (the only things that could read later) and read nothing itself, so nothing can
    have been read, however long one waits."""
    source = CountingSource(50)
    data = ds.GeneratorDataset(source, ["i"], shuffle=False, num_parallel_workers=2).batch(5)
    source.reads.clear()  # the source's first row, checked when the pipeline was built
    threads_before = set(threading.enumerate())
    children_before = set(multiprocessing.active_children())
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert set(threading.enumerate()) <= threads_before and not jisu_threads()
    assert set(multiprocessing.active_children()) <= children_before
    assert source.reads == []
    it.set_state({"seed": ds.config.get_seed(), "epoch": 0, "position": 8})
    assert [int(b[0][0]) for b in it] == [40, 45]
    assert sorted(source.reads) == list(range(40, 50))


def test_an_iterator_runs_with_the_configuration_of_its_creation():
    data = ds.NumpySlicesDataset(np.arange(8), shuffle=False)
    ds.config.set_enable_profiler(True)
    try:
        profiled = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    finally:
        ds.config.set_enable_profiler(False)
    plain = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    ds.config.set_enable_profiler(True)
    try:
        assert len(take_all(profiled)) == len(take_all(plain)) == 8
    finally:
        ds.config.set_enable_profiler(False)
    assert profiled.profile()["output"]["batches"] >= 8  # each row waited for was recorded
    with pytest.raises(RuntimeError, match="created without the profiler"):
        plain.profile()


def test_epochs_end_with_stop_iteration_and_continue():
    it = ds.NumpySlicesDataset(np.arange(4), shuffle=False).create_tuple_iterator(
        num_epochs=3, output_numpy=True
    )
    epochs = [[int(r[0]) for r in it] for _ in range(3)]
    assert epochs == [[0, 1, 2, 3]] * 3
    # past the last epoch: an error, as in MindSpore (a RuntimeError), not an empty epoch
    with pytest.raises(ds.EpochsExhaustedError, match="3 epoch\\(s\\) are consumed"):
        next(it)
    assert issubclass(ds.EpochsExhaustedError, RuntimeError)
    stopped = ds.NumpySlicesDataset(np.arange(4)).create_tuple_iterator(num_epochs=3)
    next(stopped)
    stopped.stop()  # stopped by the user: the iteration just ends
    assert list(stopped) == []


def test_dict_iterator_and_output_types():
    data = ds.NumpySlicesDataset(
        {"a": np.arange(3, dtype=np.int16), "s": ["x", "y", "z"]}, shuffle=False
    )
    row = next(data.create_dict_iterator())
    assert set(row) == {"a", "s"}
    assert isinstance(row["a"], torch.Tensor) and row["a"].dtype == torch.int16
    assert isinstance(row["s"], np.ndarray) and row["s"].item() == "x"
    numpy_row = next(data.create_dict_iterator(output_numpy=True))
    assert isinstance(numpy_row["a"], np.ndarray)
    projected = next(data.create_tuple_iterator(columns=["s"], output_numpy=True))
    assert len(projected) == 1 and projected[0].item() == "x"


def test_tensor_shares_memory_with_the_batch():
    data = ds.NumpySlicesDataset(np.zeros((8, 3), np.float32), shuffle=False).batch(4)
    batch = next(iter(data))[0]
    array = batch.numpy()
    array[0, 0] = 5.0
    assert batch[0, 0].item() == 5.0


def slow_pipeline():
    def slow(x):
        time.sleep(0.01)
        return x

    return ds.NumpySlicesDataset(np.arange(10_000), shuffle=False).map(slow, num_parallel_workers=2)


def test_close_stops_every_thread():
    it = slow_pipeline().create_tuple_iterator()
    next(it)
    assert jisu_threads()
    it.close()
    it.close()  # idempotent
    assert not wait_no_jisu_threads()
    with pytest.raises(StopIteration):
        next(it)


def test_dropped_iterator_is_closed_by_garbage_collection():
    it = slow_pipeline().create_tuple_iterator()
    next(it)
    del it
    assert not wait_no_jisu_threads()


def test_break_out_of_for_loop_then_gc_leaves_nothing():
    for i, _ in enumerate(slow_pipeline()):
        if i == 3:
            break
    assert not wait_no_jisu_threads()


def test_keyboard_interrupt_while_waiting_closes_the_iterator(monkeypatch):
    """The op holds the first row until the Ctrl-C reaches the handler, so the main thread is
    always inside the iteration, waiting for a row, when the interrupt is raised (the pipeline
    starts only when a row is asked for): events, not timers that a busy machine could fire
    before the iteration starts or while a row is handed over.

    As a user would, it presses Ctrl-C again if the first one was lost: CPython swallows an
    interrupt that lands inside a finalizer (in a full run, garbage of earlier tests collected
    in the main thread; reported to sys.unraisablehook). The SIGINT handler raises one
    KeyboardInterrupt per press that reaches it, so none can arrive after the test caught it.
    """
    running, pressed, finished = threading.Event(), threading.Event(), threading.Event()

    def on_sigint(signum, frame):
        if pressed.is_set():  # a Ctrl-C pressed while this one is on its way: ignored
            return
        pressed.set()
        raise KeyboardInterrupt

    def on_unraisable(unraisable):
        if issubclass(unraisable.exc_type, KeyboardInterrupt):
            pressed.clear()  # swallowed by a finalizer: press again
        else:
            sys.__unraisablehook__(unraisable)

    monkeypatch.setattr(sys, "unraisablehook", on_unraisable)
    previous = signal.signal(signal.SIGINT, on_sigint)

    def blocked(x):
        running.set()
        pressed.wait(300)  # a hang guard: the press comes at once
        return x

    it = (
        ds.NumpySlicesDataset(np.arange(100), shuffle=False)
        .map(blocked, num_parallel_workers=1)
        .create_tuple_iterator()
    )

    def interrupt_once_the_op_runs():
        if not running.wait(300):  # a hang guard: the op starts at once
            return
        while not finished.is_set():
            if not pressed.is_set():
                _thread.interrupt_main()
            finished.wait(0.5)

    interrupter = threading.Thread(target=interrupt_once_the_op_runs)
    interrupter.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            list(it)
    finally:
        finished.set()
        interrupter.join()
        signal.signal(signal.SIGINT, previous)
    assert it._ctx is None  # closed by the interrupt, not by the garbage collector
    del it
    assert not wait_no_jisu_threads()


def test_exception_in_consumer_loop_does_not_hang():
    with pytest.raises(RuntimeError, match="training failed"):
        for i, _ in enumerate(slow_pipeline()):
            if i == 2:
                raise RuntimeError("training failed")
    assert not wait_no_jisu_threads()
