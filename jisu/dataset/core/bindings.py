"""What the node's methods reach in the layers above ``core``, bound once by those layers.

``Dataset.map`` builds a ``MapDataset``, ``create_tuple_iterator`` a ``DatasetIterator`` and
``_stream`` asks the engine to run a node: all of them live above ``core``, which imports
none of them. :mod:`jisu.dataset.datasets`, the top of the package (imported by
``jisu/dataset/__init__``, so before any node exists), binds them here by name — the same
inversion as torchdata's ``functional_datapipe`` registry, kept to one table.
"""

from __future__ import annotations

import importlib
from typing import Any

_bound: dict[str, Any] = {}


def bind(**implementations: Any) -> None:
    """Bind implementations by name (``map=MapDataset``, ``iterator=DatasetIterator`` …)."""
    _bound.update(implementations)


def bound(name: str) -> Any:
    """The implementation bound to ``name``."""
    if name not in _bound:
        # A worker process defers the package's ``__init__`` (see
        # ``engine/processes/forkserver_boot.py``): the binding module is then imported on
        # first use, by name, from the bottom layer.
        importlib.import_module("jisu.dataset.datasets")
    try:
        return _bound[name]
    except KeyError:
        raise RuntimeError(
            f"jisu.dataset: nothing is bound to '{name}': import jisu.dataset (its package "
            "binds the engine and the ops when it is imported)"
        ) from None
