"""Profilers: where a pipeline's and a training run's time goes, and which lever to pull
first (``jisu doctor``)."""

from .doctor import diagnose_pipeline, diagnose_training, load_callable
from .training import TimeBreakdown, TrainingProfiler, counting_device_syncs

__all__ = [
    "TimeBreakdown",
    "TrainingProfiler",
    "counting_device_syncs",
    "diagnose_pipeline",
    "diagnose_training",
    "load_callable",
]
