"""MindSpore's ``mindspore.version`` path: ``__version__`` is jisu's version."""

from ._version import __version__

__all__ = ["__version__"]
