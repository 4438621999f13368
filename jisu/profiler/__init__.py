"""Profilers: where a pipeline's and a training run's time goes, and which lever to pull
first (``jisu doctor``)."""

from .doctor import diagnose_pipeline, diagnose_training, load_callable
from .training import TimeBreakdown, TrainingProfiler, counting_host_reads

__all__ = [
    "TimeBreakdown",
    "TrainingProfiler",
    "counting_host_reads",
    "diagnose_pipeline",
    "diagnose_training",
    "load_callable",
]
