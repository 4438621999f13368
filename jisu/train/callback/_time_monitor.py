"""MindSpore's ``mindspore.train.callback._time_monitor`` path: ``TimeMonitor``."""

from ..callbacks.time_monitor import TimeMonitor

__all__ = ["TimeMonitor"]
