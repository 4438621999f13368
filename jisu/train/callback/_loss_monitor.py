"""MindSpore's ``mindspore.train.callback._loss_monitor`` path: ``LossMonitor``."""

from ..callbacks.loss_monitor import LossMonitor

__all__ = ["LossMonitor"]
