"""The record formats: jisu's sharded Arrow IPC files (read by ``pread``), MindRecord, TFRecord."""

from . import convert
from .mindrecord import MindRecordReader
from .reader import RecordReader
from .writer import FileWriter

__all__ = ["FileWriter", "MindRecordReader", "RecordReader", "convert"]
