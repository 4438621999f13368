"""Automatic mixed precision: MindSpore's levels O0-O3 on PyTorch, fp16 and bf16, and loss
scaling decided on the device (see ``precision``, ``loss_scale`` and ``train_step``). On a
CPU without bf16 instructions the low-precision levels warn once with their measured cost
(:class:`SoftwareBf16Warning`, ``cpu_bf16``).

Each level is a :class:`Precision` (``levels``): ``precision_for(level, network)`` makes one,
``convert_module``/``forward_context``/``default_loss_scale_manager`` are what it does."""

from .cpu_bf16 import SoftwareBf16Warning
from .loss_scale import (
    DynamicLossScaleManager,
    FixedLossScaleManager,
    LossScaleCollapsedError,
    LossScaleManager,
)
from .loss_scaler import DynamicLossScaler, LossScaler, StaticLossScaler
from .precision import (
    MixedPrecisionNetwork,
    Precision,
    auto_mixed_precision,
    custom_mixed_precision,
    describe,
    get_black_list,
    get_white_list,
    precision_for,
    print_cast_plan,
)
from .train_step import TrainStep, all_finite, build_train_network, make_train_step

__all__ = [
    "DynamicLossScaleManager",
    "DynamicLossScaler",
    "FixedLossScaleManager",
    "LossScaleCollapsedError",
    "LossScaleManager",
    "LossScaler",
    "MixedPrecisionNetwork",
    "Precision",
    "SoftwareBf16Warning",
    "StaticLossScaler",
    "TrainStep",
    "all_finite",
    "auto_mixed_precision",
    "build_train_network",
    "custom_mixed_precision",
    "describe",
    "get_black_list",
    "get_white_list",
    "make_train_step",
    "precision_for",
    "print_cast_plan",
]
