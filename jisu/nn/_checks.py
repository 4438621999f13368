"""Argument checks with MindSpore's rules and error types: an int argument rejects bools and
floats (TypeError), a float argument rejects ints (TypeError), a range is a ValueError; every
message names the function and the argument."""

from __future__ import annotations

from typing import Any


def positive_int(owner: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int. Received {value!r}")
    if value <= 0:
        raise ValueError(f"{owner}: {name} must be > 0. Received {value}")
    return value


def a_float(owner: str, name: str, value: Any, low: float | None = None, strict: bool = True):
    """``value`` as a float of Python's ``float`` type, above ``low`` (``strict``: > low,
    else >= low)."""
    if not isinstance(value, float):
        raise TypeError(f"{owner}: {name} must be a float. Received {value!r}")
    if low is not None and (value <= low if strict else value < low):
        raise ValueError(
            f"{owner}: {name} must be {'>' if strict else '>='} {low}. Received {value}"
        )
    return value


def a_bool(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool. Received {value!r}")
    return value
