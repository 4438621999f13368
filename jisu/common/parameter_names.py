"""The MindSpore names of torch parameters, kept beside them (a ``torch.nn.Parameter`` has no
settable name of its own).

A ``Cell``'s ``trainable_params()``/``parameters_and_names()`` record each parameter's name
(``layer1.0.bn1.gamma``), ``jisu.Parameter(..., name=...)`` records the one given, and
``update_parameters_name`` renames for good (MindSpore renames the ``Parameter`` object). The
tables are keyed by identity with weak references, so they hold no tensor alive. They live
here, below ``jisu.nn``, because ``jisu.common``'s ``Parameter`` records names too.
"""

from __future__ import annotations

import weakref

import torch

#: id(tensor) -> (a weak reference to it, its MindSpore name). Keyed by identity: a
#: WeakKeyDictionary would compare tensors with ``==`` (elementwise) on a hash collision.
_NAMES: dict[int, tuple[weakref.ref, str]] = {}


#: id(tensor) -> (a weak reference to it, the name ``update_parameters_name`` gave it): a
#: renamed parameter keeps that name wherever it is named from (MindSpore renames the
#: ``Parameter`` object itself), e.g. a GAN's ``optim_g.``-prefixed checkpoint names.
_RENAMED: dict[int, tuple[weakref.ref, str]] = {}


def rename_parameter(param: torch.Tensor, name: str) -> None:
    """Give ``param`` the MindSpore name ``name`` for good: later ``trainable_params()``,
    ``parameters_dict()`` and checkpoints of any cell holding it use it (MindSpore's
    ``update_parameters_name``, which renames the ``Parameter`` itself)."""
    _remember(param, name, _RENAMED)
    _remember(param, name)


def _renamed(tensor: torch.Tensor, name: str) -> str:
    entry = _RENAMED.get(id(tensor))
    return entry[1] if entry is not None and entry[0]() is tensor else name


def parameter_name(param: torch.Tensor) -> str | None:
    """The MindSpore name recorded for ``param`` by a Cell's ``trainable_params`` /
    ``parameters_and_names`` or by ``jisu.Parameter(..., name=...)`` (None if none was)."""
    entry = _NAMES.get(id(param))
    return entry[1] if entry is not None and entry[0]() is param else None


def _remember(tensor: torch.Tensor, name: str, table: dict | None = None) -> None:
    names = _NAMES if table is None else table
    key = id(tensor)
    entry = names.get(key)
    if entry is not None and entry[0]() is tensor:
        names[key] = (entry[0], name)
        return

    def forget(ref: weakref.ref, key: int = key) -> None:
        if names.get(key, (None,))[0] is ref:
            del names[key]

    names[key] = (weakref.ref(tensor, forget), name)
