"""The Ray actor that runs one stage's tasks: the Ray executor's counterpart of
:mod:`..processes.worker`.

An actor loads its stage once (the pickled ``(task, node_ids, seed, prefetch_size, profile,
settings)`` the pool put into Ray's object store once) and rebuilds the context a local worker
has: the same seed and the same structural node ids, so every random draw (keyed by seed,
epoch, row and op) equals the one a local thread or worker process makes, and the driver's
run-time settings (:func:`run_time_settings`). It then runs one task at a time.

Nothing is raised out of an actor method: an op's exception comes back as a value,
``("err", seconds, pickled exception or None, message, traceback text)``, so that the pool
tells an op's failure (which names op, column and sample and keeps the actor's traceback) apart
from the death of the actor (which Ray reports as ``RayActorError``).

This module imports no Ray at its top level (``ready`` imports it to name its node).
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import sys
import time
import traceback
from typing import Any

import numpy as np

# Nothing of jisu is imported at the top: the pool has Ray pickle this module's code by value
# (see :func:`defer_jisu_packages`).

_WRITABLE_DEPTH = 4  # items are index lists, (index, row) lists or (batch, rows): shallow


def writable(value: Any, depth: int = 0) -> Any:
    """``value`` with every read-only NumPy array in it (nested in lists and tuples) replaced
    by a writable copy.

    Ray hands an actor the arrays of its arguments read-only (zero-copy from the object
    store); a local worker gets its items writable, and an op may write into its input, so an
    actor gets what a local worker gets.
    """
    kind = type(value)
    if kind is np.ndarray:
        return value if value.flags.writeable else value.copy()
    if depth >= _WRITABLE_DEPTH or (kind is not list and kind is not tuple):
        return value
    if not value or (kind is list and type(value[0]) is int):  # an index list: nothing to copy
        return value
    items = [writable(v, depth + 1) for v in value]
    return items if kind is list else tuple(items)


def run_time_settings() -> dict[str, Any]:
    """The ``config`` settings that ops read while they run (not when the pipeline is built),
    as the driver has them: an actor applies them, so that it computes what a thread would."""
    from jisu.dataset import config

    return config.run_time_settings()


def defer_jisu_packages() -> None:
    """In a fresh actor process, put the packages ``jisu`` and ``jisu.dataset`` in place
    without running their ``__init__`` (as jisu's forkserver does, see
    :mod:`..processes.forkserver_boot`): those import torch, the training code and every op
    (1.5 s and a few hundred MB per actor), while an actor needs the engine and the modules of
    its stage.
    A name of the packages used later (``jisu.dataset.GeneratorDataset``) runs the
    ``__init__`` then. For this to work the actor class must reach the actor without an import
    of this module (which would run the ``__init__`` first): the pool has Ray pickle this
    module by value. Without effect where jisu is imported already."""
    if "jisu" in sys.modules:
        return
    spec = importlib.util.find_spec("jisu")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return  # not installed here: loading the stage says so
    path = os.path.join(
        next(iter(spec.submodule_search_locations)),
        "dataset",
        "engine",
        "processes",
        "forkserver_boot.py",
    )
    boot_spec = importlib.util.spec_from_file_location("_jisu_actor_boot", path)
    if boot_spec is None or boot_spec.loader is None:
        return
    boot = importlib.util.module_from_spec(boot_spec)
    sys.modules["_jisu_actor_boot"] = boot
    boot_spec.loader.exec_module(boot)
    boot.install()


def error_message(exc: BaseException) -> tuple[Any, str, str]:
    """``(pickled exception or None, message, traceback text)`` of ``exc``, for the pool's
    :func:`..processes.workers.rebuild_error` (as :mod:`..processes.worker` sends them)."""
    import cloudpickle

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        payload = cloudpickle.dumps(exc)
        pickle.loads(payload)  # the driver must be able to rebuild it
    except Exception:
        payload = None
    return payload, f"{type(exc).__name__}: {exc}", text


class StageActor:
    """Runs one stage's tasks in a Ray actor (made a Ray actor class by the pool).

    Args:
        spec: the pickled stage (see the module doc); Ray resolves the object reference the
            pool passes to these bytes.
    """

    def __init__(self, spec: bytes) -> None:
        defer_jisu_packages()
        self._spec: bytes | None = spec
        self._task: Any = None
        self._ctx: Any = None  # the ExecContext of a worker

    def ready(self) -> tuple:
        """Load the stage; ``("ok", node id, node IP, pid)``, or ``("err", node id, node IP,
        pid, pickled exception, message, traceback)`` when it cannot be loaded here (a module
        of the stage's ops missing on this node, say)."""
        import ray

        where = (ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address())
        where += (os.getpid(),)
        try:
            self._load()
        except Exception as exc:
            return ("err", *where, *error_message(exc))
        return ("ok", *where)

    def _load(self) -> None:
        if self._spec is None:
            return
        import cloudpickle

        from jisu.dataset import config
        from jisu.dataset.engine.context import ExecContext

        task, node_ids, seed, prefetch_size, profile, settings = cloudpickle.loads(self._spec)
        self._spec = None
        config.apply_run_time_settings(settings)
        ids = {id(n): i for n, i in zip(task.nodes(), node_ids)}
        self._ctx = ExecContext(seed, prefetch_size, ids, profile=profile)
        self._task = task

    def run(self, epoch: int, item: Any) -> tuple:
        """Run the task on ``item`` of ``epoch``: ``("ok", seconds, result, samples skipped,
        their messages, op timings or None)`` or ``("err", seconds, ...)`` (module doc)."""
        begin = time.perf_counter()
        try:
            self._load()
            ctx = self._ctx
            assert ctx is not None
            skipped, examples = ctx.skipped, len(ctx.skip_examples)
            result = self._task(ctx, epoch, writable(item))
        except Exception as exc:
            return ("err", time.perf_counter() - begin, *error_message(exc))
        seconds = time.perf_counter() - begin
        op_times = ctx.op_times.drain() if ctx.op_times is not None else None
        return (
            "ok",
            seconds,
            result,
            ctx.skipped - skipped,
            ctx.skip_examples[examples:],
            op_times,
        )
