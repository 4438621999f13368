"""The policies the engine runs but does not own: AutoTune and the profile's verdict.

The engine measures (stage statistics, per-op times) and can change a running stage's width;
deciding *what* to change, and telling the user what limits the pipeline, is the profiler's
job (DESIGN.md: ``profiler`` sits on top of ``dataset``, which knows nothing of it). So
:mod:`jisu.profiler` installs its implementations here when it is imported (:func:`install`),
and the iterator calls them through this module. ``import jisu`` no longer imports the
profiler (its names are imported when first used), so the first call that needs them
imports it, by name: the engine does not depend on the profiler's modules.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .plan import Plan
    from .stats import OpTimes, StageStats


class Tuner(Protocol):
    """Widens the stages that hold a pipeline back while it runs (AutoTune)."""

    def register(
        self,
        name: str,
        pool: Any,
        slots: threading.Semaphore,
        stats: StageStats,
        inflight: int,
        max_workers: int | None = None,
    ) -> None:
        """A stage it may widen: its worker pool, in-flight slots and statistics; never past
        ``max_workers`` (an explicit worker count in the plan)."""

    def run(self, stop: threading.Event) -> None:
        """Tune until ``stop`` is set (on the iterator's own thread)."""


#: ``(cpus, memory budget in bytes, settings file or None) -> Tuner``
TunerFactory = Callable[[int, int, "str | None"], Tuner]
#: ``(stage summaries, output figures, plan, op times or None) -> the profile``: the
#: figures with each stage's ops joined in, plus the bottleneck and a suggestion
ProfileAnalysis = Callable[[list, dict, "Plan", "OpTimes | None"], dict]

_tuner: TunerFactory | None = None
_analysis: ProfileAnalysis | None = None


def install(tuner: TunerFactory, analysis: ProfileAnalysis) -> None:
    """Set the implementations (``jisu.profiler`` calls this on import)."""
    global _tuner, _analysis
    _tuner, _analysis = tuner, analysis


def _install_defaults() -> None:
    """Import :mod:`jisu.profiler` (which installs its implementations) when nothing is
    installed yet."""
    if _tuner is None:
        importlib.import_module("jisu.profiler")


def installed() -> tuple[TunerFactory | None, ProfileAnalysis | None]:
    """The implementations set, to :func:`install` in another process (a pipeline
    process, whose jisu package ``__init__`` did not run)."""
    _install_defaults()
    return _tuner, _analysis


def make_tuner(cpus: int, budget: int, path: str | None) -> Tuner:
    """A new tuner for one iterator's first epoch."""
    _install_defaults()
    if _tuner is None:  # jisu.profiler could not install it
        raise RuntimeError("AutoTune is not installed: import jisu.profiler (it installs it)")
    return _tuner(cpus, budget, path)


def analyse(stages: list, output: dict, plan: Plan, times: OpTimes | None) -> dict:
    """The profile of an iterator: its figures, with the verdict when one is installed."""
    _install_defaults()
    if _analysis is None:
        return {"stages": stages, "output": output}
    return _analysis(stages, output, plan, times)
