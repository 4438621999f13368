"""Exception classes for mistakes that jisu and MindSpore report with different built-in types.

jisu checks arguments and data early, with its own messages; MindSpore 2.10 reports some of
the same mistakes with another built-in type (often a ``RuntimeError``, since it finds them
while the pipeline runs). Each class here derives from both, so ``except RuntimeError`` (or
``pytest.raises(TypeError)``) in ported code still catches jisu's error, and so does code that
expects jisu's own type. ``tests/fixtures/ms_errors`` and ``tests/fixtures/ms_error_types``
record MindSpore's type per mistake.

The rule (porting guide, "Errors"): jisu may fail earlier than MindSpore (when the pipeline is
built), and its message is its own, but every error it raises where MindSpore raises another
class is an instance of MindSpore's class too. Three mechanisms keep it:

* the classes below, raised where jisu checks something MindSpore checks only at run time;
* :func:`combined_type` / :func:`as_runtime_error`: an op's failure, called eagerly or inside a
  pipeline, is also a ``RuntimeError`` (MindSpore's C++ ops raise nothing else), with its own
  class, message and traceback kept;
* :func:`checked_at_run_time`: a block of checks MindSpore makes only when the pipeline runs
  (a sampler's values, say).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class ArgumentError(TypeError, ValueError):
    """A bad argument where the two disagree whether it is a TypeError or a ValueError (a
    ``size`` that is a string, an empty ``Compose``): an instance of both."""


class PipelineValueError(ValueError, RuntimeError):
    """A ValueError in jisu that MindSpore raises as a RuntimeError: data an op cannot work on
    (an image of the wrong rank, bytes that are no image), a column count or name that does not
    match, found by jisu when the pipeline is built where it can be."""


class PipelineTypeError(TypeError, RuntimeError):
    """A TypeError in jisu that MindSpore raises as a RuntimeError: an op given more input
    columns than it takes, a source yielding a value no column can hold (None, a set)."""


class MissingFolderError(FileNotFoundError, ValueError):
    """A data set folder that does not exist: jisu's FileNotFoundError, MindSpore's
    ValueError."""


_combined: dict[tuple[type, type], type] = {}
_combined_lock = threading.Lock()


def combined_type(cls: type[BaseException], base: type[RuntimeError]) -> type[BaseException]:
    """``cls`` made an instance of ``base`` (a ``RuntimeError`` class) too: ``cls`` itself when
    it already is a ``RuntimeError``, else a subclass of both with ``cls``'s name and module (so
    a traceback still reads ``ValueError: ...``), made once per pair. ``base`` itself when no
    such class can exist (two C base classes with incompatible layouts). A class made here
    is combined anew from its original (an eager op's error that reaches a pipeline)."""
    cls = vars(cls).get("_jisu_bases", (cls,))[0]
    if issubclass(cls, RuntimeError):
        return cls
    with _combined_lock:
        made = _combined.get((cls, base))
        if made is None:
            namespace = {
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__reduce__": _reduce_combined,
                "__doc__": f"{cls.__name__} raised by an op or a pipeline (also a RuntimeError).",
                "_jisu_bases": (cls, base),
            }
            try:
                made = type(cls.__name__, (cls, base), namespace)
            except TypeError:  # e.g. two C base classes with incompatible layouts
                made = base
            _combined[(cls, base)] = made
        return made


def _reduce_combined(self: BaseException) -> tuple[Any, ...]:
    """Pickle a combined exception by its two classes (the combined class is made anew where it
    is unpickled: in the parent of a worker process, say)."""
    return _rebuild_combined, (*type(self)._jisu_bases, self.args), self.__dict__


def _rebuild_combined(cls: type[BaseException], base: type, args: tuple) -> BaseException:
    return combined_type(cls, base)(*args)


def as_runtime_error(exc: BaseException, base: type[RuntimeError] = RuntimeError) -> BaseException:
    """``exc`` as an instance of its own class and of ``base``: ``exc`` itself when it is a
    ``RuntimeError`` already (or no ``Exception``), else a copy of the combined class with the
    same arguments, attributes, cause and traceback (``raise as_runtime_error(exc)`` reads as
    ``exc`` did). ``exc`` itself when its class cannot be rebuilt from its arguments."""
    if isinstance(exc, RuntimeError) or not isinstance(exc, Exception):
        return exc
    try:
        new = combined_type(type(exc), base)(*exc.args)
        if str(new) != str(exc):
            return exc
    except Exception:  # a class whose __init__ takes other arguments than its args
        return exc
    for name, value in vars(exc).items():
        vars(new).setdefault(name, value)
    new.__cause__, new.__context__ = exc.__cause__, exc.__context__
    new.__suppress_context__ = exc.__suppress_context__
    return new.with_traceback(exc.__traceback__)


@contextmanager
def checked_at_run_time() -> Iterator[None]:
    """Checks MindSpore 2.10 makes only when the pipeline runs (a RuntimeError there) and jisu
    makes at once: a ValueError or TypeError raised in the block is also a RuntimeError."""
    try:
        yield
    except (ValueError, TypeError) as exc:
        raise as_runtime_error(exc) from exc.__cause__
