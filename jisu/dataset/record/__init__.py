"""The record format: sharded Arrow IPC files, read by ``pread`` (and MindRecord reading)."""

from . import convert
from .mindrecord import MindRecordReader
from .reader import RecordReader
from .writer import FileWriter

__all__ = ["FileWriter", "MindRecordReader", "RecordReader", "convert"]
