"""Errors raised by pipelines, and how a failure inside an op gets its context.

MindSpore's contract is that every failure during iteration is a ``RuntimeError``; Python's is
that a ``ValueError`` stays a ``ValueError``. jisu keeps both: an exception that leaves an op
with its context (:func:`with_context`) is an instance of its original type *and* of
:class:`PipelineError` (a ``RuntimeError``), so ``except ValueError`` and
``except RuntimeError`` both catch it.
"""

from __future__ import annotations

from typing import NoReturn

from ..core.error_types import as_runtime_error, combined_type


class PipelineError(RuntimeError):
    """A failure inside a running pipeline. An op's error is one too, of its own type as well
    (see the module doc); it is plain PipelineError when that type cannot be kept."""


class TaskTimeoutError(PipelineError, TimeoutError):
    """A task ran longer than ``config.set_sample_timeout`` allows; names the op, the worker and
    the sample. A ``TimeoutError`` and, like every pipeline error, a ``RuntimeError``."""


class EpochsExhaustedError(PipelineError):
    """``next()`` on an iterator whose ``num_epochs`` are all consumed (MindSpore raises a
    ``RuntimeError`` there too); the end of each epoch itself is a ``StopIteration``."""


def in_context_type(cls: type[BaseException]) -> type[BaseException]:
    """``cls`` made catchable as ``RuntimeError``: ``cls`` itself when it already is one, else a
    subclass of both ``cls`` and :class:`PipelineError` with the same name (made once per class).
    :class:`PipelineError` itself when no such class can exist (a layout conflict)."""
    return combined_type(cls, PipelineError)


def as_pipeline_error(exc: BaseException) -> BaseException:
    """``exc`` unchanged in class, message and traceback, but also a :class:`PipelineError`
    (a ``RuntimeError``): how a failure leaves the iterator when no op gave it context."""
    return as_runtime_error(exc, PipelineError)


def with_context(exc: BaseException, context: str) -> BaseException:
    """Return an exception that says where ``exc`` happened and chains it.

    The new exception keeps the original type when that type can be built from a message
    (ValueError, TypeError, KeyError, ...) and is also a :class:`PipelineError`, so both
    ``except ValueError`` and ``except RuntimeError`` in user code work; otherwise it is a plain
    :class:`PipelineError`. The original, with its worker traceback, is the ``__cause__``. An
    exception that already carries pipeline context is returned unchanged: the innermost
    context (op, column, sample) is the useful one.
    """
    if getattr(exc, "_jisu_context", False) or not isinstance(exc, Exception):
        return exc
    message = f"{context}: {type(exc).__name__}: {exc}"
    try:
        new = in_context_type(type(exc))(message)
        if str(new) != message and not isinstance(new, KeyError):
            raise TypeError("message not kept")
        for name, value in vars(exc).items():  # e.g. the file a MalformedFileError names
            if name != "__notes__":  # the cause's notes are shown with the cause
                vars(new).setdefault(name, value)
    except Exception:
        new = PipelineError(message)
    new.__cause__ = exc
    new._jisu_context = True  # type: ignore[attr-defined]
    return new


def raise_in_context(exc: BaseException, context: str) -> NoReturn:
    """Raise :func:`with_context`'s exception for ``exc`` (call it in an ``except`` block)."""
    new = with_context(exc, context)
    if new is exc:
        raise exc
    raise new from exc
