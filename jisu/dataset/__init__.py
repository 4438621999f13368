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
from .._lazy import attach_stub
from .._unprovided import refused_class
from . import engine

# every other name is imported when first used (the OpenCV, Arrow and protobuf behind vision,
# records and TFRecord only by the pipelines that use them): the names are __init__.pyi's
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)

#: MindSpore's graph data engine (a graph server sampling nodes and neighbours): refused by name
GraphData = refused_class(
    "dataset.GraphData",
    "MindSpore's graph data engine (its own graph server and samplers) has no torch "
    "counterpart here; load the graph with NumPy or PyTorch Geometric and feed it through a "
    "GeneratorDataset",
)


#: ``import mindspore.dataset.engine as de; de.ImageFolderDataset(...); de.config.set_seed(1)``:
#: MindSpore's engine package names the data sets; jisu's engine is the execution layer below
#: them, so they are named on it here, from above (importing them there would invert the
#: layers), when first asked for
ENGINE_NAMES = frozenset(
    ("GeneratorDataset", "ImageFolderDataset", "MindDataset", "PaddedDataset",
     "NumpySlicesDataset", "TextFileDataset", "DistributedSampler", "Schema", "config")
)  # fmt: skip


def _engine_getattr(name: str):
    if name in ENGINE_NAMES:
        return __getattr__(name)
    raise AttributeError(f"module 'jisu.dataset.engine' has no attribute {name!r}")


engine.__getattr__ = _engine_getattr
