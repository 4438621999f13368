"""MindSpore's ``mindspore.common.parameter`` path: ``Parameter`` and ``ParameterTuple``
(:mod:`jisu.common.tensor` makes them)."""

from .tensor import Parameter, ParameterTuple

__all__ = ["Parameter", "ParameterTuple"]
