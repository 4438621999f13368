"""MindSpore's ``parallel._cost_model_context``: the settings of its auto-parallel cost model
(``set_cost_model_context(device_memory_capacity=..., costmodel_gamma=...)``,
``_set_multi_subgraphs``, ``_set_algo_single_loop``). jisu has no auto-parallel search, so they
are recorded, read back, and have no effect."""

from __future__ import annotations

from typing import Any

__all__ = [
    "_get_algo_single_loop",
    "_get_multi_subgraphs",
    "_set_algo_single_loop",
    "_set_multi_subgraphs",
    "get_cost_model_context",
    "reset_cost_model_context",
    "set_cost_model_context",
]

_SETTINGS: dict[str, Any] = {}


def set_cost_model_context(**kwargs: Any) -> None:
    """Record cost-model settings by name (no effect)."""
    _SETTINGS.update(kwargs)


def get_cost_model_context(attr_key: str) -> Any:
    """A recorded setting (``ValueError`` for one never set)."""
    if attr_key not in _SETTINGS:
        raise ValueError(f"get_cost_model_context: {attr_key!r} was not set")
    return _SETTINGS[attr_key]


def reset_cost_model_context() -> None:
    """Forget every recorded setting."""
    _SETTINGS.clear()


def _set_multi_subgraphs(multi_subgraph: bool = True) -> None:
    """Record MindSpore's multi-subgraph switch (no effect)."""
    _SETTINGS["multi_subgraphs"] = bool(multi_subgraph)


def _get_multi_subgraphs() -> bool:
    return _SETTINGS.get("multi_subgraphs", False)


def _set_algo_single_loop(single_loop: bool = True) -> None:
    """Record MindSpore's single-loop switch (no effect)."""
    _SETTINGS["algo_single_loop"] = bool(single_loop)


def _get_algo_single_loop() -> bool:
    return _SETTINGS.get("algo_single_loop", False)
