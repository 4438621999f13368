"""MindSpore's ``mindspore.train.summary.summary_record`` path: ``SummaryRecord``
(:mod:`jisu.train.summary_record` writes TensorBoard event files)."""

from ..summary_record import SummaryRecord

__all__ = ["SummaryRecord"]
