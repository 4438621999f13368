"""MindSpore's ``mindspore.train.callback._callback`` path: ``Callback``, ``RunContext`` and
``_InternalCallbackParam`` (:mod:`jisu.train.callbacks.base`)."""

from ..callbacks.base import Callback, CallbackParams, RunContext

_InternalCallbackParam = CallbackParams

__all__ = ["Callback", "RunContext"]
