"""Sink mode's CUDA-graph step on a real device (``gpu`` marker: benchmarks/gpu_check.sh runs
these; the default run leaves them out).

A run whose step is captured and replayed ends with the weights of the same run launched
step by step (within fp tolerance: the same kernels, another stream), dropout and AMP with
loss scaling included; a replayed step makes no host synchronisation (CUDA's sync-debug mode
raises on one); torch.compile's "reduce-overhead" mode trains the same model too.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import jisu
from jisu import amp
from jisu.train.capture import CudaGraphBackend, GraphedStep

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


@pytest.fixture(autouse=True)
def default_capture():
    yield
    jisu.set_context(sink_capture="cuda_graph")


def data(batch=32, n=512):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 20)).astype(np.float32)
    y = (x[:, :3].sum(1) > 0).astype(np.int64) + (x[:, 3] > 1)
    return jisu.dataset.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(
        batch, drop_remainder=True
    )


def model(optimizer: str, level: str):
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 64), nn.ReLU(),
        nn.Linear(64, 3),
    ).cuda()  # fmt: skip
    if optimizer == "sgd":
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, fused=True)
    else:
        opt = torch.optim.Adam(net.parameters(), lr=1e-3, capturable=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step / 10))
    return jisu.Model(net, nn.CrossEntropyLoss(), opt, amp_level=level, lr_scheduler=sched)


def train(capture: str, optimizer: str, level: str):
    jisu.set_context(sink_capture=capture)
    m = model(optimizer, level)
    torch.manual_seed(1)  # the dropout draws
    m.train(2, data(), dataset_sink_mode=True, sink_size=8)
    torch.cuda.synchronize()
    return m


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("level", ["O0", "O2"])
def test_a_captured_run_trains_the_model_of_the_eager_run(optimizer, level):
    eager = train("off", optimizer, level)
    captured = train("cuda_graph", optimizer, level)
    report = captured._state.step_capture
    assert report.kind == "cuda_graph" and report.reason is None, report.describe()
    assert report.replays == 16 - 3 and report.eager_steps == 3
    tol = dict(rtol=1e-4, atol=1e-5) if level == "O0" else dict(rtol=1e-2, atol=1e-3)
    for (name, a), b in zip(
        eager.network.state_dict().items(), captured.network.state_dict().values()
    ):
        torch.testing.assert_close(b, a, **tol, msg=f"{name} differs")
    if level == "O2":  # fp16: the dynamic loss scale went the same way
        assert captured.loss_scale_manager.state_dict() == eager.loss_scale_manager.state_dict()


def test_a_replayed_step_makes_no_host_synchronisation():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 3)).cuda()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, capturable=True)
    manager = amp.DynamicLossScaleManager(2.0**12, check_interval=10_000)
    step = amp.TrainStep(amp.train_step.loss_forward(net, nn.CrossEntropyLoss()), opt, manager)
    graphed = GraphedStep(step, CudaGraphBackend(torch.device("cuda")), net, opt, manager)
    x = torch.randn(16, 32, 20, device="cuda")
    y = torch.randint(0, 3, (16, 32), device="cuda")
    for i in range(5):  # warm-up and capture
        graphed(x[i], y[i])
    torch.cuda.synchronize()
    assert graphed.captured
    losses = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for i in range(5, 16):
            losses.append(graphed(x[i], y[i]))
    finally:
        torch.cuda.set_sync_debug_mode("default")
    values = torch.stack(losses).cpu()
    assert torch.isfinite(values).all() and len(set(values.tolist())) > 1


def test_reduce_overhead_trains_the_model_of_the_eager_run():
    eager = train("off", "adam", "O0")
    compiled = train("reduce-overhead", "adam", "O0")
    assert compiled._state.step_capture.kind == "reduce-overhead"
    for a, b in zip(eager.network.state_dict().values(), compiled.network.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4)
