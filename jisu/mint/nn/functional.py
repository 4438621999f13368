"""MindSpore's ``mindspore.mint.nn.functional``: ``torch.nn.functional``'s functions under the
same names (``sigmoid``/``tanh`` are torch's own, F's being deprecated aliases)."""

from __future__ import annotations

from typing import Any

from .._names import FUNCTIONAL, lookup, refused

globals().update({name: lookup(name) for name in FUNCTIONAL})

__all__ = sorted(FUNCTIONAL)


def __getattr__(name: str) -> Any:
    raise refused(__name__, name)
