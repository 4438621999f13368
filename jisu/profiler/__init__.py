"""Profilers: where a pipeline's and a training run's time goes, and which lever to pull
first (``jisu doctor``); MindSpore's ``Profiler`` (:mod:`.profiling`, on ``torch.profiler``);
AutoTune and the pipeline profile's verdict, which the data engine runs through
:mod:`jisu.dataset.engine.policies` (installed here, on import)."""

from ..dataset.engine import policies
from .autotune import AutoTuner
from .doctor import diagnose_pipeline, diagnose_training, load_callable
from .pipeline import analyse_pipeline
from .profiling import Profiler
from .training import TimeBreakdown, TrainingProfiler, counting_host_reads

__all__ = [
    "AutoTuner",
    "Profiler",
    "TimeBreakdown",
    "TrainingProfiler",
    "counting_host_reads",
    "diagnose_pipeline",
    "diagnose_training",
    "load_callable",
]

policies.install(AutoTuner, analyse_pipeline)
