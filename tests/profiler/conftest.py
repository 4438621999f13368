"""The profiler's and the doctor's advice on AMP levels depends on whether the CPU computes
bf16 in hardware (:mod:`jisu.amp.cpu_bf16`): these tests pin it to "yes", so that they say
the same on any machine; the tests of the software-bf16 advice set ``JISU_CPU_BF16=0``."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _cpu_with_hardware_bf16(monkeypatch):
    monkeypatch.setenv("JISU_CPU_BF16", "1")
