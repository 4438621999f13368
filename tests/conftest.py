"""Shared fixtures: a fixed seed, MindSpore's context put back after each test, a check that
no test leaves pipeline threads behind, and hang guards long enough for a loaded machine."""

from __future__ import annotations

import gc
import os
import signal
import tempfile
import threading
import time

import pytest

import jisu.dataset as ds
from jisu.dataset.core.cpus import CPUS_ENV, available_cpus
from jisu.train.graph_policy import RECORDS_ENV

#: every test's timeout, at least (pyproject's default too): a timeout only guards against a
#: hang, and a machine under load is many times slower than a quiet one (`import jisu` took
#: 28.7 s on a busy 2-core machine against 1.5 s quiet; the tests that ran into 120 s passed
#: alone), so a shorter marker is raised to it rather than becoming a verdict on the load
HANG_GUARD_S = 600


def pytest_configure(config):
    """Ctrl-C as in a terminal, whatever started the run: a shell starting a command in the
    background (``pytest ... &`` beside busy loops) ignores SIGINT in it, and children inherit
    that, so ``_thread.interrupt_main()`` did nothing: the Ctrl-C tests hung ("DID NOT
    RAISE KeyboardInterrupt", a 300 s timeout) only in such runs. Python's own handler puts
    back what a foreground run has, for the tests and for the programs they start."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # GRAPH_MODE's records of measured compiles: the run's own, not the user's cache (where
    # a record would change what the rule chooses)
    os.environ[RECORDS_ENV] = os.path.join(tempfile.mkdtemp(prefix="jisu-tests-"), "graph.json")


def pytest_collection_modifyitems(config, items):
    for item in items:
        marker = item.get_closest_marker("timeout")
        if marker is not None and marker.args and marker.args[0] < HANG_GUARD_S:
            item.add_marker(pytest.mark.timeout(HANG_GUARD_S), append=False)


#: pipeline threads a test has already been failed for leaving behind: later tests neither
#: wait for them nor fail on them (one leak once made every later test wait 120 s and fail,
#: and the run outlasted CI's limit instead of reporting the one test that leaked)
_REPORTED_LEAKS: set[threading.Thread] = set()


def jisu_threads() -> list[threading.Thread]:
    return [
        t
        for t in threading.enumerate()
        if t.name.startswith("jisu-") and t.is_alive() and t not in _REPORTED_LEAKS
    ]


def wait_no_jisu_threads(timeout: float = 120.0) -> list[threading.Thread]:
    """Collect garbage (closing dropped iterators) and wait for pipeline threads to end; the
    timeout is a hang guard for busy machines (it returns as soon as the threads are gone)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = jisu_threads()
        if not alive or time.monotonic() > deadline:  # a full collection costs ~0.1 s: only
            return alive  # when a dropped iterator may still hold threads
        gc.collect()
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def _seed_and_no_leaks():
    import jisu.context as context

    ds.config.set_seed(1234)
    # a test's set_context(device_target="CPU") must not decide another test's backend
    saved = [(d, dict(d)) for d in (context._context, context._auto_parallel)]
    saved += [(context._auto_parallel_set, dict(context._auto_parallel_set))]
    yield
    for live, copy in saved:
        live.clear()
        live.update(copy)
    alive = wait_no_jisu_threads()
    _REPORTED_LEAKS.update(alive)
    assert not alive, f"pipeline threads left running: {[t.name for t in alive]}"


@pytest.fixture
def at_least_two_cpus(monkeypatch):
    """The library sees 2 usable CPUs or more: ``JISU_CPUS=2`` where it would see 1, a count
    of 2 or more (the machine's, or a ``JISU_CPUS`` run's) left as it is. For tests whose
    subject needs 2 workers (explicit counts are clamped to the CPUs), so that they run and
    pass on a 1-CPU machine too; the workers are real, they only share the CPU there."""
    if available_cpus() < 2:
        monkeypatch.setenv(CPUS_ENV, "2")


@pytest.fixture
def one_intra_op_thread():
    """Torch computes on one intra-op thread during the test (restored after). For tests of
    tiny training steps (a batch of 64 small images): on a loaded 2-core machine torch's
    default of a thread per core made each step 6-7x slower (43-50 ms against 7 ms measured)
    as its threads wait on each other, and the AMP accuracy test ran into its timeout. One
    thread also makes the arithmetic, so the figures compared, the same whatever the core
    count."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def rows_of(dataset, column: int | None = 0, num_epochs: int = 1) -> list:
    """All rows of one epoch as Python values (column ``column``, or whole rows)."""
    it = dataset.create_tuple_iterator(num_epochs=num_epochs, output_numpy=True)
    out = []
    try:
        for row in it:
            out.append(row[column].tolist() if column is not None else [v.tolist() for v in row])
    finally:
        it.close()
    return out


def image_source(
    n: int, shape: tuple, seed: int, random_access: bool, num_parallel_workers: int | None = None
):
    """Shuffled (image, label=i) rows of random uint8 images: random-access (NumPy) or a
    generator, so tests can check both execution paths on the same data."""
    import numpy as np

    images = np.random.default_rng(seed).integers(0, 255, (n, *shape)).astype(np.uint8)
    if random_access:
        kwargs = (
            {} if num_parallel_workers is None else {"num_parallel_workers": num_parallel_workers}
        )
        return ds.NumpySlicesDataset(
            {"image": images, "label": np.arange(n)}, shuffle=True, **kwargs
        )

    def gen():
        for i in range(n):
            yield images[i], np.array(i)

    return ds.GeneratorDataset(gen, ["image", "label"], shuffle=True)
