"""MindSpore's ``mindspore.boost`` names the model zoo uses: gradient accumulation
(:mod:`.grad_accumulation`). MindSpore's other boost algorithms (``BoostTrainOneStepCell``'s
less-BN, gradient freezing, adaptive summation) are not provided."""

from . import grad_accumulation
from .grad_accumulation import GradientAccumulation, gradient_accumulation_op, gradient_clear_op

__all__ = [
    "GradientAccumulation",
    "grad_accumulation",
    "gradient_accumulation_op",
    "gradient_clear_op",
]
