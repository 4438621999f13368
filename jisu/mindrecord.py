"""MindSpore's ``mindspore.mindrecord`` path: ``FileWriter`` (jisu's record writer, which also
reads MindSpore's own MindRecord files through ``MindDataset``)."""

from .dataset import FileWriter

__all__ = ["FileWriter"]
