"""config: seed, prefetch size, worker defaults clamped to the CPUs the process may use."""

from __future__ import annotations

import os

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.core.cpus import CPUS_ENV, available_cpus, detected_cpus
from jisu.dataset.core.validation import resolve_workers
from tests.conftest import rows_of


def test_available_cpus_respects_affinity(monkeypatch):
    monkeypatch.delenv(CPUS_ENV, raising=False)  # the machine's own count, not an override
    assert 1 <= available_cpus() == detected_cpus() <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("reported", [1, 2, 16])
def test_jisu_cpus_overrides_the_detected_count_everywhere(monkeypatch, reported):
    """``JISU_CPUS=N``: the library behaves as on N CPUs (the default worker count, the clamp
    of explicit counts), whatever the machine has: how tests run "as on 16 CPUs" on 2."""
    monkeypatch.setenv(CPUS_ENV, str(reported))
    monkeypatch.setattr(ds.config, "_num_parallel_workers", 8)  # config's default
    assert available_cpus() == reported
    assert ds.config.get_num_parallel_workers() == min(8, reported)
    assert resolve_workers("map", 10_000, 1) == reported
    assert resolve_workers("map", None, 4) == min(4, reported)


@pytest.mark.parametrize("bad", ["0", "-2", "many", "1.5"])
def test_a_bad_jisu_cpus_is_refused_naming_it(monkeypatch, bad):
    monkeypatch.setenv(CPUS_ENV, bad)
    with pytest.raises(ValueError, match=rf"JISU_CPUS must be a whole number >= 1 .*{bad!r}"):
        available_cpus()


def test_worker_counts_are_clamped_not_refused():
    assert resolve_workers("map", 10_000, 1) == available_cpus()
    ds.config.set_num_parallel_workers(64)
    try:
        assert ds.config.get_num_parallel_workers() == available_cpus()
    finally:
        ds.config.set_num_parallel_workers(8)
    data = ds.NumpySlicesDataset(np.arange(5), shuffle=False).map(
        lambda x: x, num_parallel_workers=512
    )
    assert rows_of(data) == list(range(5))


def test_seed_and_prefetch_setters_validate():
    ds.config.set_seed(5)
    assert ds.config.get_seed() == 5
    with pytest.raises(ValueError, match="set_seed: seed must be an int"):
        ds.config.set_seed(-1)
    old = ds.config.get_prefetch_size()
    ds.config.set_prefetch_size(2)
    try:
        data = ds.NumpySlicesDataset(np.arange(100), shuffle=False).map(lambda x: x + 1)
        assert rows_of(data) == list(range(1, 101))
    finally:
        ds.config.set_prefetch_size(old)
    with pytest.raises(ValueError, match="set_prefetch_size: size must be an int >= 1"):
        ds.config.set_prefetch_size(0)


def test_same_seed_same_order_different_seed_different_order():
    def order(seed):
        ds.config.set_seed(seed)
        return rows_of(ds.NumpySlicesDataset(np.arange(100)))

    assert order(3) == order(3)
    assert order(3) != order(4)


def _double(x):
    return x * 2


def test_shared_memory_off_sends_process_results_pickled(monkeypatch):
    from jisu.dataset.engine.processes import slab_pool

    made = []
    real = slab_pool.Slab

    def counting(*args, **kwargs):
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(slab_pool, "Slab", counting)

    def run():
        data = ds.NumpySlicesDataset(np.arange(64).reshape(16, 4), ["x"], shuffle=False)
        data = data.map(_double, num_parallel_workers=2, python_multiprocessing=True)
        return rows_of(data)

    assert ds.config.get_enable_shared_mem()
    with_shm = run()
    assert made  # results came back in slabs
    made.clear()
    ds.config.set_enable_shared_mem(False)
    try:
        assert run() == with_shm == [[2 * v for v in range(4 * k, 4 * k + 4)] for k in range(16)]
        assert not made
    finally:
        ds.config.set_enable_shared_mem(True)


def test_mindspore_config_switches_have_their_effect_or_say_they_have_none():
    from jisu.dataset.engine.context import RunSettings

    try:
        ds.config.set_enable_watchdog(False)
        assert RunSettings.from_config().timeout_interval == float("inf")  # no warnings
        ds.config.set_enable_watchdog(True)
        assert RunSettings.from_config().timeout_interval == 300
        ds.config.set_auto_num_workers(True)
        assert ds.config.get_enable_autotune() and ds.config.get_auto_num_workers()
        ds.config.set_auto_num_workers(False)
        assert not ds.config.get_enable_autotune()
        ds.config.set_fast_recovery(False)
        assert ds.config.get_fast_recovery() is False
        ds.config.set_monitor_sampling_interval(50)
        assert ds.config.get_monitor_sampling_interval() == 50
        with pytest.raises(TypeError, match="set_enable_shared_mem: the argument must be a bool"):
            ds.config.set_enable_shared_mem(1)
        with pytest.raises(ValueError, match="set_monitor_sampling_interval: interval must be"):
            ds.config.set_monitor_sampling_interval(0)
    finally:
        ds.config.set_enable_watchdog(True)
        ds.config.set_auto_num_workers(False)
        ds.config.set_fast_recovery(True)
        ds.config.set_monitor_sampling_interval(1000)
