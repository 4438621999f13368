"""A Ctrl-C that lands while a pipeline shuts down is held back until the shutdown is
complete: nothing is left running, and the interrupt still reaches the program."""

from __future__ import annotations

import signal
import threading

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.interrupts import interrupts_deferred
from tests.conftest import jisu_threads, wait_no_jisu_threads


@pytest.fixture
def sigint_counter():
    """A SIGINT handler of the test's own that counts presses (and restores the previous)."""
    presses: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: presses.append(signum))
    yield presses
    signal.signal(signal.SIGINT, previous)


def test_a_press_inside_the_block_is_delivered_after_it(sigint_counter):
    with interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):  # bytecodes in which an undeferred handler would have run
            pass
        assert sigint_counter == []
    assert sigint_counter == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is not None  # the test's handler is back


def test_a_second_press_is_delivered_at_once(sigint_counter):
    with interrupts_deferred():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):
            pass
        assert sigint_counter == [signal.SIGINT]  # the second press: the user insists
    assert sigint_counter == [signal.SIGINT]  # the first is not delivered twice


def test_outside_the_main_thread_nothing_changes(sigint_counter):
    seen = []

    def in_thread():
        with interrupts_deferred():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == [signal.getsignal(signal.SIGINT)]


def test_ctrl_c_during_the_shutdown_leaves_nothing_running(sigint_counter):
    """The interrupt lands while the run joins its first thread (as a second Ctrl-C, or one
    arriving while the garbage collector closes a dropped iterator): every thread and pool
    of the run still stops, and the interrupt is delivered once the shutdown is over."""
    it = (
        ds.NumpySlicesDataset(np.arange(10_000), shuffle=False)
        .map(lambda x: x, num_parallel_workers=2)
        .batch(4, num_parallel_workers=2)
        .create_tuple_iterator()
    )
    next(it)
    assert jisu_threads()
    ctx = it._ctx
    first = ctx._threads[0]
    join = first.join
    pressed_in_join = []

    def join_with_a_press(timeout=None):
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):  # the handler runs here unless it is held back
            pass
        pressed_in_join.append(list(sigint_counter))
        join(timeout)

    first.join = join_with_a_press
    it.close()
    assert pressed_in_join == [[]]  # held back during the shutdown...
    assert sigint_counter == [signal.SIGINT]  # ...and delivered after it
    assert not wait_no_jisu_threads()


def test_an_interrupt_raised_inside_the_shutdown_does_not_stop_it():
    """With Python's own handler (a KeyboardInterrupt), the shutdown runs to its end and the
    KeyboardInterrupt is raised after it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        it = (
            ds.NumpySlicesDataset(np.arange(10_000), shuffle=False)
            .map(lambda x: x, num_parallel_workers=2)
            .create_tuple_iterator()
        )
        next(it)
        ctx = it._ctx
        first = ctx._threads[0]
        join = first.join

        def join_with_a_press(timeout=None):
            signal.raise_signal(signal.SIGINT)
            join(timeout)

        first.join = join_with_a_press
        with pytest.raises(KeyboardInterrupt):
            it.close()
        assert ctx.stop.is_set() and not ctx._pools and not ctx._closers
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not wait_no_jisu_threads()
