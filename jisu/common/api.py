"""MindSpore's ``mindspore.common.api`` path: ``jit`` and ``ms_function`` (jisu's
``torch.compile`` decorator, :mod:`jisu._jit`), ``JitConfig``, ``mutable``, the PyNative
executor's ``sync`` and the ``cells_compile_cache`` table some model-zoo cells write to."""

from __future__ import annotations

from typing import Any

import torch

from .._jit import jit, ms_function

__all__ = ["JitConfig", "cells_compile_cache", "jit", "ms_function", "mutable"]

#: MindSpore keeps compiled cells here by ``id``; jisu compiles through ``torch.compile``, which
#: keeps its own cache, so entries written here are kept and never read.
cells_compile_cache: dict[int, Any] = {}


class JitConfig:
    """MindSpore's compile options for ``jit``/``Model``/``data_sink`` (``jit_level``,
    ``exc_mode``, ...), kept in ``jit_config_dict``. They name MindSpore's graph compiler's
    levels, so jisu records them and compiles with ``torch.compile`` as always."""

    def __init__(self, jit_level: str = "", exc_mode: str = "auto", jit_syntax_level: str = "",
                 debug_level: str = "RELEASE", infer_boost: str = "off",
                 **kwargs: Any) -> None:  # fmt: skip
        for name, value in (("jit_level", jit_level), ("exc_mode", exc_mode)):
            if not isinstance(value, str):
                raise TypeError(f"JitConfig: {name} must be a str. Received: {name}={value!r}")
        self.jit_config_dict = {
            "jit_level": jit_level,
            "exc_mode": exc_mode,
            "jit_syntax_level": jit_syntax_level,
            "debug_level": debug_level,
            "infer_boost": infer_boost,
            **kwargs,
        }


def mutable(input_data: Any, dynamic_len: bool = False) -> Any:
    """``input_data`` itself: MindSpore marks a constant as variable so that its graph is not
    recompiled when the value changes; ``torch.compile`` guards on tensors already."""
    if not isinstance(dynamic_len, bool):
        raise TypeError(
            f"mutable: dynamic_len must be a bool. Received: dynamic_len={dynamic_len!r}"
        )
    return input_data


class _PynativeExecutor:
    """The part of MindSpore's PyNative executor model-zoo code calls: ``sync()``."""

    @staticmethod
    def sync() -> None:
        """Wait for the device's queued work (``torch.cuda.synchronize`` on CUDA; nothing to wait
        for on the CPU). A host-device synchronisation, as MindSpore's."""
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()


_pynative_executor = _PynativeExecutor()
