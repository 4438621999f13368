"""The two names of MindSpore's C++ extension (``mindspore._c_expression``) model-zoo code
imports: ``MSContext.get_instance()`` (its device queries: ``get_ascend_soc_version()`` is
"" without an Ascend device, ``get_param``/``set_param`` read and write a dict) and
``init_exec_dataset``, which is refused by name (it builds MindSpore's device data queue)."""

from __future__ import annotations

from typing import Any

from ._unprovided import refused_function

__all__ = ["MSContext", "init_exec_dataset"]


class MSContext:
    """The process-wide context object of MindSpore's C++ side, reduced to what scripts ask."""

    _instance: MSContext | None = None

    def __init__(self) -> None:
        self._params: dict[Any, Any] = {}

    @classmethod
    def get_instance(cls) -> MSContext:
        """The one context."""
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def get_ascend_soc_version(self) -> str:
        """The Ascend chip's name ("ascend910b" ...): "" here, as jisu runs on torch's devices
        (an NPU through ``torch_npu`` does not report a CANN SoC name)."""
        return ""

    def get_param(self, key: Any) -> Any:
        """A value set with :meth:`set_param` (None if none was)."""
        return self._params.get(key)

    def set_param(self, key: Any, value: Any) -> None:
        """Record ``value`` under ``key``."""
        self._params[key] = value


init_exec_dataset = refused_function(
    "_c_expression.init_exec_dataset",
    "it creates MindSpore's device-side data queue for its graph-mode sink; jisu's sink mode "
    "feeds batches from Python (jisu.train.DatasetHelper, Model.train(dataset_sink_mode=True))",
)
