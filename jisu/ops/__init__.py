"""MindSpore's ``ops`` on torch, at MindSpore's paths, so that the networks and train cells of
MindSpore code run by swapping ``mindspore`` for ``jisu``.

Two forms, as in MindSpore: primitive classes, built with their attributes and called with
tensors (``ops.ReduceMean(keep_dims=True)(x, axis)``; all of them in :mod:`.operations`,
imported ``as P`` in most of the model zoo), and functions (``ops.reshape(x, shape)``,
``ops.matmul(a, b)``). :mod:`.functional` (``F``) holds ready-made primitive instances and
graph helpers, :mod:`.composite` (``C``) ``GradOperation``, ``HyperMap`` and their kin,
:mod:`.primitive` the base class and ``constexpr``. Everything computes with torch, so it
runs under autograd, AMP and ``torch.compile`` like torch code.
"""

from ..common.tensor import Tensor  # noqa: F401 (MindSpore's ops.Tensor)
from . import (  # noqa: F401 (MindSpore's paths)
    composite,
    functional,
    op_info_register,
    operations,
    primitive,
)
from . import operations as P  # noqa: F401 (MindSpore's ops.P)
from ._functions import *  # noqa: F403
from ._gap_functions import *  # noqa: F403
from ._grad import grad, value_and_grad  # noqa: F401
from ._graph import *  # noqa: F403
from ._nn_functions import *  # noqa: F403
from .composite import *  # noqa: F403
from .operations import *  # noqa: F403
from .operations import __getattr__  # noqa: F401 (MindSpore primitives jisu lacks: refused by name)
from .primitive import Primitive  # noqa: F401

#: MindSpore's ops.identity is the functional instance (ops.identity(x) is x), not P.identity
identity = functional.identity
