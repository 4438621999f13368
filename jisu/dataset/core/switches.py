"""MindSpore's ``dataset.config`` switches that jisu stores and checks but runs without.

``mindspore.dataset.config`` has settings for machinery jisu does not have (an Ascend video
decoder, a single-threaded debug engine, dynamic-shape graph compilation, its own choice of
how worker processes start). A ported script sets them; jisu accepts each value MindSpore 2.10
accepts, refuses with MindSpore's exception type what it refuses, and reads back what was set,
so the script runs unchanged. Each setter's docstring says what the value does in jisu. The
settings jisu acts on live in :mod:`jisu.dataset.config`, which re-exports these.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from .error_types import PipelineValueError

INT32_MAX = 2**31 - 1

_dynamic_shape = False
_iterator_mode = {"do_copy": False, "parallel_convert": False}
_debug_mode = False
_debug_hooks: list[Callable] = []
_start_method = "fork"
_video_backend = "CPU"
_callback_timeout = 60


def _check_bool(setter: str, name: str, value: object) -> bool:
    if not isinstance(value, bool):  # MindSpore 2.10: a TypeError, for 1 and None too
        raise TypeError(f"{setter}: {name} must be a bool. Received: {name}={value!r}")
    return value


def _check_choice(setter: str, name: str, value: object, allowed: Sequence[str]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{setter}: {name} must be a str. Received: {name}={value!r}")
    if value not in allowed:
        raise ValueError(f"{setter}: {name} must be one of {list(allowed)}. Received: {value!r}")
    return value


def set_dynamic_shape(is_dynamic: bool) -> None:
    """Whether the data's shapes vary, so that MindSpore compiles its graph for dynamic shapes
    (default False). jisu stores it and changes nothing: its pipelines always allow varying
    shapes, and ``torch.compile`` in GRAPH_MODE handles them on its own."""
    global _dynamic_shape
    _dynamic_shape = _check_bool("set_dynamic_shape", "is_dynamic", is_dynamic)


def get_dynamic_shape() -> bool:
    return _dynamic_shape


def set_iterator_mode(do_copy: bool = False, parallel_convert: bool = False) -> None:
    """How MindSpore's iterators turn rows into Tensors (copy or share memory, convert in
    parallel). jisu stores it and changes nothing: its iterators always share the NumPy
    array's memory (``torch.from_numpy``) and convert on the consuming thread."""
    global _iterator_mode
    _iterator_mode = {
        "do_copy": _check_bool("set_iterator_mode", "do_copy", do_copy),
        "parallel_convert": _check_bool("set_iterator_mode", "parallel_convert", parallel_convert),
    }


def get_iterator_mode() -> dict[str, bool]:
    return dict(_iterator_mode)


def set_debug_mode(debug_mode_flag: bool, debug_hook_list: list | None = None) -> None:
    """MindSpore's debug mode runs the pipeline on one thread and calls each hook around every
    op of a map. jisu stores the flag and the hooks (callables) and runs as before: its errors
    already name the op, the column and the sample, with the original traceback, and
    ``config.set_num_parallel_workers(1)`` gives the one-thread run."""
    global _debug_mode, _debug_hooks
    _check_bool("set_debug_mode", "debug_mode_flag", debug_mode_flag)
    hooks = [] if debug_hook_list is None else debug_hook_list
    if not isinstance(hooks, list):
        raise TypeError(
            f"set_debug_mode: debug_hook_list must be a list. Received: {debug_hook_list!r}"
        )
    for hook in hooks:  # MindSpore: DebugHook objects (jisu has no such class: any callable)
        if not callable(hook):
            raise TypeError(f"set_debug_mode: each debug hook must be callable. Received: {hook!r}")
    _debug_mode, _debug_hooks = debug_mode_flag, list(hooks)


def get_debug_mode() -> bool:
    return _debug_mode


def set_multiprocessing_start_method(start_method: str = "fork") -> None:
    """How MindSpore starts its worker processes: "fork" (default) or "spawn". jisu stores it
    and changes nothing: its workers start from a forkserver that has imported only what they
    need (fork's speed without forking a threaded parent)."""
    global _start_method
    _start_method = _check_choice(
        "set_multiprocessing_start_method", "start_method", start_method, ("fork", "spawn")
    )


def get_multiprocessing_start_method() -> str:
    return _start_method


def set_video_backend(backend: str) -> None:
    """Where MindSpore decodes video: "CPU" (default) or "Ascend". jisu stores it; it decodes
    on the CPU either way."""
    global _video_backend
    _video_backend = _check_choice("set_video_backend", "backend", backend, ("CPU", "Ascend"))


def get_video_backend() -> str:
    return _video_backend


def set_callback_timeout(timeout: int) -> None:
    """Seconds (1 to 2**31 - 1, default 60) that a ``WaitedDSCallback`` waits for the training
    step (or epoch) before the pipeline fails with a RuntimeError."""
    global _callback_timeout
    if isinstance(timeout, bool) or not isinstance(timeout, int):
        raise TypeError(
            f"set_callback_timeout: timeout must be an int. Received: timeout={timeout!r}"
        )
    if not 1 <= timeout <= INT32_MAX:
        raise ValueError(
            f"set_callback_timeout: timeout must be in [1, {INT32_MAX}]. "
            f"Received: timeout={timeout}"
        )
    _callback_timeout = timeout


def get_callback_timeout() -> int:
    return _callback_timeout


def check_autotune_file(path: str) -> None:
    """Refuse a settings file AutoTune could not write, when it is set (MindSpore 2.10's
    RuntimeError: an empty name, a directory, a folder that does not exist)."""
    folder = os.path.dirname(os.path.abspath(path)) if path else ""
    problem = (
        "must not be the empty string"
        if not path
        else "is a directory, not a file name"
        if os.path.isdir(path)
        else f"is in a directory that does not exist ({folder})"
        if not os.path.isdir(folder)
        else None
    )
    if problem:
        raise PipelineValueError(f"set_enable_autotune: filepath {problem}. Received: {path!r}")


def autotune_path(enable: bool, filepath: Any, filepath_prefix: Any) -> str | None:
    """The file AutoTune writes: ``filepath`` as given (jisu's argument), or MindSpore's
    ``filepath_prefix + RANK_ID + ".json"`` (the rank from ``RANK_ID``/``RANK``, else 0),
    checked when ``enable`` (MindSpore ignores the name otherwise)."""
    for name, value in (("filepath", filepath), ("filepath_prefix", filepath_prefix)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"set_enable_autotune: {name} must be a path. Received {value!r}")
    if filepath is not None and filepath_prefix is not None:
        raise ValueError("set_enable_autotune: give filepath or filepath_prefix, not both")
    if filepath_prefix is not None:
        prefix = os.fspath(filepath_prefix)
        if enable and (not prefix or os.path.isdir(prefix)):
            check_autotune_file(prefix)
        rank = os.environ.get("RANK_ID", os.environ.get("RANK", "0"))
        path = f"{prefix}{rank}.json"
        if enable:
            check_autotune_file(path)
        return path
    path = None if filepath is None else os.fspath(filepath)
    if enable and path is not None:
        check_autotune_file(path)
    return path
