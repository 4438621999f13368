"""MindSpore's ``mindspore.train.summary`` path: ``SummaryRecord`` (and
``summary_record``, its module)."""

from . import summary_record
from .summary_record import SummaryRecord

__all__ = ["SummaryRecord", "summary_record"]
