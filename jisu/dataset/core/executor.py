"""The executor contract: where a pipeline's parallel stages run, if not on local workers.

``config.set_executor`` takes an :class:`Executor`; the engine asks it for one pool per stage.
jisu's one executor is :class:`~jisu.dataset.RayExecutor` (``engine/ray/executor.py``); the
contract lives here so that the settings (``config``) need not import the engine.
"""

from __future__ import annotations

from typing import Any


class Executor:
    """Runs the parallel stages of iterators created while it is set (``config.set_executor``)."""

    def pool(self, name: str, workers: int, ctx: Any, task: Any) -> Any:
        """The pool that runs one stage's tasks (``workers``: the plan's local count)."""
        raise NotImplementedError
