"""config: seed, prefetch size, worker defaults clamped to the CPUs the process may use."""

from __future__ import annotations

import os

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.cpus import available_cpus
from jisu.dataset.validation import resolve_workers
from tests.conftest import rows_of


def test_available_cpus_respects_affinity():
    assert 1 <= available_cpus() <= len(os.sched_getaffinity(0))


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
