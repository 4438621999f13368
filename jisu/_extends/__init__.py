"""MindSpore's ``mindspore._extends`` names the zoo imports: ``cell_attr_register``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["cell_attr_register"]


def cell_attr_register(fn: Callable | None = None, attrs: list[str] | str | None = None) -> Any:
    """Decorates a Cell's ``__init__`` to record its arguments in ``self.cell_init_args``
    (MindSpore's graph compiler keys reused cells by it; jisu only records it): the class
    name and the ``__init__`` arguments, or, with ``attrs``, the values of those attributes
    after ``__init__``. Used bare (``@cell_attr_register``) or called
    (``@cell_attr_register(attrs=["has_bias"])``)."""
    if attrs is not None and not isinstance(attrs, (list, str)):
        raise ValueError(f"cell_attr_register: attrs must be a list or a str. Received {attrs!r}")
    if isinstance(attrs, list) and not all(isinstance(item, str) for item in attrs):
        raise ValueError(f"cell_attr_register: every attr must be a str. Received {attrs!r}")

    def wrap(init: Callable) -> Callable:
        @functools.wraps(init)
        def wrapped(self: Any, *args: Any, **kwargs: Any) -> None:
            arguments: Any = []
            if attrs is None:
                bound = dict(inspect.signature(init).bind(self, *args, **kwargs).arguments)
                del bound["self"]
                arguments = bound.values()  # "Name" + str(dict_values) is MindSpore's key
            init(self, *args, **kwargs)
            if isinstance(attrs, list):
                arguments = [getattr(self, item) for item in attrs if hasattr(self, item)]
            elif isinstance(attrs, str) and hasattr(self, attrs):
                arguments = getattr(self, attrs)
            self.cell_init_args = type(self).__name__ + str(arguments)

        return wrapped

    return wrap(fn) if fn is not None else wrap
