"""Stages on the actors of a Ray cluster (``config.set_executor(RayExecutor(...))``).

:mod:`.executor` is the :class:`~jisu.dataset.core.executor.Executor` users build (Ray itself
is imported only when one is made), :mod:`.pool` a stage's pool of actors, with task dispatch
in :mod:`.dispatch` and actor management in :mod:`.actors`; :mod:`.worker` is the actor.
"""
