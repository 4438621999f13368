"""MindSpore's ``mindspore.train.callback._callback`` path: ``Callback``, ``RunContext``, and
the private names the zoo imports to drive callbacks from its own loops:
``_InternalCallbackParam`` (``cb_params`` built by hand), ``_CallbackManager`` (a list of
callbacks called together) and ``_set_cur_net``."""

from __future__ import annotations

from typing import Any

from ..callbacks.base import OLD_NAMES, Callback, CallbackList, CallbackParams, RunContext

_InternalCallbackParam = CallbackParams
_NEW_NAMES = {old: new for new, old in OLD_NAMES.items()}

__all__ = ["Callback", "RunContext"]


class _CallbackManager(CallbackList):
    """MindSpore's ``_CallbackManager(callbacks)``: calls a hook (``begin``, ``step_end`` ...
    or ``on_train_begin`` ...) on every callback in order; also a context manager."""

    def __enter__(self) -> _CallbackManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __getattr__(self, hook: str) -> Any:
        return super().__getattr__(_NEW_NAMES.get(hook, hook))


def _set_cur_net(net: Any) -> None:
    """MindSpore names the network its GE backend checkpoints; jisu's checkpoints read the
    network they are given, so there is nothing to set."""


def _handle_loss(loss: Any) -> Any:
    """MindSpore's helper for a step's output: a tuple or list gives its first element (a
    tensor, unconverted), a tensor its mean as a Python float; anything else comes back as
    it is."""
    import torch

    if isinstance(loss, (tuple, list)):
        return loss[0] if loss and isinstance(loss[0], torch.Tensor) else loss
    if isinstance(loss, torch.Tensor):
        return float(loss.detach().float().mean())  # host sync: MindSpore reads the value
    return loss
