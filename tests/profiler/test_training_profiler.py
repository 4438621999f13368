"""The training profiler names the bottleneck of three synthetic runs correctly."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.profiler import TrainingProfiler
from jisu.profiler.training import TimeBreakdown
from jisu.train import LambdaCallback


def fit(data, net, callbacks=(), sink=False, epochs=3):
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    profiler = TrainingProfiler(verbose=False)
    model = jisu.Model(net, nn.CrossEntropyLoss(), opt)
    model.train(epochs, data, callbacks=[profiler, *callbacks], dataset_sink_mode=sink)
    return profiler


def slow_rows(n=48, features=16, delay=0.004):
    """A source that takes ``delay`` seconds per row (a slow disk, a slow decoder)."""

    def rows():
        for i in range(n):
            time.sleep(delay)
            yield np.full(features, i % 3, np.float32), np.int64(i % 3)

    return ds.GeneratorDataset(rows, ["x", "y"]).batch(8)


def fast_rows(n=512, features=16, batch=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, features)).astype(np.float32)
    return ds.NumpySlicesDataset({"x": x, "y": (x[:, 0] > 0).astype(np.int64)}).batch(batch)


def tiny(features=16):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(features, 8), nn.ReLU(), nn.Linear(8, 3))


def heavy(features=16, width=1536):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(features, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
        nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 3),
    )  # fmt: skip


@pytest.mark.parametrize("sink", [False, True])
def test_input_bound(sink):
    profiler = fit(slow_rows(), tiny(), sink=sink)
    shares = profiler.summary().shares()
    assert profiler.verdict == "input-bound", profiler.report()
    assert shares["data_wait"] > 0.6
    assert "num_parallel_workers" in profiler.advice


def test_compute_bound():
    profiler = fit(fast_rows(batch=256), heavy())
    assert profiler.verdict == "compute-bound", profiler.report()
    assert profiler.summary().shares()["step"] > 0.75
    assert "amp_level='O2'" in profiler.advice and "GRAPH_MODE" in profiler.advice


@pytest.mark.parametrize(
    "params, says, not_says",
    [
        ({"amp_level": "O2", "device": "cpu"}, ["amp_level='O0'", "GRAPH_MODE"], ["'O2'"]),
        ({"amp_level": "O2", "device": "cuda:0", "graph_mode": True}, ["already"], ["amp_level"]),
        ({"amp_level": "O0", "device": "cpu", "graph_mode": True}, ["amp_level='O2'"], ["GRAPH"]),
    ],
)
def test_compute_bound_advice_follows_how_the_step_already_runs(params, says, not_says):
    """No advice to switch on what is on already; bf16 on a CPU may be the slow part."""
    profiler = TrainingProfiler(verbose=False)
    profiler._params = params
    profiler.epochs = [TimeBreakdown(steps=10, samples=640, wall=1.0, step=0.95)]
    assert profiler.verdict == "compute-bound"
    assert all(s in profiler.advice for s in says), profiler.advice
    assert not any(s in profiler.advice for s in not_says), profiler.advice


def test_host_bound():
    """Per-step host work outside the step (here: a logging callback taking 5 ms)."""
    logging = LambdaCallback(on_train_step_end=lambda rc: time.sleep(0.005))
    profiler = fit(fast_rows(), tiny(), callbacks=[logging])
    assert profiler.verdict == "host-bound", profiler.report()
    assert profiler.summary().shares()["host"] > 0.6
    assert "dataset_sink_mode=True" in profiler.advice


def test_figures_add_up_and_the_report_prints_once(capsys):
    profiler = TrainingProfiler()
    model = jisu.Model(tiny(), nn.CrossEntropyLoss(), torch.optim.SGD(tiny().parameters(), lr=0))
    model.train(2, fast_rows(), callbacks=[profiler])
    s = profiler.summary()
    assert len(profiler.epochs) == 2 and s.steps == 8 and s.samples == 512
    assert sum(s.shares().values()) == pytest.approx(1.0)
    out = capsys.readouterr().out
    assert out.count("where the time went") == 1 and "verdict:" in out
