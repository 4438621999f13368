"""The rest of ``mindspore.train.serialization``'s names that model-zoo scripts import:
``merge_sliced_parameter``, ``_update_param``, the ``tensor_to_ms_type``/``tensor_to_np_type``
tables and ``Validator``; the strategy-file and protobuf names are refused by name (jisu
trains on one device or data-parallel, without MindSpore's sharding strategies, and reads
``.ckpt`` files without protobuf)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .. import _checkparam as Validator
from .._unprovided import refused_class, refused_function
from ..common import dtype as mstype
from ..nn.cell import parameter_name

__all__ = [
    "Checkpoint",
    "Validator",
    "build_searched_strategy",
    "load_distributed_checkpoint",
    "merge_sliced_parameter",
    "tensor_to_ms_type",
    "tensor_to_np_type",
]

_TYPES = ["Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64", "Float16",
          "Float32", "Float64", "Bool"]  # fmt: skip
#: a checkpoint's tensor-type name -> the dtype (``"str"``: MindSpore's string type, kept as str)
tensor_to_ms_type: dict[str, Any] = {
    name: getattr(mstype, name.lower().replace("bool", "bool_")) for name in _TYPES
} | {"str": str}
#: a checkpoint's tensor-type name -> the NumPy type (``"str"`` -> ``"U"``)
tensor_to_np_type: dict[str, Any] = {
    name: getattr(np, name.lower().replace("bool", "bool_")) for name in _TYPES
} | {"str": "U"}

_SHARDING = (
    "it reads MindSpore's auto-parallel sharding strategies; jisu trains on one device or "
    "data-parallel (whole parameters on every rank), so there is no strategy to read"
)
build_searched_strategy = refused_function("train.serialization.build_searched_strategy", _SHARDING)
load_distributed_checkpoint = refused_function(
    "train.serialization.load_distributed_checkpoint",
    _SHARDING + "; merge the slices with merge_sliced_parameter and load_param_into_net",
)
Checkpoint = refused_class(
    "train.serialization.Checkpoint",
    "it is MindSpore's protobuf message class; jisu parses .ckpt files without protobuf: "
    "use load_checkpoint(path), which returns the {name: Parameter} dict",
)


def merge_sliced_parameter(sliced_parameters: list, strategy: dict | None = None) -> Any:
    """One parameter from its slices, concatenated along axis 0 in the order given (rank
    order), with the first slice's name and ``requires_grad``.

    Raises:
        TypeError: ``sliced_parameters`` is not a list of parameters, or ``strategy`` is not
            a dict.
        ValueError: the list is empty, or the slices differ in name, rank or in a dimension
            other than the first.
        NotImplementedError: a ``strategy`` is given (see ``build_searched_strategy``).
    """
    from ..common.tensor import Parameter

    if not isinstance(sliced_parameters, list):
        raise TypeError(
            "merge_sliced_parameter: sliced_parameters must be a list. "
            f"Received: {type(sliced_parameters).__name__}"
        )
    if not sliced_parameters:
        raise ValueError("merge_sliced_parameter: sliced_parameters must not be empty")
    if strategy and not isinstance(strategy, dict):
        raise TypeError(
            f"merge_sliced_parameter: strategy must be a dict. Received: {type(strategy).__name__}"
        )
    first = sliced_parameters[0]
    for index, piece in enumerate(sliced_parameters):
        if not isinstance(piece, torch.nn.Parameter):
            raise TypeError(
                "merge_sliced_parameter: every element must be a Parameter. "
                f"Received: {type(piece).__name__} at index {index}"
            )
        if (
            parameter_name(piece) != parameter_name(first)
            or piece.dim() != first.dim()
            or piece.shape[1:] != first.shape[1:]
        ):
            raise ValueError(
                "merge_sliced_parameter: the slices must have the same name, rank and shape "
                f"except axis 0. Received: {parameter_name(piece)!r} {tuple(piece.shape)} at "
                f"index {index}, {parameter_name(first)!r} {tuple(first.shape)} at index 0"
            )
    if strategy:
        refused_function("train.serialization.merge_sliced_parameter(strategy=...)", _SHARDING)()
    merged = torch.cat([piece.detach() for piece in sliced_parameters])
    return Parameter(merged, parameter_name(first), first.requires_grad)


def _update_param(param: torch.Tensor, new_param: torch.Tensor, strict_load: bool) -> None:
    """Copy ``new_param``'s data into ``param`` in place (MindSpore's helper of
    ``load_param_into_net``). A shape that differs only by trailing 1s is reshaped; another
    dtype is converted only when ``strict_load`` is False and both are float (float16/32/64)
    or both are signed int types, as in MindSpore.

    Raises:
        RuntimeError: the shapes differ otherwise, or the dtypes cannot be converted.
    """
    name = parameter_name(param) or "the parameter"
    new = new_param.detach()
    if param.shape != new.shape:
        extra = new.shape[param.dim() :]
        if new.dim() <= param.dim() or any(d != 1 for d in extra):
            raise RuntimeError(
                f"_update_param: {name} has shape {tuple(param.shape)} in the net and "
                f"{tuple(new.shape)} in the parameter dict"
            )
        new = new.reshape(param.shape)
    if param.dtype != new.dtype:
        kinds = {param.dtype, new.dtype}
        floats = {torch.float16, torch.float32, torch.float64}
        ints = {torch.int8, torch.int16, torch.int32, torch.int64}
        if strict_load or not (kinds <= floats or kinds <= ints):
            raise RuntimeError(
                f"_update_param: {name} has dtype {param.dtype} in the net and {new.dtype} in "
                "the parameter dict"
            )
    with torch.no_grad():
        param.copy_(new.to(param.dtype))
