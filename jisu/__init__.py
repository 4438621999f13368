"""jisu (极速, "full speed"): deep-learning training at the speed of the hardware, on PyTorch.

``jisu.dataset`` is a parallel, prefetching, deterministic input pipeline with MindSpore's API;
``jisu.amp`` is mixed precision (levels O0-O3, fp16/bf16, loss scaling without host syncs);
``jisu.Model`` trains with callbacks, sink mode and graph mode (``jisu.train``). MindSpore's
own names come along so its scripts port by swapping imports: ``jisu.nn`` (``Cell``, layers,
losses, optimizers with dynamic learning rates), ``jisu.ops``, ``jisu.Tensor``,
``jisu.dtype``, ``jisu.common.initializer``, ``jisu.communication``, ``jisu.mindrecord``.
"""

from . import common as common  # installs MindSpore's negative-step slicing on torch tensors
from . import compat as compat
from ._lazy import attach_stub
from ._version import __version__ as __version__

# every other name is imported when first used: the names are those of __init__.pyi
__getattr__, __dir__, __all__ = attach_stub(__name__, __file__)

compat.install_tensor_methods()  # MindSpore's Tensor methods on torch.Tensor (jisu.compat)
