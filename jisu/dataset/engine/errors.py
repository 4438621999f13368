"""Errors raised by pipelines, and how a failure inside an op gets its context."""

from __future__ import annotations

from typing import NoReturn


class PipelineError(RuntimeError):
    """A failure inside a running pipeline whose original exception type could not be kept."""


def with_context(exc: BaseException, context: str) -> BaseException:
    """Return an exception that says where ``exc`` happened and chains it.

    The new exception keeps the original type when that type can be built from a message
    (ValueError, TypeError, KeyError, ...), so ``except ValueError`` in user code still works;
    otherwise it is a :class:`PipelineError`. The original, with its worker traceback, is the
    ``__cause__``. An exception that already carries pipeline context is returned unchanged:
    the innermost context (op, column, sample) is the useful one.
    """
    if getattr(exc, "_jisu_context", False) or not isinstance(exc, Exception):
        return exc
    message = f"{context}: {type(exc).__name__}: {exc}"
    try:
        new = type(exc)(message)
        if str(new) != message and not isinstance(new, KeyError):
            raise TypeError("message not kept")
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
