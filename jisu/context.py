"""Execution context: graph or eager mode, and the device (MindSpore's ``set_context``).

``set_context(mode=GRAPH_MODE)`` makes :class:`jisu.Model` compile its train step with
``torch.compile``; ``PYNATIVE_MODE`` (the default) runs eagerly. ``device_target`` is "CPU",
"GPU" (CUDA) or "Ascend" (needs ``torch_npu``); asking for a device that is not there is an
error here, not at the first step.
"""

from __future__ import annotations

import copy
import importlib.util
from typing import Any, ClassVar

import torch

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_TARGETS = ("CPU", "GPU", "Ascend")
_context: dict[str, Any] = {
    "mode": PYNATIVE_MODE,
    "device_target": None,  # None: wherever the network's parameters are
    "device_id": 0,
    "enable_graph_kernel": False,
    # how sink mode runs the train step on CUDA: captured once as a CUDA graph and replayed
    # (jisu.train.capture), through torch.compile(mode="reduce-overhead"), or launched per step
    "sink_capture": "cuda_graph",
}
SINK_CAPTURES = ("cuda_graph", "reduce-overhead", "off")
#: MindSpore settings for its own graph compiler, logs and memory pool: accepted so that
#: scripts run unchanged, stored for get_context, no effect on jisu (torch manages memory)
_WITHOUT_EFFECT = {
    "save_graphs": False,
    "save_graphs_path": ".",
    "graph_kernel_flags": "",
    "max_call_depth": 1000,
    "reserve_class_name_in_scope": True,
    "max_device_memory": None,
    "pynative_synchronize": False,
    "enable_compile_cache": False,
    "compile_cache_path": None,
}
#: the rest of MindSpore 2.0's set_context keywords (and 2.x's jit ones), likewise accepted,
#: stored and without effect; unset they read None
_WITHOUT_EFFECT.update(dict.fromkeys("""
    ascend_config auto_tune_mode check_bprop debug_level deterministic disable_format_transform
    enable_auto_mixed_precision enable_dump enable_profiling enable_reduce_precision
    enable_sparse env_config_path grad_for_scalar inter_op_parallel_num jit_compile jit_level
    jit_syntax_level memory_offload memory_optimize_level mempool_block_size op_timeout
    precision_mode print_file_path profiling_options runtime_num_threads save_dump_path
    variable_memory_max_size
""".split()))  # noqa: SIM905  # fmt: skip
_context.update(_WITHOUT_EFFECT)


def set_context(**kwargs: Any) -> None:
    """Set ``mode`` (GRAPH_MODE or PYNATIVE_MODE), ``device_target`` ("CPU", "GPU",
    "Ascend"), ``device_id`` and ``enable_graph_kernel`` (GRAPH_MODE compiles with
    ``mode="max-autotune"`` when True), ``sink_capture`` (how sink mode runs the train step on
    CUDA: "cuda_graph", the default, captures the whole step once and replays it per batch;
    "reduce-overhead" compiles the forward and backward with ``torch.compile(mode=
    "reduce-overhead")``, whose CUDA graphs leave the optimizer step eager; "off" launches
    every kernel from Python; see :mod:`jisu.train.capture`). MindSpore's compiler, log and
    memory-pool settings (``save_graphs``, ``save_graphs_path``, ``graph_kernel_flags``,
    ``max_call_depth``, ``max_device_memory`` ...) are accepted and have no effect; any other
    name is an error, so that a typo does not pass silently."""
    unknown = set(kwargs) - set(_context)
    if unknown:
        raise ValueError(
            f"set_context: unknown argument(s) {sorted(unknown)}; known: {sorted(_context)}"
        )
    update = dict(_context, **kwargs)
    if update["mode"] not in (GRAPH_MODE, PYNATIVE_MODE):
        raise ValueError(
            f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1). "
            f"Received mode={update['mode']!r}"
        )
    if update["sink_capture"] not in SINK_CAPTURES:
        raise ValueError(
            f"set_context: sink_capture must be one of {SINK_CAPTURES}. "
            f"Received sink_capture={update['sink_capture']!r}"
        )
    device_id = update["device_id"]
    if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
        raise ValueError(f"set_context: device_id must be an int >= 0. Received {device_id!r}")
    target = update["device_target"]
    if target is not None:
        if target not in _TARGETS:
            raise ValueError(
                f"set_context: device_target must be one of {_TARGETS}. Received {target!r}"
            )
        _check_device(target, device_id)
    _context.update(update)


def set_device(device_target: str, device_id: int | None = None) -> None:
    """MindSpore 2.5's ``set_device``: ``set_context(device_target=..., device_id=...)``
    (``device_id`` None: 0)."""
    set_context(device_target=device_target, device_id=0 if device_id is None else device_id)


def set_recursion_limit(recursion_limit: int = 1000) -> None:
    """MindSpore's limit on nested calls when compiling a graph (``max_call_depth``):
    checked and recorded; torch.compile has no such limit, so it has no effect."""
    if isinstance(recursion_limit, bool) or not isinstance(recursion_limit, int):
        raise TypeError(
            f"set_recursion_limit: recursion_limit must be an int. Received {recursion_limit!r}"
        )
    if recursion_limit <= 0:
        raise ValueError(
            f"set_recursion_limit: recursion_limit must be > 0. Received {recursion_limit}"
        )
    set_context(max_call_depth=recursion_limit)


def get_context(key: str) -> Any:
    """One setting of :func:`set_context`."""
    if key not in _context:
        raise ValueError(f"get_context: unknown key {key!r}; known: {sorted(_context)}")
    return _context[key]


def _check_device(target: str, device_id: int) -> None:
    if target == "GPU":
        if not torch.cuda.is_available():
            raise RuntimeError(
                "set_context: device_target='GPU' but no CUDA device is available to this "
                "torch (CPU build, or no driver); use device_target='CPU'"
            )
        if device_id >= torch.cuda.device_count():
            raise RuntimeError(
                f"set_context: device_id={device_id} but only {torch.cuda.device_count()} "
                "CUDA device(s) are visible"
            )
    if target == "Ascend":
        if importlib.util.find_spec("torch_npu") is None:
            raise RuntimeError(
                "set_context: device_target='Ascend' needs the torch_npu package "
                "(pip install torch-npu matching your torch and CANN versions)"
            )
        import torch_npu  # noqa: F401  (registers the "npu" device)

        if not torch.npu.is_available():  # type: ignore[attr-defined]
            raise RuntimeError("set_context: device_target='Ascend' but no NPU is available")


class ParallelMode:
    """MindSpore's parallel modes. jisu runs data parallel under ``torchrun`` (one process per
    device, ``DistributedDataParallel``): ``STAND_ALONE`` and ``DATA_PARALLEL`` are that; the
    others (model and pipeline parallelism) are not provided."""

    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"
    MODE_LIST: ClassVar[list[str]] = [
        STAND_ALONE,
        DATA_PARALLEL,
        HYBRID_PARALLEL,
        SEMI_AUTO_PARALLEL,
        AUTO_PARALLEL,
    ]


_auto_parallel: dict[str, Any] = {
    "parallel_mode": ParallelMode.STAND_ALONE,
    "gradients_mean": True,
    "device_num": 1,
    "global_rank": 0,
    "parameter_broadcast": False,
}


def set_auto_parallel_context(**kwargs: Any) -> None:
    """MindSpore's data-parallel settings: ``parallel_mode`` (``ParallelMode.DATA_PARALLEL``
    or ``STAND_ALONE``), ``gradients_mean`` (True: gradients averaged across the ranks, as
    DistributedDataParallel does; False, summed, is not provided), ``device_num``,
    ``global_rank``, ``parameter_broadcast`` (rank 0's weights go to every rank at the start:
    DistributedDataParallel always does). ``Model`` joins the ``torchrun`` job and wraps the
    network by itself; these settings are checked against what it does."""
    unknown = set(kwargs) - set(_auto_parallel)
    if unknown:
        raise ValueError(
            f"set_auto_parallel_context: unknown or unsupported argument(s) {sorted(unknown)}; "
            f"supported: {sorted(_auto_parallel)}"
        )
    mode = kwargs.get("parallel_mode", _auto_parallel["parallel_mode"])
    if mode not in (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL):
        raise ValueError(
            f"set_auto_parallel_context: parallel_mode {mode!r} is not provided; jisu runs "
            "data parallel (ParallelMode.DATA_PARALLEL) under torchrun"
        )
    if kwargs.get("gradients_mean", True) is not True:
        raise ValueError(
            "set_auto_parallel_context: gradients_mean=False (summed gradients) is not "
            "provided; DistributedDataParallel averages them"
        )
    _auto_parallel.update(kwargs)


#: MindSpore 2.0.0's answers to get_auto_parallel_context for the settings of its other
#: parallel modes, which a single process or data parallelism leaves as they are (read-only
#: here: the zoo's models read them, e.g. Wide&Deep's full_batch)
_AUTO_PARALLEL_DEFAULTS: dict[str, Any] = {
    "gradient_fp32_sync": True,
    "loss_repeated_mean": True,
    "search_mode": "dynamic_programming",
    "auto_parallel_search_mode": "dynamic_programming",
    "strategy_ckpt_load_file": "",
    "strategy_ckpt_save_file": "",
    "full_batch": False,
    "dataset_strategy": "data_parallel",
    "enable_parallel_optimizer": False,
    "enable_alltoall": False,
    "all_reduce_fusion_config": [],
    "pipeline_stages": 1,
    "grad_accumulation_step": 1,
    "communi_parallel_mode": "all_group_parallel",
    "optimizer_weight_shard_size": -1,
    "optimizer_weight_shard_aggregated_save": False,
    "sharding_propagation": False,
}


def get_auto_parallel_context(key: str) -> Any:
    """One auto-parallel setting: those ``set_auto_parallel_context`` takes, or MindSpore's
    default of one of its other settings (``full_batch``, ``pipeline_stages`` ...)."""
    if key in _auto_parallel:
        return _auto_parallel[key]
    if key in _AUTO_PARALLEL_DEFAULTS:
        return copy.deepcopy(_AUTO_PARALLEL_DEFAULTS[key])
    raise ValueError(f"get_auto_parallel_context: unknown key {key!r}")


def reset_auto_parallel_context() -> None:
    set_auto_parallel_context(
        parallel_mode=ParallelMode.STAND_ALONE, gradients_mean=True, device_num=1,
        global_rank=0, parameter_broadcast=False,
    )  # fmt: skip


_ps_context: dict[str, Any] = {
    "enable_ps": False,
    "config_file_path": "",
    "scheduler_manage_port": 11202,
    "enable_ssl": False,
    "client_password": "",
    "server_password": "",
}


def set_ps_context(**kwargs: Any) -> None:
    """MindSpore's parameter-server settings, recorded for :func:`get_ps_context`.
    ``enable_ps=True`` is refused: jisu trains data parallel with all-reduce
    (``DistributedDataParallel`` under ``torchrun``), there is no parameter server; leave it
    False (MindSpore's default) and launch with torchrun."""
    unknown = set(kwargs) - set(_ps_context)
    if unknown:
        raise ValueError(
            f"set_ps_context: unknown argument(s) {sorted(unknown)}; known: {sorted(_ps_context)}"
        )
    if kwargs.get("enable_ps", False) is not False:
        raise ValueError(
            "set_ps_context: enable_ps=True (parameter server training) is not provided; jisu "
            "trains data parallel with all-reduce under torchrun: leave enable_ps False. "
            f"Received enable_ps={kwargs['enable_ps']!r}"
        )
    _ps_context.update(kwargs)


def get_ps_context(key: str) -> Any:
    """One setting of :func:`set_ps_context`."""
    if key not in _ps_context:
        raise ValueError(f"get_ps_context: unknown key {key!r}; known: {sorted(_ps_context)}")
    return _ps_context[key]


def context_device() -> torch.device | None:
    """The device set by ``device_target``, or None when none was set."""
    target, device_id = _context["device_target"], _context["device_id"]
    if target is None:
        return None
    return torch.device(
        {"CPU": "cpu", "GPU": f"cuda:{device_id}", "Ascend": f"npu:{device_id}"}[target]
    )


def graph_mode() -> bool:
    return _context["mode"] == GRAPH_MODE
