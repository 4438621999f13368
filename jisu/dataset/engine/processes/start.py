"""Starting worker processes: multiprocessing's forkserver, set up for jisu.

Why a forkserver: see :mod:`.pool`. What it imports decides how long the first batch
of a process stage takes in a fresh program, since the forkserver starts with the first worker
and every worker waits for it: all of jisu with torch would be 1.5 s. So it imports only

* :mod:`.forkserver_boot` first, as its ``__main__``, which defers the ``__init__`` of the
  packages ``jisu`` and ``jisu.dataset`` (they import everything);
* the worker's module, :mod:`.worker`;
* the modules the stage of the first process pool refers to (:func:`preload`), so that each
  worker does not import them on its own: jisu's, and NumPy, torch, OpenCV or PIL where the
  stage's ops (or the user's modules they come from) use them. The user's modules are imported
  by each worker as it loads its stage: a forkserver must not run user code, which may start
  threads, since it forks.

Workers do not re-run the program's ``__main__`` script either (:func:`start`), and they run
in the environment variables of the program as it is when they start (:func:`process`), not as
it was when the forkserver started: credentials or endpoints set after the first worker pool
reach later workers, as they would with ``fork`` or ``spawn``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from multiprocessing import forkserver, spawn
from typing import Any

from . import worker as process_worker

BOOT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forkserver_boot.py")
# top-level packages a forkserver may import for a stage besides jisu (no user code: see above)
PRELOADABLE = frozenset({"jisu", "numpy", "torch", "torchvision", "cv2", "PIL"})

_preload: list[str] = ["__main__", process_worker.__name__]  # "__main__" is BOOT_PATH
_context: Any = None
# one start at a time (the preparation data is patched meanwhile), none while a dead forkserver
# is being reaped
start_lock = threading.RLock()
_starting_thread: int | None = None
_preload_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A process forked from this one (``multiprocessing``'s "fork", ``os.fork``) cannot use
    this process's forkserver: it is not the forkserver's parent (multiprocessing's check of
    it fails with ``ChildProcessError``), and a lock held by another thread at the fork stays
    held. Forget it there, so that the child's first worker starts a forkserver of its own.
    """
    global start_lock, _preload_lock, _starting_thread
    start_lock, _preload_lock, _starting_thread = threading.RLock(), threading.Lock(), None
    spawn.get_preparation_data = _original_preparation_data  # if a start was under way
    server = getattr(forkserver, "_forkserver", None)
    if server is None or getattr(server, "_forkserver_pid", None) is None:
        return  # none started here (or this is a worker, forked by the forkserver)
    alive = server._forkserver_alive_fd
    server._lock = threading.Lock()
    server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None
    if alive is not None:  # the parent's forkserver lives as long as its parent holds this
        try:
            os.close(alive)
        except OSError:
            pass


_original_preparation_data = spawn.get_preparation_data
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def mp_context() -> Any:
    """The forkserver context, with jisu's preload list (see the module doc)."""
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(_preload))
        _context = context
    return _context


def process(target: Any, args: tuple, *, name: str | None = None, daemon: bool) -> Any:
    """A process of :func:`mp_context` (not started) that runs ``target(*args)`` in this
    process's environment variables as they are now (a forkserver's children inherit the
    forkserver's, frozen when it started)."""
    return mp_context().Process(
        target=_in_environment, args=(dict(os.environ), target, *args), name=name, daemon=daemon
    )


def _in_environment(environment: dict[str, str], target: Any, *args: Any) -> None:
    """Make this process's environment variables ``environment``, then run ``target``."""
    for key in set(os.environ) - set(environment):
        del os.environ[key]
    os.environ.update(environment)
    target(*args)


def _used_by(module_name: str) -> set[str]:
    """The modules that the module ``module_name`` (imported here) refers to at its top level:
    modules, and the modules of classes and functions, bound to its names."""
    used: set[str] = set()
    module = sys.modules.get(module_name)
    for value in list(vars(module).values()) if module is not None else ():
        if isinstance(value, types.ModuleType):
            used.add(value.__name__)
        elif isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
            name = getattr(value, "__module__", None)
            if isinstance(name, str):
                used.add(name)
    return used


def preload(modules: Iterable[str]) -> None:
    """Have a forkserver started from now on import ``modules`` too: those of them that this
    process has imported and that belong to a package of :data:`PRELOADABLE`, and such modules
    used at the top level of the others (a user's module of ops that imports torch: then the
    forkserver imports torch, not each worker)."""
    names = set(modules)
    for name in list(names):
        if name.partition(".")[0] not in PRELOADABLE and name not in ("__main__", "__mp_main__"):
            names |= _used_by(name)
    with _preload_lock:
        for name in sorted(names):
            if (
                name.partition(".")[0] in PRELOADABLE
                and name in sys.modules
                and name not in _preload
            ):
                _preload.append(name)
        mp_context().set_forkserver_preload(list(_preload))


@contextmanager
def _preparation_without_main() -> Iterator[None]:
    """For this thread, the preparation data of forkserver children lacks the ``__main__``
    script, and a forkserver started meanwhile runs :data:`BOOT_PATH` as its ``__main__``.

    multiprocessing prepares every forkserver/spawn child by re-importing the parent's main
    script, which runs its module-level code again (and fails outright in scripts without an
    ``if __name__ == "__main__"`` guard). Workers need nothing from it: the stage travels with
    cloudpickle, which ships ``__main__`` functions by value. Other threads, which may start
    processes of their own, are not affected.
    """
    global _starting_thread
    original = spawn.get_preparation_data

    def preparation_data(name: str) -> dict:
        data = original(name)
        if threading.get_ident() == _starting_thread:
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            # what a forkserver being started ("ignore") runs as its __main__: "main_path" is
            # the key its start reads; should a later Python read the child's key, that too
            data["main_path"] = BOOT_PATH
            if name == "ignore":
                data["init_main_from_path"] = BOOT_PATH
        return data

    with start_lock:
        outer, _starting_thread = _starting_thread, threading.get_ident()
        spawn.get_preparation_data = preparation_data
        try:
            yield
        finally:
            spawn.get_preparation_data = original
            _starting_thread = outer


def ensure_forkserver() -> None:
    """Start the forkserver now if none runs (it then loads while the caller goes on)."""
    mp_context()
    with _preparation_without_main():
        forkserver.ensure_running()


def start(process: Any) -> int | None:
    """Start ``process`` (of :func:`mp_context`) without the ``__main__`` script; returns the
    pid of the forkserver that forked it."""
    with _preparation_without_main():
        process.start()
    return forkserver_pid()


def forkserver_pid() -> int | None:
    """The pid of multiprocessing's forkserver (private to it: there is no public way)."""
    return getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)


def reap_forkserver(pid: int | None) -> None:
    """Let multiprocessing reap the dead forkserver ``pid`` (and start a new one for later
    workers); nothing to wait for if it has done so already (another worker told it).

    Its pipes close a moment before it becomes a zombie that ``waitpid`` can take, and
    multiprocessing looks only once (``WNOHANG``): so first wait, without reaping it, until it
    is one.
    """
    with start_lock:
        if pid is not None and pid == forkserver_pid() and hasattr(os, "waitid"):
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                try:
                    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
                    if os.waitid(os.P_PID, pid, flags) is not None:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.001)
        ensure_forkserver()
