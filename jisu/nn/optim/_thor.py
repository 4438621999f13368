"""MindSpore's ``nn.optim.thor`` (``from mindspore.nn.optim import thor``): THOR, its
second-order optimizer, is not provided; calling ``thor(...)`` raises, naming why and what to
use instead (as ``jisu.train.train_thor.ConvertModelUtils`` does)."""

from __future__ import annotations

from typing import Any

__all__ = ["thor"]


def thor(*args: Any, **kwargs: Any) -> Any:
    """Refused: THOR is not provided by jisu (the error names a first-order replacement)."""
    raise NotImplementedError(
        "nn.thor: THOR (MindSpore's second-order optimizer) is not provided by jisu: it is "
        "built on MindSpore's own graph-mode matrix ops and sink-mode model. Train with a "
        "first-order optimizer (jisu.nn.Momentum, jisu.nn.Adam ...) instead"
    )


thor._jisu_unprovided = True  # type: ignore[attr-defined]
