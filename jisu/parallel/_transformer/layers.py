"""MindSpore 2.0's ``parallel._transformer.layers``: the argument validators its transformer
layers (and model-zoo layers built the same way) use, ``_LayerNorm`` (parameters ``gamma`` and
``beta``) and ``_Linear`` (``weight`` of shape ``(out, in)``, or ``(in, out)`` with
``transpose_b=False``; the product in ``compute_dtype``, float16 by default, as MindSpore
computes it). ``shard`` calls are accepted and have no effect (one device)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import torch

from ... import _checkparam as Validator
from ...common.initializer import initializer
from ...common.tensor import Parameter
from ...nn.cell import Cell

__all__ = [
    "_LayerInputCheck",
    "_LayerNorm",
    "_Linear",
    "_args_type_validator_check",
    "_check_input_dtype",
    "_check_past_none_input_none",
    "_valid_type_checks",
    "_valid_value_checks",
]


def _check_type_name(arg_name: str, arg_type: Any, valid_types: Any, prim_name: str) -> Any:
    valid = tuple(valid_types) if isinstance(valid_types, (list, tuple)) else (valid_types,)
    if arg_type not in valid:
        names = [getattr(t, "__name__", str(t)) for t in valid]
        raise TypeError(
            f"For '{prim_name}', the '{arg_name}' must be one of {names}. "
            f"Received: {getattr(arg_type, '__name__', repr(arg_type))}"
        )
    return arg_type


def _args_type_validator_check(*type_args: Any, **type_kwargs: Any) -> Callable:
    """Decorator of an ``__init__``: each named argument is checked, before the body runs, by
    the checker given for it (``checker(value, name)``)."""

    def type_check(func: Callable) -> Callable:
        sig = inspect.signature(func)
        checks = sig.bind_partial(*type_args, **type_kwargs).arguments

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            arguments = sig.bind(*args, **kwargs).arguments
            table = checks.get("kwargs", checks)
            for name, value in arguments.get("kwargs", arguments).items():
                if name in table:
                    table[name](value, name)
            return func(*args, **kwargs)

        return wrapper

    return type_check


def _valid_type_checks(types: list, class_name: str) -> Callable[[Any, str], Any]:
    """A checker: the value's type must be one of ``types`` exactly."""
    return lambda value, name: _check_type_name(name, type(value), types, class_name)


def _valid_value_checks(types: list, class_name: str) -> Callable[[Any, str], Any]:
    """A checker: the value itself (a dtype, say) must be one of ``types``."""
    return lambda value, name: _check_type_name(name, value, types, class_name)


def _check_input_dtype(
    input_dtype: Any, param_name: str, allow_dtypes: list, cls_name: str
) -> None:
    """``input_dtype`` must be one of ``allow_dtypes`` (``TypeError`` otherwise)."""
    _check_type_name(param_name, input_dtype, allow_dtypes, cls_name)


def _check_past_none_input_none(use_past: bool, param_name: str, func_name: str,
                                default_value: Any, is_tensor: bool,
                                is_default: bool) -> bool:  # fmt: skip
    """Without ``use_past`` the argument must keep its default (not a tensor); with it, it must
    be a tensor (``TypeError`` otherwise)."""
    if not use_past and (is_tensor or not is_default):
        raise TypeError(f"{func_name} {param_name} must be {default_value} if use_past is False")
    if use_past and not is_tensor:
        raise TypeError(f"{func_name} {param_name} must be a tensor if use_past is True")
    return True


class _LayerInputCheck:
    """Shape checks of the transformer layers' inputs (``ValueError`` when they fail)."""

    @staticmethod
    def check_shape_length(input_shape: Any, param_name: str, func_name: str,
                           target_len: Any) -> bool:  # fmt: skip
        """``len(input_shape)`` is ``target_len`` (or one of them)."""
        lengths = target_len if isinstance(target_len, list) else [target_len]
        if len(input_shape) not in lengths:
            raise ValueError(
                f"{func_name} {param_name} shape length must be one of {lengths}. "
                f"Received: shape {input_shape}"
            )
        return True

    @staticmethod
    def check_shape_equal(input_shape: Any, param_name: str, func_name: str,
                          target_shape: Any) -> bool:  # fmt: skip
        """``input_shape`` is ``target_shape`` (or one of a list of them)."""
        targets = target_shape if isinstance(target_shape[0], list) else [target_shape]
        shape = list(input_shape)
        _LayerInputCheck.check_shape_length(shape, param_name, func_name, [len(t) for t in targets])
        if shape not in [list(t) for t in targets]:
            raise ValueError(
                f"{func_name} {param_name} shape must be one of {targets}. Received: {shape}"
            )
        return True

    @staticmethod
    def check_shape_value_on_axis(input_shape: Any, dim: int, param_name: str, cls_name: str,
                                  target_value: int) -> bool:  # fmt: skip
        """``input_shape[dim] == target_value``."""
        if input_shape[dim] != target_value:
            raise ValueError(
                f"{cls_name} {param_name} at {dim} shape must be {target_value}. "
                f"Received: {input_shape[dim]}"
            )
        return True

    @staticmethod
    def check_shape_equal_without_batch(input_shape: Any, param_name: str, func_name: str,
                                        target_shape: Any) -> bool:  # fmt: skip
        """``input_shape`` is ``(batch, length, hidden)`` or ``(batch * length, hidden)``."""
        length, hidden = target_shape
        shape = list(input_shape)
        _LayerInputCheck.check_shape_length(shape, param_name, func_name, [2, 3])
        if shape[-1] != hidden or shape[0] == 0 or (len(shape) == 2 and shape[0] % length):
            raise ValueError(
                f"For {func_name}, {param_name} must be (batch, {length}, {hidden}) or "
                f"(batch * {length}, {hidden}). Received: {shape}"
            )
        return True


class _LayerNorm(Cell):
    """Layer normalisation over the last axis: ``(x - mean) / sqrt(var + eps) * gamma +
    beta``, parameters ``gamma`` (ones) and ``beta`` (zeros) of ``normalized_shape``."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5,
                 param_init_type: torch.dtype = torch.float32,
                 is_self_defined: bool = False) -> None:  # fmt: skip
        super().__init__()
        if param_init_type not in (torch.float32, torch.float16):
            raise TypeError(
                "_LayerNorm: param_init_type must be float32 or float16. "
                f"Received: {param_init_type}"
            )
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.is_self_defined = eps, is_self_defined
        self.gamma = Parameter(initializer("ones", self.normalized_shape, param_init_type), "gamma")
        self.beta = Parameter(initializer("zeros", self.normalized_shape, param_init_type), "beta")

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        diff = x - mean
        variance = diff.square().mean(dim=-1, keepdim=True)
        return diff / torch.sqrt(variance + self.eps) * self.gamma + self.beta

    def shard(self, strategy: Any) -> _LayerNorm:
        """MindSpore's sharding strategy: no effect on one device; returns self."""
        return self


class _Linear(Cell):
    """``activation(x @ weight (+ bias))`` over the last axis, computed in ``compute_dtype``
    and returned in ``x``'s dtype. ``weight`` is ``(out, in)`` (``transpose_b=True``) or
    ``(in, out)``; ``weight_init``/``bias_init`` are initializer names or tensors
    (``normal`` and ``zeros`` by default). Experts (``expert_num > 1``) are not provided."""

    def __init__(self, in_channels: int, out_channels: int, weight_init: Any = "normal",
                 bias_init: Any = "zeros", has_bias: bool = True, activation: Any = None,
                 transpose_b: bool = True, expert_num: int = 1, outer_batch: int = 1,
                 expert_group_size: int | None = None,
                 param_init_type: torch.dtype = torch.float32,
                 compute_dtype: torch.dtype = torch.float16) -> None:  # fmt: skip
        super().__init__()
        Validator.check_positive_int(in_channels, "in_channels")
        Validator.check_positive_int(out_channels, "out_channels")
        if expert_num != 1:
            raise NotImplementedError(
                "mindspore.parallel._transformer.layers._Linear(expert_num > 1) is not provided by "
                "jisu: experts belong to MindSpore's MoE, which jisu does not provide"
            )
        cell_class = isinstance(activation, type) and issubclass(activation, torch.nn.Module)
        if not (activation is None or isinstance(activation, str) or cell_class):
            raise TypeError(
                f"_Linear: activation must be a str or a Cell class. Received: {activation!r}"
            )
        self.in_channels, self.out_channels = in_channels, out_channels
        self.transpose_b, self.has_bias = transpose_b, has_bias
        shape = (out_channels, in_channels) if transpose_b else (in_channels, out_channels)
        self.weight = Parameter(initializer(weight_init, shape, param_init_type), "weight")
        self.bias = (
            Parameter(initializer(bias_init, (out_channels,), param_init_type), "bias")
            if has_bias
            else None
        )
        if isinstance(activation, str):
            from ...nn.layer.activation import get_activation

            self.activation = get_activation(activation)
        else:
            self.activation = activation() if activation is not None else None
        self.act_name = activation
        self.dtype = compute_dtype

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        out_shape = (*x.shape[:-1], self.out_channels)
        ori_dtype = x.dtype
        x = x.reshape(-1, self.in_channels).to(self.dtype)
        weight = self.weight.to(self.dtype)
        x = x @ (weight.T if self.transpose_b else weight)
        if self.bias is not None:
            x = x + self.bias.to(self.dtype)
        if self.activation is not None:
            x = self.activation(x)
        return x.to(ori_dtype).reshape(out_shape)

    def shard(self, *args: Any, **kwargs: Any) -> _Linear:
        """MindSpore's sharding strategy: no effect on one device; returns self."""
        return self
