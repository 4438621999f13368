"""The pipeline profiler: per-stage figures and the bottleneck."""

from __future__ import annotations

import time

import numpy as np
import pytest

import jisu.dataset as ds


@pytest.fixture
def profiling():
    ds.config.set_enable_profiler(True)
    yield
    ds.config.set_enable_profiler(False)


def slow(x):
    time.sleep(0.005)  # a stage of known cost: 5 ms per row
    return x


def test_a_slow_stage_is_named_with_a_busy_share_near_one(profiling):
    data = ds.NumpySlicesDataset(np.arange(80, dtype=np.float32), shuffle=False)
    data = data.map(slow, num_parallel_workers=1).batch(8, num_parallel_workers=1)
    iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert sum(len(b[0]) for b in iterator) == 80
    report = iterator.profile()
    (stage,) = report["stages"]  # map and batch run fused, as one stage
    assert stage["rows"] == 10 and stage["workers"] == 1  # its output rows: 10 batches of 8
    assert stage["busy_share"] > 0.85
    assert stage["ms_per_row"] == pytest.approx(8 * 5.0, rel=0.4)
    assert report["output"]["consumer_wait_share"] > 0.8
    assert report["bottleneck"] == stage["stage"]
    assert "num_parallel_workers" in report["suggestion"]
    assert stage["bytes_per_row"] == pytest.approx(8 * 4.0)  # a batch of 8 float32


def test_a_slow_consumer_is_named_instead(profiling):
    data = ds.NumpySlicesDataset(np.arange(64, dtype=np.float32), shuffle=False).batch(8)
    iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    for _ in iterator:
        time.sleep(0.01)  # the training step
    report = iterator.profile()
    assert report["bottleneck"] == "consumer"
    assert report["output"]["consumer_wait_share"] < 0.05


def test_profile_needs_the_profiler_on():
    iterator = ds.NumpySlicesDataset(np.arange(4)).create_tuple_iterator(num_epochs=1)
    with pytest.raises(RuntimeError, match="set_enable_profiler"):
        iterator.profile()
    iterator.close()
