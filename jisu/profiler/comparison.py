"""Two ways of running the same train step, timed on this machine, and the advice that follows
from the times: two AMP levels (:class:`PrecisionComparison`), eager against compiled
(:class:`GraphModeComparison`). ``jisu doctor --train`` measures both
(:mod:`jisu.profiler.measure`); the training profiler's compute-bound advice follows them.

Neither advises from assumptions about the hardware: bf16 is faster than fp32 on some CPUs and
slower on others, and ``torch.compile`` may make a small model's step slower, or take longer to
compile than a short run saves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

#: a speed difference between two ways of running the step under which neither is advised
#: over the other (the measurement is a few steps on a possibly busy machine)
SAME_SPEED = 1.1

#: the compute-bound advice on graph mode when it was not measured (``jisu train``, or the
#: doctor with the measurement off or too little data): no claim that it is faster
GRAPH_NOT_MEASURED = (
    "graph mode (not measured here): try jisu.set_context(mode=jisu.GRAPH_MODE) and compare; "
    "jisu doctor --train measures it"
)


def _where(device: str) -> str:
    """Where a measurement ran, for the advice: "on this CPU", "on this GPU"."""
    kind = torch.device(device).type
    return {"cpu": "on this CPU", "cuda": "on this GPU"}.get(kind, f"on this {kind} device")


@dataclass
class PrecisionComparison:
    """Seconds per train step of the same model at two AMP levels, measured on this machine
    (:func:`jisu.profiler.measure.measure_precision`), and the advice that follows from them.

    ``current`` is the level the model runs at, ``other`` the one it was compared with (O0,
    or O2 when it runs at O0); ``seconds`` maps each level to its seconds per step. Advice
    comes from the measured ratio, not from assumptions about the hardware: bf16 is faster
    than fp32 on some CPUs and slower on others, and a small model may gain nothing anywhere."""

    current: str
    other: str
    seconds: dict[str, float]
    device: str = "cpu"
    steps: int = 0

    @property
    def ratio(self) -> float:
        """How many times faster the faster level ran (>= 1)."""
        a, b = self.seconds[self.current], self.seconds[self.other]
        return max(a, b) / max(min(a, b), 1e-12)

    @property
    def faster(self) -> str:
        """The level that ran faster (the current one on a tie)."""
        return self.other if self.seconds[self.other] < self.seconds[self.current] else self.current

    @property
    def change(self) -> str | None:
        """The level to switch to, or None: keep the current one."""
        if self.faster == self.other and self.ratio >= SAME_SPEED:
            return self.other
        return None

    @property
    def advice(self) -> str:
        """Which level to use, with the measured ratio and times. Within ``SAME_SPEED`` of
        each other no level is advised over the other, and the slower one is never advised
        (kept only when it is the faster)."""
        cur, other = self.current, self.other
        fast = self.faster
        slow = other if fast == cur else cur
        ms = (
            f"{fast} {1000 * self.seconds[fast]:.1f} ms, {slow} "
            f"{1000 * self.seconds[slow]:.1f} ms per step"
        )
        where = _where(self.device)
        if self.ratio < SAME_SPEED:
            head = (
                f"{cur} and {other} ran within {SAME_SPEED - 1:.0%} of each other {where} "
                f"({ms}): precision is not the lever"
            )
            if fast == cur:
                return f"{head}; keep amp_level='{cur}'"
            return (
                f"{head} ({fast} was {self.ratio - 1:.0%} faster, within what a few steps "
                "tell apart)"
            )
        if self.change is None:
            return (
                f"{cur} ran {self.ratio:.2f}x faster than {other} {where} ({ms}): keep "
                f"amp_level='{cur}'"
            )
        return (
            f"{other} ran {self.ratio:.2f}x faster than {cur} {where} ({ms}): use "
            f"amp_level='{other}'"
        )


_EAGER = "jisu.set_context(mode=jisu.PYNATIVE_MODE)"
_GRAPH = "jisu.set_context(mode=jisu.GRAPH_MODE)"


@dataclass
class GraphModeComparison:
    """Seconds per train step of the same model eager and compiled (GRAPH_MODE:
    ``torch.compile`` of the step's forward and backward), and what compiling cost, measured
    on this machine (:func:`jisu.profiler.measure.measure_graph_mode`).

    ``current`` is how the model runs, "eager" or "graph"; ``eager`` and ``compiled`` are the
    seconds per step after the first (each the median of ``steps`` steps); ``compile_seconds``
    is what the first compiled step took beyond a compiled step (the compilation).
    ``error`` is the first line of ``torch.compile``'s failure (``compiled`` is then not
    measured: GRAPH_MODE falls back to the eager step). ``epoch_steps``: the steps of one
    epoch of the user's data set, when known, to set the compile's payback against.
    """

    current: str
    eager: float
    compiled: float | None = None
    compile_seconds: float = 0.0
    error: str | None = None
    device: str = "cpu"
    steps: int = 0
    epoch_steps: int | None = None

    @property
    def ratio(self) -> float:
        """How many times faster the faster way ran (>= 1; 1 when compiling failed)."""
        if self.compiled is None:
            return 1.0
        return max(self.eager, self.compiled) / max(min(self.eager, self.compiled), 1e-12)

    @property
    def faster(self) -> str:
        """Which ran faster, "graph" or "eager" (the current one on a tie; "eager" when
        compiling failed)."""
        if self.compiled is None or self.compiled == self.eager:
            return "eager" if self.compiled is None else self.current
        return "graph" if self.compiled < self.eager else "eager"

    @property
    def payback_steps(self) -> int | None:
        """The steps after which the compile time is paid back by faster steps:
        ``ceil(compile_seconds / (eager - compiled))``; None when compiled is not faster."""
        if self.compiled is None or self.compiled >= self.eager:
            return None
        return math.ceil(self.compile_seconds / (self.eager - self.compiled))

    @property
    def change(self) -> str | None:
        """The mode to switch to ("graph" or "eager"), or None: keep the current one. A
        compiled step within ``SAME_SPEED`` of the eager one buys nothing measurable for its
        compile time: a model in graph mode is advised back to eager then."""
        if self.faster == "graph" and self.ratio >= SAME_SPEED:
            return "graph" if self.current == "eager" else None
        return "eager" if self.current == "graph" else None

    def _figures(self) -> str:
        return (
            f"compiled {1000 * self.compiled:.1f} ms, eager {1000 * self.eager:.1f} ms per "
            f"step; compiling took {self.compile_seconds:.1f} s"
        )

    def _payback(self) -> str:
        steps = self.payback_steps
        text = "paid back at once" if steps == 0 else f"paid back after {steps} steps"
        if self.epoch_steps:
            if steps <= self.epoch_steps:
                text += f", within the first epoch of this data set's {self.epoch_steps} steps"
            else:
                text += f", {steps / self.epoch_steps:.1f} epochs of this data set's "
                text += f"{self.epoch_steps} steps"
        return text

    @property
    def advice(self) -> str:
        """Eager or graph mode, with the measured times, the compile time and after how many
        steps it is paid back; within ``SAME_SPEED`` of each other, eager."""
        where = _where(self.device)
        if self.error is not None:
            if self.current == "graph":
                return (
                    f"torch.compile failed on this model ({self.error}), so GRAPH_MODE runs it "
                    f"eagerly after a failed compile: use {_EAGER}"
                )
            return f"graph mode: torch.compile failed on this model ({self.error}): keep eager"
        figures = self._figures()
        if self.faster == "graph" and self.ratio >= SAME_SPEED:
            head = f"graph mode ran {self.ratio:.2f}x faster than eager {where} ({figures}), "
            head += self._payback()
            if self.payback_steps == 0:
                return head + (f": use {_GRAPH}" if self.current == "eager" else ": keep it")
            limit = f"for runs of more than {self.payback_steps} steps"
            if self.current == "eager":
                return f"{head}: use {_GRAPH} {limit}"
            return f"{head}: keep GRAPH_MODE {limit}, use eager for shorter ones"
        if self.ratio >= SAME_SPEED:  # eager faster
            head = f"eager ran {self.ratio:.2f}x faster than graph mode {where} ({figures})"
            if self.current == "eager":
                return head + ": keep eager (PYNATIVE_MODE)"
            return f"{head}: use {_EAGER}"
        head = (
            f"graph mode and eager ran within {SAME_SPEED - 1:.0%} of each other {where} "
            f"({figures}): graph mode is not the lever"
        )
        if self.current == "eager":
            return head + "; keep eager (PYNATIVE_MODE)"
        return f"{head}; {_EAGER} saves the compile time"

    def figures_line(self) -> str:
        """The measurement on one line, for the doctor's figures."""
        if self.error is not None:
            return (
                f"graph mode: torch.compile failed ({self.error}); eager "
                f"{1000 * self.eager:.1f} ms per step"
            )
        return (
            f"graph mode ({self.steps} steps each after a warm-up or compiling step): eager "
            f"{1000 * self.eager:.1f} ms per step, compiled {1000 * self.compiled:.1f} ms per "
            f"step, compiling {self.compile_seconds:.1f} s"
        )
