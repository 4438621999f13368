"""The names of :mod:`jisu.dataset`, imported when first used (:mod:`jisu._lazy` reads the
imports below; IDEs and type checkers read them as the package's own)."""

from .. import context as context
from . import config, record, text, transforms, vision
from . import engine as engine
from .core.cache import DatasetCache
from .core.ragged import RaggedArray
from .datasets import Dataset
from .engine.errors import EpochsExhaustedError, PipelineError, TaskTimeoutError
from .engine.iterator import DatasetIterator
from .engine.ray.executor import RayConnectionError, RayExecutor
from .ops.batch import BatchDataset, BatchInfo
from .ops.ds_callback import DSCallback, DSRunContext, WaitedDSCallback
from .ops.zip import zip_datasets as zip
from .record.storage import StorageError
from .record.validate import MalformedFileError
from .record.writer import FileWriter
from .sources.coco import CocoDataset
from .sources.csv import CSVDataset
from .sources.generator import GeneratorDataset, Schema
from .sources.image_folder import ImageFolderDataset
from .sources.manifest import ManifestDataset
from .sources.numpy_slices import NumpySlicesDataset
from .sources.options import Shuffle
from .sources.padded import PaddedDataset
from .sources.record import MindDataset, RecordDataset
from .sources.samplers import (
    DistributedSampler,
    IterSampler,
    PKSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    SubsetSampler,
    WeightedRandomSampler,
)
from .sources.text_file import TextFileDataset
from .sources.tfrecord import TFRecordDataset
from .sources.torch_dataset import TorchDataset
from .sources.vision_sets import (
    Cifar10Dataset,
    Cifar100Dataset,
    FashionMnistDataset,
    MnistDataset,
)
from .sources.voc import VOCDataset

GraphData: type

__all__ = [
    "BatchDataset",
    "BatchInfo",
    "CSVDataset",
    "Cifar10Dataset",
    "Cifar100Dataset",
    "CocoDataset",
    "DSCallback",
    "DSRunContext",
    "Dataset",
    "DatasetCache",
    "DatasetIterator",
    "DistributedSampler",
    "EpochsExhaustedError",
    "FashionMnistDataset",
    "FileWriter",
    "GeneratorDataset",
    "GraphData",
    "ImageFolderDataset",
    "IterSampler",
    "MalformedFileError",
    "ManifestDataset",
    "MindDataset",
    "MnistDataset",
    "NumpySlicesDataset",
    "PKSampler",
    "PaddedDataset",
    "PipelineError",
    "RaggedArray",
    "RandomSampler",
    "RayConnectionError",
    "RayExecutor",
    "RecordDataset",
    "Sampler",
    "Schema",
    "SequentialSampler",
    "Shuffle",
    "StorageError",
    "SubsetRandomSampler",
    "SubsetSampler",
    "TFRecordDataset",
    "TaskTimeoutError",
    "TextFileDataset",
    "TorchDataset",
    "VOCDataset",
    "WaitedDSCallback",
    "WeightedRandomSampler",
    "config",
    "record",
    "text",
    "transforms",
    "vision",
    "zip",
]
