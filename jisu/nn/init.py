"""``nn.init`` as model-zoo code calls it (``nn.init.constant_(m.bias, 0)``,
``nn.init.kaiming_normal_(m.weight, ...)``): torch's in-place initializers.

MindSpore has no ``mindspore.nn.init`` (a zoo script that calls it fails there, on a path it
rarely runs); jisu's parameters are torch tensors, so torch's functions do what the script
means. MindSpore's own initializers are :mod:`jisu.common.initializer`.
"""

from torch.nn.init import (
    calculate_gain,
    constant_,
    dirac_,
    eye_,
    kaiming_normal_,
    kaiming_uniform_,
    normal_,
    ones_,
    orthogonal_,
    sparse_,
    trunc_normal_,
    uniform_,
    xavier_normal_,
    xavier_uniform_,
    zeros_,
)

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]
