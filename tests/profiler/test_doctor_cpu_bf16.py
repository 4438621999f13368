"""``jisu doctor`` (and ``jisu train``'s verdict) on a CPU that runs bf16 in software says
what the warning of :mod:`jisu.amp.cpu_bf16` says, with the same measured figure."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import jisu
from jisu.amp import cpu_bf16
from jisu.amp.cpu_bf16 import SoftwareBf16Warning, software_bf16_advice
from jisu.profiler.measure import measure_precision
from jisu.profiler.training import TimeBreakdown, TrainingProfiler


@pytest.fixture
def software_bf16(monkeypatch):
    monkeypatch.setenv("JISU_CPU_BF16", "0")
    cpu_bf16._reset()
    yield
    cpu_bf16._reset()


def compute_bound_advice(**params) -> str:
    profiler = TrainingProfiler(verbose=False)
    profiler._params = params
    profiler.epochs = [TimeBreakdown(steps=10, samples=640, wall=1.0, step=0.95)]
    assert profiler.verdict == "compute-bound"
    return profiler.advice


@pytest.mark.parametrize("level", ["O1", "O2", "O3"])
def test_a_low_level_on_such_a_cpu_is_told_to_use_o0_with_the_warnings_words(software_bf16, level):
    advice = compute_bound_advice(amp_level=level, device="cpu", graph_mode=True)
    assert software_bf16_advice(level) in advice  # word for word the warning's text
    assert "use amp_level='O0' on this CPU" in advice
    assert "whether bf16 is faster than fp32 depends" not in advice


def test_o0_on_such_a_cpu_is_not_told_to_try_bf16(software_bf16):
    advice = compute_bound_advice(amp_level="O0", device="cpu", graph_mode=True)
    assert "keep amp_level='O0': amp_level='O2' on this CPU runs bf16 in software" in advice
    assert "try a lower precision" not in advice
    assert "already runs compiled in O0" in advice  # nothing to change: no lever claimed


def test_a_gpu_or_a_cpu_with_bf16_keeps_the_usual_advice(software_bf16, monkeypatch):
    advice = compute_bound_advice(amp_level="O2", device="cuda:0", graph_mode=True)
    assert "bf16 in software" not in advice and "already runs compiled in O2" in advice
    monkeypatch.setenv("JISU_CPU_BF16", "1")
    advice = compute_bound_advice(amp_level="O0", device="cpu", graph_mode=True)
    assert "try a lower precision (amp_level='O2'" in advice


def test_the_doctors_own_o2_copy_does_not_warn(software_bf16):
    """measure_precision times an O2 copy of an O0 model: its advice says the cost, the
    copy's construction must not warn the user about a level the user did not choose."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Flatten(), nn.Linear(12, 3))
    model = jisu.Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    batches = [(torch.randn(4, 3, 2, 2), torch.randint(0, 3, (4,))) for _ in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        comparison = measure_precision(model, batches, steps=2)
    assert comparison is not None and set(comparison.seconds) == {"O0", "O2"}
    assert not [w for w in caught if issubclass(w.category, SoftwareBf16Warning)]
