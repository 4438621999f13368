"""``LambdaCallback``: a callback made of functions, one per hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import HOOKS, JISU_HOOKS, Callback, RunContext


class LambdaCallback(Callback):
    """A callback from functions: ``LambdaCallback(on_train_step_end=fn, ...)``; each takes
    the ``RunContext``. MindSpore's hooks and jisu's (:data:`JISU_HOOKS`) are accepted."""

    def __init__(self, **hooks: Callable[[RunContext], None]) -> None:
        known = (*HOOKS, *JISU_HOOKS)
        unknown = set(hooks) - set(known)
        if unknown:
            raise ValueError(
                f"LambdaCallback: unknown hook(s) {sorted(unknown)}; known: {list(known)}"
            )
        self._hooks = hooks

    def wants_hook(self, hook: str) -> bool:
        return hook in object.__getattribute__(self, "_hooks")

    def __getattribute__(self, name: str) -> Any:
        if name in HOOKS or name in JISU_HOOKS:
            hook = object.__getattribute__(self, "_hooks").get(name)
            if hook is not None:
                return hook
            return lambda run_context: None
        return object.__getattribute__(self, name)
