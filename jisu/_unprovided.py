"""MindSpore names jisu refuses on purpose: importing them works, using them (building a class,
calling a function) raises ``NotImplementedError`` with MindSpore's path and the reason, so a
script fails at the line that needs the missing piece and says why, never at its imports.

Every refused object carries ``_jisu_unprovided = True`` (the model-zoo census counts it as
missing) and ``_jisu_reason``, the reason (``jisu port`` lists it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["refused_class", "refused_function"]


def _message(path: str, reason: str) -> str:
    return f"mindspore.{path} is not provided by jisu: {reason}"


def refused_class(path: str, reason: str, base: type = object) -> type:
    """A class named as MindSpore's ``path`` (``"nn.GraphCell"``), a subclass of ``base``,
    whose construction (and call) raises ``NotImplementedError("mindspore.<path> is not
    provided by jisu: <reason>")``."""
    message = _message(path, reason)

    def refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(message)

    namespace = {
        "__init__": refuse,
        "__call__": refuse,
        "_jisu_unprovided": True,
        "_jisu_reason": reason,
        "__doc__": f"MindSpore's ``{path}``: not provided by jisu ({reason}).",
    }
    return type(base)(path.rsplit(".", 1)[-1], (base,), namespace)


def refused_function(path: str, reason: str) -> Callable[..., NoReturn]:
    """A function named as MindSpore's ``path`` that raises ``NotImplementedError`` when called
    (also when used as a decorator, whatever its arguments)."""
    message = _message(path, reason)

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(message)

    refuse.__name__ = refuse.__qualname__ = path.rsplit(".", 1)[-1]
    refuse.__doc__ = f"MindSpore's ``{path}``: not provided by jisu ({reason})."
    refuse._jisu_unprovided = True  # type: ignore[attr-defined]
    refuse._jisu_reason = reason  # type: ignore[attr-defined]
    return refuse
