"""Profilers: where a training run's time goes, and which lever to pull first."""

from .training import TimeBreakdown, TrainingProfiler, counting_device_syncs

__all__ = ["TimeBreakdown", "TrainingProfiler", "counting_device_syncs"]
