"""What jisu's forkserver runs first, as its ``__main__`` (see :mod:`.start`).

It puts the packages ``jisu`` and ``jisu.dataset`` in place without running their
``__init__``, which imports all of jisu: torch (``jisu.amp``, ``jisu.train``), OpenCV
(``jisu.dataset.vision``), the record reader and writer, ... (1.5 s), while a worker needs only
the engine's modules and those of its stage, which the forkserver imports next.

A deferred package runs its ``__init__`` (its parent's first, the order of a normal import) the
first time a name that it defines is asked for (``jisu.__version__``,
``jisu.dataset.NumpySlicesDataset``, ``from jisu.dataset import Dataset``), so user code in a
worker that uses those names works as it does anywhere; importing a submodule
(``import jisu.dataset.vision``, ``from jisu.dataset import config``) does not run it.

This file is run by path (``multiprocessing.spawn.import_main_path``) before anything of jisu
is imported: it imports nothing from jisu, and if it cannot set the packages up it leaves them
to be imported normally.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

DEFERRED = ("jisu", "jisu.dataset")
_lock = threading.RLock()


class DeferredPackage(types.ModuleType):
    """A package module whose ``__init__`` has not run yet (see the module doc)."""

    def __getattr__(self, name: str) -> Any:  # only names not (yet) in the module
        if not (name.startswith("__") and name.endswith("__")):
            full = f"{self.__name__}.{name}"
            try:
                spec = importlib.util.find_spec(full)
            except (ImportError, ValueError):
                spec = None
            if spec is not None:  # a submodule: what the __init__ would have bound too
                return importlib.import_module(full)
        run_init(self)
        return getattr(self, name)  # a plain module now: AttributeError if still missing


def run_init(module: types.ModuleType) -> None:
    """Run the ``__init__`` of a deferred package (its parent's first); once."""
    with _lock:
        if type(module) is not DeferredPackage:
            return  # done, or running (a name it has not defined yet is missing, as usual)
        parent = sys.modules.get(module.__name__.rpartition(".")[0])
        if parent is not None:
            run_init(parent)
            if type(module) is not DeferredPackage:
                return  # the parent's __init__ used this package: its own __init__ ran then
        module.__class__ = types.ModuleType
        module.__spec__.loader.exec_module(module)  # type: ignore[union-attr]


def install() -> list[str]:
    """Put the packages of :data:`DEFERRED` in ``sys.modules`` without running their
    ``__init__``; returns those it deferred (none if one could not be: all or nothing)."""
    done: list[str] = []
    try:
        for name in DEFERRED:
            if name in sys.modules:
                break
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None or spec.submodule_search_locations is None:
                break
            module = importlib.util.module_from_spec(spec)
            module.__class__ = DeferredPackage
            sys.modules[name] = module
            done.append(name)
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)
        else:
            return done
    except Exception:
        pass
    for name in done:  # leave everything to normal imports
        del sys.modules[name]
    return []


if __name__ == "__mp_main__":  # run by the forkserver; importing this module does nothing
    install()
