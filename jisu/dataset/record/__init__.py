"""The record formats: jisu's sharded Arrow IPC files (read by ``pread``), MindRecord, TFRecord,
on local disks or in object storage (:mod:`.storage`).

``jisu convert`` (:mod:`.convert`) builds pipelines to pack data sets; it is imported by
:mod:`jisu.dataset` itself, not here, so that the formats import nothing above them.
"""

from .mindrecord import MindRecordReader
from .reader import RecordReader
from .writer import FileWriter

__all__ = ["FileWriter", "MindRecordReader", "RecordReader", "convert"]
