"""jisu.dataset: a lazy, parallel, deterministic input pipeline (``mindspore.dataset``'s API).

Example:
    >>> import numpy as np
    >>> import jisu.dataset as ds
    >>> from jisu.dataset import vision
    >>> data = ds.NumpySlicesDataset({"image": np.zeros((8, 4, 4, 3), np.uint8),
    ...                               "label": np.arange(8)}, shuffle=False)
    >>> data = data.map([vision.Rescale(1 / 255, 0), vision.HWC2CHW()], input_columns="image")
    >>> data = data.batch(4)
    >>> [tuple(t.shape) for t in next(iter(data))]
    [(4, 3, 4, 4), (4,)]
"""

from .. import context as context  # mindspore.dataset.context (MindSpore 2.0's namespace held it)
from .._unprovided import refused_class
from . import config, engine, record, text, transforms, vision
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

#: MindSpore's graph data engine (a graph server sampling nodes and neighbours): refused by name
GraphData = refused_class(
    "dataset.GraphData",
    "MindSpore's graph data engine (its own graph server and samplers) has no torch "
    "counterpart here; load the graph with NumPy or PyTorch Geometric and feed it through a "
    "GeneratorDataset",
)

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

# ``import mindspore.dataset.engine as de; de.ImageFolderDataset(...); de.config.set_seed(1)``:
# MindSpore's engine package names the data sets; jisu's engine is the execution layer below
# them, so they are named on it here, from above (importing them there would invert the layers)
for _name in ("GeneratorDataset", "ImageFolderDataset", "MindDataset", "PaddedDataset",
              "NumpySlicesDataset", "TextFileDataset", "DistributedSampler", "Schema"):  # fmt: skip
    setattr(engine, _name, globals()[_name])
engine.config = config
del _name
