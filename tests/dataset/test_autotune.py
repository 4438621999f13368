"""AutoTune gives a slow stage workers, within the CPUs; its saved settings reproduce."""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.cpus import available_cpus


def slow(x):
    time.sleep(0.005)
    return x


def pipeline():
    data = ds.NumpySlicesDataset(np.arange(240, dtype=np.float32), shuffle=False)
    return data.map(slow, num_parallel_workers=1).batch(4, num_parallel_workers=1)


@pytest.fixture
def settings_reset():
    yield
    ds.config.set_enable_autotune(False)
    ds.config.set_enable_profiler(False)
    ds.config.load_autotune_config(None)


@pytest.mark.skipif(available_cpus() < 2, reason="needs 2 CPUs to add a worker")
def test_autotune_grows_the_slow_stage_and_the_json_reproduces_it(tmp_path, caplog, settings_reset):
    path = tmp_path / "tuned.json"
    ds.config.set_enable_autotune(True, str(path))
    caplog.set_level(logging.INFO, logger="jisu.dataset.autotune")
    iterator = pipeline().create_tuple_iterator(num_epochs=1, output_numpy=True)
    begin = time.perf_counter()
    values = np.concatenate([batch[0] for batch in iterator])
    seconds = time.perf_counter() - begin
    np.testing.assert_array_equal(values, np.arange(240))  # tuning changes no output
    changes = [r.getMessage() for r in caplog.records if "workers 1 -> 2" in r.getMessage()]
    assert changes and "busy" in changes[0] and "waited" in changes[0]
    assert seconds < 240 * 0.005 * 0.9  # faster than one worker could be

    saved = json.loads(path.read_text())
    (stage,) = saved["stages"].values()
    assert 2 <= stage["workers"] <= available_cpus()  # never more workers than CPUs
    assert stage["inflight"] >= stage["workers"]

    ds.config.set_enable_autotune(False)
    ds.config.load_autotune_config(str(path))
    ds.config.set_enable_profiler(True)
    iterator = pipeline().create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert sum(len(batch[0]) for batch in iterator) == 240
    (profiled,) = iterator.profile()["stages"]
    assert profiled["workers"] == stage["workers"]  # starts where tuning ended


def test_load_rejects_a_file_that_is_not_autotune_output(tmp_path, settings_reset):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="not a jisu AutoTune file"):
        ds.config.load_autotune_config(str(path))
