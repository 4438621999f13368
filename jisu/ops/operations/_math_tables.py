"""The element-wise and reduction primitives of ``math_ops`` as tables (MindSpore's name ->
torch function and dtype rule), from which the classes are made.

A class made here has MindSpore's name and a docstring, takes no constructor arguments (the
reductions take ``keep_dims``), checks how many inputs it is called with, and applies its
dtype rule:

- ``same``: torch's result (which keeps the input's dtype, and promotes two inputs as
  MindSpore does: int32 with float16 is float16, a Python float with int32 is float32);
- ``float``: int and bool inputs computed as float32 (MindSpore's ``Sqrt``, ``Reciprocal``,
  ``Sin``, ... of int32 are float32);
- ``int_trunc``: int inputs divided with truncation, keeping their dtype (MindSpore 2.0.0's
  ``Div`` and ``RealDiv`` of int32 are int32: 9 / -4 = -2);
- ``float_only``: float inputs only (after promotion), as MindSpore checks (``Floor``,
  ``Ceil``, ``Rint``, ``Xdivy``, ``Xlogy``): a ``TypeError`` for ints;
- ``bool``: a bool result (comparisons, logical ops, ``IsNan``).
"""

from __future__ import annotations

from typing import Any

import torch

from ..function import math_func as mf
from ..function._utils import float_of, operands
from ..primitive import Primitive


def _div(x: Any, y: Any) -> torch.Tensor:
    x, y = operands(x, y)
    if x.is_floating_point() or y.is_floating_point() or x.is_complex() or y.is_complex():
        return torch.div(x, y)
    return torch.div(x, y, rounding_mode="trunc")


def _div_no_nan(x: Any, y: Any) -> torch.Tensor:
    x, y = operands(x, y)
    out = torch.div(x, y)
    return torch.where(y == 0, torch.zeros((), dtype=out.dtype, device=out.device), out)


def _inv(x: torch.Tensor) -> torch.Tensor:
    if x.is_floating_point() or x.is_complex():
        return torch.reciprocal(x)
    return torch.div(torch.ones_like(x), x, rounding_mode="trunc")  # int32 stays int32


def _squared_difference(x: Any, y: Any) -> torch.Tensor:
    x, y = operands(x, y)
    return torch.square(torch.sub(x, y))


#: name -> (torch function, rule, summary); one input
UNARY: dict[str, tuple[Any, str, str]] = {
    "Abs": (torch.abs, "same", "The absolute value"),
    "Neg": (torch.neg, "same", "The negation"),
    "Square": (torch.square, "same", "The square"),
    "Sqrt": (torch.sqrt, "float", "The square root"),
    "Rsqrt": (torch.rsqrt, "float", "The reciprocal of the square root"),
    "Reciprocal": (torch.reciprocal, "float", "The reciprocal (1 / x)"),
    "Inv": (_inv, "same", "The reciprocal (1 / x; truncated for ints)"),
    "Exp": (torch.exp, "float", "The exponential"),
    "Expm1": (torch.expm1, "float", "exp(x) - 1"),
    "Log": (torch.log, "float", "The natural logarithm"),
    "Log1p": (torch.log1p, "float", "log(1 + x)"),
    "Floor": (torch.floor, "float_only", "The largest integer not above x"),
    "Ceil": (torch.ceil, "float_only", "The smallest integer not below x"),
    "Round": (torch.round, "same", "x rounded to the nearest integer (halves to even)"),
    "Rint": (torch.round, "float_only", "x rounded to the nearest integer (halves to even)"),
    "Trunc": (torch.trunc, "same", "x rounded towards zero"),
    "Sign": (torch.sign, "same", "The sign (-1, 0 or 1)"),
    "Sin": (torch.sin, "float", "The sine"),
    "Cos": (torch.cos, "float", "The cosine"),
    "Tan": (torch.tan, "float", "The tangent"),
    "Asin": (torch.asin, "float", "The arcsine"),
    "ACos": (torch.acos, "float", "The arccosine"),
    "Atan": (torch.atan, "float", "The arctangent"),
    "Sinh": (torch.sinh, "float", "The hyperbolic sine"),
    "Cosh": (torch.cosh, "float", "The hyperbolic cosine"),
    "Asinh": (torch.asinh, "float", "The inverse hyperbolic sine"),
    "Acosh": (torch.acosh, "float", "The inverse hyperbolic cosine"),
    "Atanh": (torch.atanh, "float", "The inverse hyperbolic tangent"),
    "Erf": (torch.erf, "float", "The error function"),
    "Erfc": (torch.erfc, "float", "The complementary error function"),
    "Erfinv": (torch.erfinv, "float", "The inverse error function"),
    "IsNan": (torch.isnan, "bool", "Whether x is NaN"),
    "IsInf": (torch.isinf, "bool", "Whether x is infinite"),
    "IsFinite": (torch.isfinite, "bool", "Whether x is finite"),
    "LogicalNot": (torch.logical_not, "bool", "The logical negation"),
    "Invert": (torch.bitwise_not, "same", "The bitwise negation"),
}

#: name -> (torch function, rule, summary); two inputs, either may be a Python scalar
BINARY: dict[str, tuple[Any, str, str]] = {
    "Add": (torch.add, "same", "x + y"),
    "Sub": (torch.sub, "same", "x - y"),
    "Mul": (torch.mul, "same", "x * y"),
    "Div": (_div, "int_trunc", "x / y"),
    "RealDiv": (_div, "int_trunc", "x / y"),
    "DivNoNan": (_div_no_nan, "same", "x / y, and 0 where y is 0"),
    "FloorDiv": (torch.floor_divide, "same", "x / y rounded down"),
    "FloorMod": (torch.remainder, "same", "x - floor(x / y) * y (the sign of y)"),
    "Mod": (torch.fmod, "same", "The remainder of x / y with the sign of x"),
    "TruncateDiv": (
        lambda x, y: torch.div(x, y, rounding_mode="trunc"),
        "same",
        "x / y rounded towards zero",
    ),
    "TruncateMod": (torch.fmod, "same", "The remainder of x / y with the sign of x"),
    "Pow": (torch.pow, "same", "x ** y"),
    "Maximum": (mf.maximum, "same", "The larger of x and y"),
    "Minimum": (mf.minimum, "same", "The smaller of x and y"),
    "SquaredDifference": (_squared_difference, "same", "(x - y) ** 2"),
    "Atan2": (torch.atan2, "float", "The arctangent of x / y"),
    "Xdivy": (lambda x, y: torch.where(x == 0, 0.0, x / y), "float_only", "x / y, 0 where x is 0"),
    "Xlogy": (torch.xlogy, "float_only", "x * log(y), 0 where x is 0"),
    "BitwiseAnd": (torch.bitwise_and, "same", "The bitwise and"),
    "BitwiseOr": (torch.bitwise_or, "same", "The bitwise or"),
    "BitwiseXor": (torch.bitwise_xor, "same", "The bitwise exclusive or"),
    "Equal": (torch.eq, "bool", "Whether x == y"),
    "NotEqual": (torch.ne, "bool", "Whether x != y"),
    "Greater": (torch.gt, "bool", "Whether x > y"),
    "GreaterEqual": (torch.ge, "bool", "Whether x >= y"),
    "Less": (torch.lt, "bool", "Whether x < y"),
    "LessEqual": (torch.le, "bool", "Whether x <= y"),
    "LogicalAnd": (torch.logical_and, "bool", "The logical and"),
    "LogicalOr": (torch.logical_or, "bool", "The logical or"),
    "LogicalXor": (torch.logical_xor, "bool", "The logical exclusive or"),
}

#: name -> (function of (x, axis, keep_dims), summary)
REDUCE: dict[str, tuple[Any, str]] = {
    "ReduceSum": (mf.reduce_sum, "The sum"),
    "ReduceMean": (mf.mean, "The mean"),
    "ReduceMax": (mf.reduce_max, "The maximum"),
    "ReduceMin": (mf.reduce_min, "The minimum"),
    "ReduceProd": (mf.reduce_prod, "The product"),
    "ReduceAll": (mf.reduce_all, "Whether all are True"),
    "ReduceAny": (mf.reduce_any, "Whether any is True"),
}

RULE_DOCS = {
    "same": "torch's promotion of the inputs (MindSpore's)",
    "float": "float32 for int and bool inputs",
    "int_trunc": "the int dtype for int inputs (divided with truncation), else float",
    "float_only": "the float dtype of the inputs (int inputs are refused)",
    "bool": "bool",
}


def _check_float(name: str, dtype: torch.dtype) -> None:
    if not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"{name}: the input must be a float tensor. Received: {dtype}")


def _check_arity(name: str, args: tuple, n: int) -> None:
    if len(args) != n:
        raise TypeError(f"{name}: takes {n} input(s). Received: {len(args)} inputs")


def _elementwise_class(name: str, fn: Any, rule: str, summary: str, arity: int) -> type:
    def call(self: Any, *args: Any) -> torch.Tensor:
        _check_arity(name, args, arity)
        if arity == 1:
            x = args[0] if isinstance(args[0], torch.Tensor) else torch.as_tensor(args[0])
            if rule == "float_only":
                _check_float(name, x.dtype)
            return fn(float_of(x) if rule == "float" else x)
        x, y = operands(*args)
        if rule == "float":  # promote first (int32 with float16 is float16), then to a float
            dtype = torch.promote_types(x.dtype, y.dtype)
            dtype = dtype if dtype.is_floating_point else torch.float32
            x, y = x.to(dtype), y.to(dtype)
        elif rule == "float_only":
            _check_float(name, torch.promote_types(x.dtype, y.dtype))
        return fn(x, y)

    inputs = "x" if arity == 1 else "x, y"
    doc = (
        f"MindSpore's ``{name}``: {summary}, element-wise.\n\n"
        f"Called as ``{name}()({inputs})``; the output's dtype: {RULE_DOCS[rule]}."
    )
    return type(name, (Primitive,), {"__call__": call, "__doc__": doc, "__module__": __name__})


def _reduce_class(name: str, fn: Any, summary: str) -> type:
    def init(self: Any, keep_dims: bool = False) -> None:
        if not isinstance(keep_dims, bool):
            raise TypeError(f"{name}: keep_dims must be a bool. Received: keep_dims={keep_dims!r}")
        self.keep_dims = keep_dims

    def call(self: Any, x: torch.Tensor, axis: Any = ()) -> torch.Tensor:
        if not isinstance(axis, (int, tuple, list, torch.Tensor)):
            raise TypeError(
                f"{name}: axis must be an int, a tuple or a list. Received: axis={axis!r}"
            )
        return fn(x, axis, self.keep_dims)

    doc = (
        f"MindSpore's ``{name}(keep_dims=False)``: {summary} over ``axis`` (all axes for "
        f"``()``).\n\nCalled as ``{name}(keep_dims)(x, axis=())``."
    )
    attrs = {"__init__": init, "__call__": call, "__doc__": doc, "__module__": __name__}
    return type(name, (Primitive,), attrs)


def make_classes() -> dict[str, type]:
    """The classes of the three tables, by MindSpore's name."""
    classes = {n: _elementwise_class(n, *spec, 1) for n, spec in UNARY.items()}
    classes.update({n: _elementwise_class(n, *spec, 2) for n, spec in BINARY.items()})
    classes.update({n: _reduce_class(n, *spec) for n, spec in REDUCE.items()})
    return classes
