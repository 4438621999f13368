"""Ctrl-C held back while a pipeline shuts down, so that an interrupt cannot leave it half
stopped.

A KeyboardInterrupt is raised in the main thread between any two bytecodes. One that lands
inside a run's shutdown (a second Ctrl-C while the first one closes the iterator, or one that
arrives while the garbage collector runs a dropped iterator's finalizer) stops the shutdown
part way: threads whose stop event was never set, or pools never shut down, then run until
the program ends. While a shutdown runs in the main thread, a first Ctrl-C is therefore
recorded and delivered once the shutdown is complete, to whatever handler was in place; a
second one is delivered at once, so that a shutdown that hangs can still be interrupted.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) back until the block ends, then deliver it; a second one during
    the block is delivered at once. Nothing changes outside the main thread (signals are
    handled only there) or when the handler in place was not set from Python."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous is signal.SIG_IGN:  # not restorable, or nothing to defer
        yield
        return
    pressed: list[bool] = []

    def hold(signum: int, frame: object) -> None:
        if pressed:  # pressed again: the user insists
            signal.signal(signal.SIGINT, previous)
            signal.raise_signal(signal.SIGINT)
            return
        pressed.append(True)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is hold:
            signal.signal(signal.SIGINT, previous)
            if pressed:
                signal.raise_signal(signal.SIGINT)
