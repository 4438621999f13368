"""MindSpore's ``mindspore.parallel`` as far as data parallelism goes: ``ParallelMode``,
``set_algo_parameters`` (recorded, no effect: jisu has no strategy search) and the private
modules train cells import (``_utils``, ``_auto_parallel_context``)."""

from __future__ import annotations

from typing import Any

from ..context import ParallelMode
from . import _auto_parallel_context, _utils  # noqa: F401 (MindSpore's paths)

#: MindSpore's strategy-search settings and their defaults
_ALGO_DEFAULTS = {
    "fully_use_devices": True,
    "elementwise_op_strategy_follow": False,
    "enable_algo_approxi": False,
    "algo_approxi_epsilon": 0.1,
    "tensor_slice_align_enable": False,
    "tensor_slice_align_size": 16,
}
_algo: dict[str, Any] = dict(_ALGO_DEFAULTS)


def set_algo_parameters(**kwargs: Any) -> None:
    """Record MindSpore's strategy-search settings (``fully_use_devices``, ...): accepted so
    that scripts run; no effect (jisu runs data parallel, without a strategy search).

    Raises:
        ValueError: a name MindSpore does not know.
    """
    unknown = sorted(set(kwargs) - set(_ALGO_DEFAULTS))
    if unknown:
        raise ValueError(
            f"set_algo_parameters: unknown argument(s) {unknown}; known: {sorted(_ALGO_DEFAULTS)}"
        )
    _algo.update(kwargs)


def get_algo_parameters(attr_key: str) -> Any:
    """A setting recorded by :func:`set_algo_parameters` (or its default)."""
    if attr_key not in _algo:
        raise ValueError(f"get_algo_parameters: unknown key {attr_key!r}")
    return _algo[attr_key]


def reset_algo_parameters() -> None:
    """Back to MindSpore's defaults."""
    _algo.clear()
    _algo.update(_ALGO_DEFAULTS)


__all__ = ["ParallelMode", "get_algo_parameters", "reset_algo_parameters", "set_algo_parameters"]
