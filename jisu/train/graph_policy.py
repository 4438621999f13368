"""GRAPH_MODE's choice: compile the train step only when the run is long enough to pay the
compilation back, and keep the compiled step only when it is measured faster.

``torch.compile`` costs seconds to minutes (``jisu train``'s small CNN: 55 s on a quiet
2-core CPU, 201 s on a busy one) and buys a step that may be faster or slower than eager (on
that CPU the compiled steps of an O2 job took 65-75 ms against 23-27 ms eager, issue 48). So
in GRAPH_MODE (``set_context(graph_compile="auto")``, the default) the train step runs eagerly
for its first steps, measured, and then compiles only when

    remaining steps x eager step time x (1 - 1 / expected speedup) > expected compile time

The expected speedup and compile time come from this machine's record of the same network
(its parameter shapes, the batch's shapes and types, the device, the AMP level and the torch
version): what the last run measured, its compile then having warmed torch's compile cache.
Without a record, from priors per device (:data:`PRIORS`). After compiling, the compiled steps
are measured too: slower than eager beyond noise (:data:`NOISE`), the run goes back to eager.
Either way the record is updated, so a network that lost once is not compiled again by the
rule (``graph_compile="always"`` still compiles it). Under ``torchrun`` with more than one
rank the rule is not used and the step compiles from the first step: each rank's measurements
could choose differently, and the ranks must run the same graphs. The numerics are those of the step
actually run: eager's until the switch, the compiled graph's after it (the same up to
floating-point reassociation).

The records live in ``$JISU_GRAPH_RECORDS``, else ``$XDG_CACHE_HOME/jisu/graph_mode.json``
(``~/.cache`` without it): a JSON file read as hostile (size bound, every value checked; a bad
one is ignored), written atomically.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from ..files import atomic_write

__all__ = [
    "DEFAULT_HORIZON",
    "MEASURED_STEPS",
    "NOISE",
    "PRIORS",
    "RECORDS_ENV",
    "WARMUP_STEPS",
    "Decision",
    "Expectation",
    "GraphModeChooser",
    "GraphRecords",
    "decide",
    "default_records_path",
    "network_key",
]

_log = logging.getLogger("jisu.train.steps")

#: eager steps run before the first one measured (allocator and cache warm-up)
WARMUP_STEPS = 1
#: steps measured, eager and compiled, whose medians are compared
MEASURED_STEPS = 5
#: the compiled step is kept when its median is at most this fraction slower than eager's
NOISE = 0.05
#: the remaining steps assumed when the run did not say how many it plans
DEFAULT_HORIZON = 1000
#: records kept (the most recent ones)
MAX_RECORDS = 256
#: a records file larger than this is not read
MAX_RECORDS_BYTES = 1 << 20
RECORDS_ENV = "JISU_GRAPH_RECORDS"


@dataclass(frozen=True)
class Expectation:
    """What compiling is expected to cost (seconds) and buy (eager / compiled step time)."""

    compile_s: float
    speedup: float
    source: str  # "prior" or "record"


#: without a record: a cold compile (no compile cache) of a small network's forward and
#: backward, and the gain of fused kernels. The CPU figure is jisu train's CNN measured on a
#: quiet 2-core machine; CPU kernels gain little from fusion, GPU ones save launches.
PRIORS = {
    "cpu": Expectation(compile_s=55.0, speedup=1.05, source="prior"),
    "cuda": Expectation(compile_s=40.0, speedup=1.3, source="prior"),
}


@dataclass(frozen=True)
class Decision:
    """Whether to compile, and the one line that says why."""

    compile: bool
    reason: str


def decide(eager_step_s: float, remaining_steps: int, expected: Expectation) -> Decision:
    """The rule: compile when the time the remaining steps would save exceeds the compile
    time (both from ``expected``)."""
    saved_per_step = eager_step_s * (1.0 - 1.0 / expected.speedup)
    saved = remaining_steps * saved_per_step
    basis = (
        f"eager steps take {eager_step_s * 1e3:.1f} ms; {remaining_steps} steps left; "
        f"compiling is expected to take {expected.compile_s:.0f} s and make steps "
        f"{expected.speedup:.2f}x as fast ({expected.source})"
    )
    if saved_per_step <= 0:
        return Decision(False, f"running eagerly: {basis}, so it would never pay back")
    payback = math.ceil(expected.compile_s / saved_per_step)
    if saved > expected.compile_s:
        return Decision(True, f"compiling: {basis}; it pays back after {payback} steps")
    return Decision(
        False, f"running eagerly: {basis}; it would pay back only after {payback} steps"
    )


def network_key(network: Any, inputs: Sequence[Any], amp_level: Any) -> str:
    """What identifies a compile in the records: the network's class and parameter shapes,
    the batch's shapes and types, the device, the AMP level and the torch version."""
    parts: list[str] = [type(network).__qualname__, str(amp_level), torch.__version__]
    if isinstance(network, torch.nn.Module):
        parts += [f"{n}:{tuple(p.shape)}:{p.dtype}" for n, p in network.named_parameters()]
    for value in inputs:
        if isinstance(value, torch.Tensor):
            parts.append(f"{tuple(value.shape)}:{value.dtype}:{value.device.type}")
        else:
            parts.append(type(value).__name__)
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def default_records_path() -> str:
    path = os.environ.get(RECORDS_ENV)
    if path:
        return path
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "jisu", "graph_mode.json")


def _positive(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


class GraphRecords:
    """This machine's measured compiles: per network key, the last compile time and the
    eager and compiled step times. Read as hostile, written atomically; a file that cannot be
    read or written is left alone (the rule then uses its priors)."""

    FIELDS = ("compile_s", "eager_step_s", "compiled_step_s", "time")

    def __init__(self, path: str | None = None) -> None:
        self.path = path or default_records_path()

    def _load(self) -> dict[str, dict[str, float]]:
        try:
            if os.path.getsize(self.path) > MAX_RECORDS_BYTES:
                _log.warning("graph mode records %s: over 1 MiB, not read", self.path)
                return {}
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        entries = data.get("entries") if isinstance(data, dict) else None
        if not isinstance(entries, dict):
            return {}
        return {
            key: {name: float(entry[name]) for name in self.FIELDS}
            for key, entry in entries.items()
            if isinstance(key, str)
            and len(key) <= 64
            and isinstance(entry, dict)
            and all(_positive(entry.get(name)) for name in self.FIELDS)
        }

    def expectation(self, key: str) -> Expectation | None:
        entry = self._load().get(key)
        if entry is None:
            return None
        speedup = entry["eager_step_s"] / entry["compiled_step_s"]
        return Expectation(compile_s=entry["compile_s"], speedup=speedup, source="record")

    def store(
        self, key: str, compile_s: float, eager_step_s: float, compiled_step_s: float
    ) -> None:
        entries = self._load()
        entries[key] = {
            "compile_s": max(compile_s, 1e-6),
            "eager_step_s": max(eager_step_s, 1e-9),
            "compiled_step_s": max(compiled_step_s, 1e-9),
            "time": time.time(),
        }
        newest = sorted(entries.items(), key=lambda item: item[1]["time"])[-MAX_RECORDS:]
        try:
            with atomic_write(self.path, "w") as f:
                json.dump({"version": 1, "entries": dict(newest)}, f)
        except OSError as exc:
            _log.info("graph mode records %s not written: %s", self.path, exc)


class GraphModeChooser:
    """The run's choice between the eager and the compiled step, as the measurements come:
    :meth:`next_step` says which to run ("eager", "compile" for the compiling call,
    "compiled"); :meth:`observe` takes each measured step's seconds (the caller's clock)."""

    #: state -> the step run in it
    _STEPS: ClassVar[dict[str, str]] = {
        "measure eager": "eager",
        "compile": "compile",
        "measure compiled": "compiled",
        "eager": "eager",
        "compiled": "compiled",
    }

    def __init__(self, device_type: str, records: GraphRecords | None = None) -> None:
        self.device_type = device_type
        self.records = records if records is not None else GraphRecords()
        self.key: str | None = None  # set by the step at its first call
        self.remaining: int | None = None  # None: the run did not say
        self.eager_times: list[float] = []
        self.compiled_times: list[float] = []
        self.compile_s: float | None = None
        self.state = "measure eager"
        self.decision: Decision | None = None
        self.verdict: str | None = None  # after the compiled steps were measured

    @property
    def measuring(self) -> bool:
        """Whether the steps are still timed (until the choice is final)."""
        return self.state not in ("eager", "compiled")

    def next_step(self) -> str:
        return self._STEPS[self.state]

    def plan(self, remaining_steps: int) -> None:
        """The number of steps the run will make from now (Model.train says it)."""
        self.remaining = max(0, int(remaining_steps))

    def observe(self, seconds: float, *, compile_failed: bool = False) -> None:
        """The step just run took ``seconds`` (the compiling call: compile and step)."""
        if self.remaining is not None:
            self.remaining = max(0, self.remaining - 1)
        if self.state == "measure eager":
            self.eager_times.append(seconds)
            if len(self.eager_times) >= WARMUP_STEPS + MEASURED_STEPS:
                self._decide()
        elif self.state == "compile":
            if compile_failed:  # the step warned and runs eagerly from now on
                self._settle("eager", "the compile failed: running eagerly")
            else:
                self.compile_s = max(seconds - self._eager_s(), 0.0)
                self.state = "measure compiled"
        elif self.state == "measure compiled":
            self.compiled_times.append(seconds)
            if len(self.compiled_times) >= MEASURED_STEPS:
                self._judge()

    def _eager_s(self) -> float:
        return statistics.median(self.eager_times[WARMUP_STEPS:])

    def _decide(self) -> None:
        expected = PRIORS.get(self.device_type, PRIORS["cpu"])
        if self.key is not None:
            expected = self.records.expectation(self.key) or expected
        remaining = DEFAULT_HORIZON if self.remaining is None else self.remaining
        self.decision = decide(self._eager_s(), remaining, expected)
        _log.info("GRAPH_MODE: %s", self.decision.reason)
        self.state = "compile" if self.decision.compile else "eager"

    def _judge(self) -> None:
        eager, compiled = self._eager_s(), statistics.median(self.compiled_times)
        compile_s = self.compile_s or 0.0
        if self.key is not None:
            self.records.store(self.key, compile_s, eager, compiled)
        measured = (
            f"compiled steps take {compiled * 1e3:.1f} ms against {eager * 1e3:.1f} ms eager "
            f"(compiling took {compile_s:.1f} s)"
        )
        if compiled <= eager * (1.0 + NOISE):
            self._settle("compiled", f"{measured}: keeping the compiled step")
        else:
            self._settle("eager", f"{measured}: running eagerly from now on")

    def _settle(self, state: str, verdict: str) -> None:
        self.state, self.verdict = state, verdict
        _log.info("GRAPH_MODE: %s", verdict)

    def describe(self) -> str:
        """What was chosen and why, so far (one or two lines)."""
        if self.decision is None:
            done, needed = len(self.eager_times), WARMUP_STEPS + MEASURED_STEPS
            return f"GRAPH_MODE (auto): measuring eager steps ({done} of {needed}) before choosing"
        lines = [f"GRAPH_MODE (auto): {self.decision.reason}"]
        if self.verdict is not None:
            lines.append(f"GRAPH_MODE (auto): {self.verdict}")
        return "\n".join(lines)
