"""The settings MindSpore's ``Cell`` carries beside its computation, on jisu's :class:`Cell`.

The model zoo calls them on its networks: ``add_flags``/``add_flags_recursive`` (custom
attributes, and ``fp16=True``/``bf16=True``/``fp32=True``, which set the cell's mixed precision
as ``to_float`` does), ``init_parameters_data`` (MindSpore's delayed initialisation; jisu's
parameters are made initialised, so every parameter maps to itself), ``recompute`` (activation
checkpointing: the cell's activations are recomputed in the backward pass instead of kept,
with ``torch.utils.checkpoint``), and the parallel and graph settings that change nothing on
a data-parallel torch run (``shard``, ``set_comm_fusion``, ``set_inputs``, ``set_jit_config``,
``set_broadcast_flag``: recorded, so that reading them back gives what was set).
``set_param_ps`` (parameter-server training) is refused with the reason.
"""

from __future__ import annotations

from typing import Any

import torch

#: the mixed-precision flags of ``add_flags`` and the dtype each one sets
__all__ = ["CellSettings"]

_PRECISION_FLAGS = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


class CellSettings:
    """MindSpore's ``Cell`` settings (a mixin of :class:`jisu.nn.Cell`)."""

    #: whether ``forward`` recomputes this cell's activations in the backward pass
    _jisu_recompute = False

    def add_flags(self, **flags: Any) -> CellSettings:
        """Set custom attributes on this cell (MindSpore's ``add_flags``); ``fp16``,
        ``bf16`` or ``fp32`` set to True run the cell in that dtype (see ``to_float``)."""
        self.get_flags().update(flags)
        for name, value in flags.items():
            setattr(self, name, value)
        for name, dtype in _PRECISION_FLAGS.items():
            if flags.get(name) is True:
                self.to_float(dtype)  # type: ignore[attr-defined]
        return self

    def add_flags_recursive(self, **flags: Any) -> CellSettings:
        """``add_flags`` on this cell and every cell below it."""
        for _, cell in self.cells_and_names():  # type: ignore[attr-defined]
            if isinstance(cell, CellSettings):
                CellSettings.add_flags(cell, **flags)
        return self

    def get_flags(self) -> dict[str, Any]:
        """The attributes ``add_flags`` set, by name."""
        flags = self.__dict__.get("_func_graph_flags")
        if flags is None:
            flags = self.__dict__["_func_graph_flags"] = {}
        return flags

    def init_parameters_data(self, auto_parallel_mode: bool = False) -> dict:
        """MindSpore initialises parameters lazily and swaps them in here; jisu's parameters
        are initialised when made, so each maps to itself: ``{param: param}``."""
        return {p: p for p in self.get_parameters()}  # type: ignore[attr-defined]

    def recompute(self, **kwargs: Any) -> CellSettings:
        """Recompute this cell's activations in the backward pass instead of keeping them
        (``torch.utils.checkpoint``): less memory for one more forward pass of the cell. The
        keyword arguments (``mp_comm_recompute``, ``parallel_optimizer_comm_recompute``)
        concern model parallelism and are recorded only."""
        unknown = set(kwargs) - {"mp_comm_recompute", "parallel_optimizer_comm_recompute"}
        if unknown:
            raise TypeError(f"{type(self).__name__}.recompute: unknown arguments {sorted(unknown)}")
        self._jisu_recompute = True
        self.__dict__["_recompute_settings"] = dict(kwargs)
        return self

    def _run_recomputed(self, *inputs: Any, **kwargs: Any) -> Any:
        from torch.utils.checkpoint import checkpoint

        return checkpoint(self.construct, *inputs, use_reentrant=False, **kwargs)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ recorded settings
    def shard(self, in_strategy: Any, out_strategy: Any = None, **kwargs: Any) -> CellSettings:
        """Operator-level sharding strategies (auto parallel): recorded; jisu trains data
        parallel, where a strategy changes nothing."""
        self.__dict__["_shard_settings"] = {"in_strategy": in_strategy,
                                            "out_strategy": out_strategy, **kwargs}  # fmt: skip
        return self

    def set_comm_fusion(self, fusion_type: int, recurse: bool = True) -> None:
        """The fusion group of the parameters' gradient all-reduce: recorded (torch's DDP
        buckets the all-reduce itself)."""
        if not isinstance(fusion_type, int) or isinstance(fusion_type, bool) or fusion_type < 0:
            raise TypeError(
                f"{type(self).__name__}.set_comm_fusion: fusion_type must be a non-negative "
                f"int. Received {fusion_type!r}"
            )
        for param in self.get_parameters(expand=recurse):  # type: ignore[attr-defined]
            param.comm_fusion = fusion_type

    def set_inputs(self, *inputs: Any) -> None:
        """The dynamic-shape inputs of graph compilation: recorded for ``get_inputs``."""
        self.__dict__["_dynamic_shape_inputs"] = inputs

    def get_inputs(self) -> Any:
        """What ``set_inputs`` recorded (None when nothing was)."""
        return self.__dict__.get("_dynamic_shape_inputs")

    def set_jit_config(self, jit_config: Any) -> None:
        """Graph compilation options: recorded (``jisu.jit`` decides compilation)."""
        self.__dict__["_jit_config"] = jit_config

    def set_broadcast_flag(self, mode: bool = True) -> CellSettings:
        """Parameter broadcast in graph mode: recorded (torch's DDP broadcasts at wrap)."""
        self.__dict__["_broadcast_flag"] = mode
        return self

    def set_param_ps(self, recurse: bool = True, init_in_server: bool = False) -> None:
        raise RuntimeError(
            f"{type(self).__name__}.set_param_ps: parameter-server training is not provided by "
            "jisu (it trains data parallel under torchrun); leave the parameters on the workers"
        )
