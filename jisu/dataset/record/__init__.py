"""The record formats: jisu's sharded Arrow IPC files (read by ``pread``), MindRecord, TFRecord,
on local disks or in object storage (:mod:`.storage`).

``jisu convert`` (:mod:`.convert`) builds pipelines to pack data sets; it is imported when
first asked for (``jisu.dataset.record.convert``), so that the formats import nothing above
them when they are read.
"""

import importlib
from typing import Any

from .mindrecord import MindRecordReader
from .reader import RecordReader
from .writer import FileWriter

__all__ = ["FileWriter", "MindRecordReader", "RecordReader", "convert"]


def __getattr__(name: str) -> Any:
    if name == "convert":  # the pipelines that pack data sets: above the formats, by name
        return importlib.import_module(f"{__name__}.convert")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
