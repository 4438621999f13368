"""MindSpore's argument validators (``mindspore._checkparam``, imported ``as Validator`` or
``as validator`` by model-zoo layers): each returns the value when it passes and raises
MindSpore's exception type when it does not (``TypeError`` for a wrong type, bools included
where a number is asked for; ``ValueError`` for a value out of range)."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from typing import Any

EQ, NE, LT, LE, GT, GE = 1, 2, 3, 4, 5, 6
INC_NEITHER, INC_LEFT, INC_RIGHT, INC_BOTH = 7, 8, 9, 10
IN, NOT_IN = 11, 12

_BINARY = {
    EQ: ("==", lambda a, b: a == b),
    NE: ("!=", lambda a, b: a != b),
    LT: ("<", lambda a, b: a < b),
    LE: ("<=", lambda a, b: a <= b),
    GT: (">", lambda a, b: a > b),
    GE: (">=", lambda a, b: a >= b),
    IN: ("in", lambda a, b: a in b),
    NOT_IN: ("not in", lambda a, b: a not in b),
}
_RANGE = {
    INC_NEITHER: ("({}, {})", lambda v, lo, hi: lo < v < hi),
    INC_LEFT: ("[{}, {})", lambda v, lo, hi: lo <= v < hi),
    INC_RIGHT: ("({}, {}]", lambda v, lo, hi: lo < v <= hi),
    INC_BOTH: ("[{}, {}]", lambda v, lo, hi: lo <= v <= hi),
}


def _subject(arg_name: str | None, prim_name: str | None) -> str:
    who = f"For '{prim_name}', the" if prim_name else "The"
    return f"{who} '{arg_name}'" if arg_name else f"{who} input value"


def _check_number(arg_value: Any, value: Any, rel: int, arg_type: type = int,
                  arg_name: str | None = None, prim_name: str | None = None) -> Any:  # fmt: skip
    subject = _subject(arg_name, prim_name)
    if isinstance(arg_value, bool) or not isinstance(arg_value, arg_type):
        raise TypeError(
            f"{subject} must be {arg_type.__name__}. Received: {arg_value!r} "
            f"({type(arg_value).__name__})"
        )
    if isinstance(arg_value, float) and (math.isinf(arg_value) or math.isnan(arg_value)):
        raise ValueError(f"{subject} must be a finite number. Received: {arg_value!r}")
    symbol, holds = _BINARY[rel]
    if not holds(arg_value, value):
        raise ValueError(f"{subject} must be {symbol} {value}. Received: {arg_value!r}")
    return arg_value


def check(arg_name: str, arg_value: Any, value_name: str, value: Any, rel: int = EQ,
          prim_name: str | None = None, excp_cls: type = ValueError) -> Any:  # fmt: skip
    """``arg_value rel value`` or ``excp_cls``."""
    symbol, holds = _BINARY[rel]
    if not holds(arg_value, value):
        raise excp_cls(
            f"{_subject(arg_name, prim_name)} should be {symbol} {value_name}: {value}. "
            f"Received: {arg_value!r}"
        )
    return arg_value


def check_int(arg_value: Any, value: int, rel: int, arg_name: str | None = None,
              prim_name: str | None = None) -> int:  # fmt: skip
    """An int (not a bool) with ``arg_value rel value``."""
    return _check_number(arg_value, value, rel, int, arg_name, prim_name)


def check_equal_int(arg_value: Any, value: int, arg_name: str | None = None,
                    prim_name: str | None = None) -> int:  # fmt: skip
    """An int equal to ``value``."""
    return _check_number(arg_value, value, EQ, int, arg_name, prim_name)


def check_positive_int(arg_value: Any, arg_name: str | None = None,
                       prim_name: str | None = None) -> int:  # fmt: skip
    """An int > 0."""
    return _check_number(arg_value, 0, GT, int, arg_name, prim_name)


def check_negative_int(arg_value: Any, arg_name: str | None = None,
                       prim_name: str | None = None) -> int:  # fmt: skip
    """An int < 0."""
    return _check_number(arg_value, 0, LT, int, arg_name, prim_name)


def check_non_positive_int(arg_value: Any, arg_name: str | None = None,
                           prim_name: str | None = None) -> int:  # fmt: skip
    """An int <= 0."""
    return _check_number(arg_value, 0, LE, int, arg_name, prim_name)


def check_non_negative_int(arg_value: Any, arg_name: str | None = None,
                           prim_name: str | None = None) -> int:  # fmt: skip
    """An int >= 0."""
    return _check_number(arg_value, 0, GE, int, arg_name, prim_name)


def check_positive_float(arg_value: Any, arg_name: str | None = None,
                         prim_name: str | None = None) -> float:  # fmt: skip
    """A float > 0 (an int is a ``TypeError``, as in MindSpore)."""
    return _check_number(arg_value, 0, GT, float, arg_name, prim_name)


def check_non_negative_float(arg_value: Any, arg_name: str | None = None,
                             prim_name: str | None = None) -> float:  # fmt: skip
    """A float >= 0 (an int is a ``TypeError``, as in MindSpore)."""
    return _check_number(arg_value, 0, GE, float, arg_name, prim_name)


def check_positive_int_sequence(sequence: Sequence, arg_name: str | None = None,
                                prim_name: str | None = None) -> Sequence:  # fmt: skip
    """Every element an int > 0."""
    for index, element in enumerate(sequence):
        _check_number(element, 0, GT, int, f"{arg_name or 'arg_name'}[{index}]", prim_name)
    return sequence


def check_is_int(arg_value: Any, arg_name: str | None = None, prim_name: str | None = None) -> int:
    """An int (not a bool)."""
    if isinstance(arg_value, bool) or not isinstance(arg_value, int):
        raise TypeError(
            f"{_subject(arg_name, prim_name)} must be int. Received: {type(arg_value).__name__}"
        )
    return arg_value


def check_is_float(arg_value: Any, arg_name: str | None = None,
                   prim_name: str | None = None) -> float:  # fmt: skip
    """A finite float."""
    if not isinstance(arg_value, float):
        raise TypeError(
            f"{_subject(arg_name, prim_name)} must be float. Received: {type(arg_value).__name__}"
        )
    if math.isinf(arg_value) or math.isnan(arg_value):
        raise ValueError(f"{_subject(arg_name, prim_name)} must be finite. Received: {arg_value}")
    return arg_value


def check_number(arg_name: str, arg_value: Any, value: Any, rel: int, prim_name: str) -> Any:
    """``arg_value rel value`` or ``ValueError`` (no type check)."""
    symbol, holds = _BINARY[rel]
    if not holds(arg_value, value):
        raise ValueError(
            f"{_subject(arg_name, prim_name)} must be {symbol} {value}. Received: {arg_value!r}"
        )
    return arg_value


def check_number_range(arg_value: Any, lower_limit: Any, upper_limit: Any, rel: int,
                       value_type: type, arg_name: str | None = None,
                       prim_name: str | None = None) -> Any:  # fmt: skip
    """A ``value_type`` number (NumPy numbers pass) inside the range ``rel`` describes
    (``INC_BOTH`` is ``[lower, upper]``)."""
    import numpy as np

    subject = _subject(arg_name, prim_name)
    numeric = (np.ndarray, np.generic, value_type)
    if isinstance(arg_value, bool) or not isinstance(arg_value, numeric):
        raise TypeError(
            f"{subject} must be {value_type.__name__}. Received: {type(arg_value).__name__}"
        )
    form, holds = _RANGE[rel]
    if not holds(arg_value, lower_limit, upper_limit):
        raise ValueError(
            f"{subject} must be in {form.format(lower_limit, upper_limit)}. Received: {arg_value}"
        )
    return arg_value


def check_int_range(arg_value: Any, lower_limit: int, upper_limit: int, rel: int,
                    arg_name: str | None = None, prim_name: str | None = None) -> int:  # fmt: skip
    """An int inside the range ``rel`` describes."""
    return check_number_range(arg_value, lower_limit, upper_limit, rel, int, arg_name, prim_name)


def check_float_range(arg_value: Any, lower_limit: float, upper_limit: float, rel: int,
                      arg_name: str | None = None,
                      prim_name: str | None = None) -> float:  # fmt: skip
    """A float inside the range ``rel`` describes."""
    return check_number_range(arg_value, lower_limit, upper_limit, rel, float, arg_name, prim_name)


def check_bool(arg_value: Any, arg_name: str | None = None, prim_name: str | None = None) -> bool:
    """A bool (``TypeError`` otherwise)."""
    if not isinstance(arg_value, bool):
        raise TypeError(
            f"{_subject(arg_name, prim_name)} must be a bool. Received: {type(arg_value).__name__}"
        )
    return arg_value


def check_string(arg_value: Any, valid_values: Iterable[str], arg_name: str | None = None,
                 prim_name: str | None = None) -> str:  # fmt: skip
    """A str among ``valid_values`` (``ValueError`` otherwise)."""
    if not (isinstance(arg_value, str) and arg_value in valid_values):
        raise ValueError(
            f"{_subject(arg_name or 'parameter', prim_name)} must be a str in "
            f"{list(valid_values)}. Received: {arg_value!r}"
        )
    return arg_value


def check_isinstance(arg_name: str, arg_value: Any, classes: type | tuple[type, ...]) -> Any:
    """An instance of ``classes`` (``ValueError`` otherwise, as in MindSpore)."""
    if not isinstance(arg_value, classes):
        raise ValueError(
            f"The parameter '{arg_name}' must be an instance of {classes}. Received: {arg_value!r}"
        )
    return arg_value


def check_value_type(arg_name: str, arg_value: Any, valid_types: Any,
                     prim_name: str | None = None) -> Any:  # fmt: skip
    """An instance of one of ``valid_types`` (``TypeError`` otherwise); a bool passes only when
    ``bool`` is listed, and a float comes back rounded to 6 decimals, as in MindSpore."""
    valid = tuple(valid_types) if isinstance(valid_types, Iterable) else (valid_types,)
    if (isinstance(arg_value, bool) and bool not in valid) or not isinstance(arg_value, valid):
        names = [getattr(t, "__name__", str(t)) for t in valid]
        wanted = names if len(names) > 1 else names[0]
        raise TypeError(
            f"{_subject(arg_name, prim_name)} must be of type {wanted}. "
            f"Received: {type(arg_value).__name__}"
        )
    if isinstance(arg_value, float) and float not in valid:
        return round(arg_value, 6)
    return arg_value


Validator = sys.modules[__name__]  # MindSpore's older ``Validator`` class: the same checks
