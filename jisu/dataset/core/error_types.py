"""Exception classes for mistakes that jisu and MindSpore report with different built-in types.

jisu checks arguments and data early, with its own messages; MindSpore 2.10 reports some of
the same mistakes with another built-in type (often a ``RuntimeError``, since it finds them
while the pipeline runs). Each class here derives from both, so ``except RuntimeError`` (or
``pytest.raises(TypeError)``) in ported code still catches jisu's error, and so does code that
expects jisu's own type. ``tests/fixtures/ms_errors`` records MindSpore's type per mistake.
"""

from __future__ import annotations


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
