"""MindSpore names jisu refuses on purpose: importing them works, using them (building a class,
calling a function) raises ``NotImplementedError`` with MindSpore's path and the reason, so a
script fails at the line that needs the missing piece and says why, never at its imports.

Every refused object carries ``_jisu_unprovided = True`` (the model-zoo census counts it as
missing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["refused_class", "refused_function"]


def _message(path: str, reason: str) -> str:
    return f"mindspore.{path} is not provided by jisu: {reason}"


def refused_class(path: str, reason: str, base: type = object) -> type:
    """A class named as MindSpore's ``path`` (``"nn.GraphCell"``) whose construction raises
    ``NotImplementedError("mindspore.<path> is not provided by jisu: <reason>")``; its class
    attributes (``DataType.F32_None`` ...) resolve to refusals too, so tables built at import
    time from them still import."""
    message = _message(path, reason)

    def refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(message)

    class _Meta(type):
        def __getattr__(cls, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return refused_function(f"{path}.{name}", reason)

    name = path.rsplit(".", 1)[-1]
    namespace = {
        "__init__": refuse,
        "__call__": refuse,
        "_jisu_unprovided": True,
        "__doc__": f"MindSpore's ``{path}``: not provided by jisu ({reason}).",
    }
    meta = type(base) if type(base) is not type else _Meta
    if meta is not _Meta:  # a torch.nn.Module base keeps its own metaclass
        return meta(name, (base,), namespace)
    return _Meta(name, (base,), namespace)


def refused_function(path: str, reason: str) -> Callable[..., NoReturn]:
    """A function named as MindSpore's ``path`` that raises ``NotImplementedError`` when called
    (also when used as a decorator, whatever its arguments)."""
    message = _message(path, reason)

    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(message)

    refuse.__name__ = refuse.__qualname__ = path.rsplit(".", 1)[-1]
    refuse.__doc__ = f"MindSpore's ``{path}``: not provided by jisu ({reason})."
    refuse._jisu_unprovided = True  # type: ignore[attr-defined]
    return refuse
