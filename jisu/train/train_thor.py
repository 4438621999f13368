"""MindSpore's ``mindspore.train.train_thor`` path: THOR, its second-order optimizer, is not
provided; ``ConvertModelUtils`` is refused when used, naming why."""

from __future__ import annotations

from typing import Any

__all__ = ["ConvertModelUtils"]

_REASON = (
    "THOR (MindSpore's second-order optimizer, with ConvertModelUtils and ConvertNetUtils) is "
    "not provided by jisu: it is built on MindSpore's own graph-mode matrix ops and sink-mode "
    "model. Train with a first-order optimizer (jisu.nn.Momentum, jisu.nn.Adam ...) instead"
)


class ConvertModelUtils:
    """Refused: THOR is not provided (the error names a first-order replacement)."""

    _jisu_unprovided = True
    _jisu_reason = _REASON

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(_REASON)

    @staticmethod
    def convert_to_thor_model(*args: Any, **kwargs: Any) -> Any:
        """Refused: THOR is not provided."""
        raise NotImplementedError(_REASON)
