"""Execution context: graph or eager mode, and the device (MindSpore's ``set_context``).

``set_context(mode=GRAPH_MODE)`` makes :class:`jisu.Model` compile its train step with
``torch.compile`` when the run pays the compile back (``graph_compile="auto"``, see
:mod:`jisu.train.graph_policy`; "always" compiles from the first step); ``PYNATIVE_MODE`` (the
default) runs eagerly. ``device_target`` is "CPU",
"GPU" (CUDA) or "Ascend" (an NPU through ``torch_npu``; MindSpore's alias "Davinci" too);
:class:`jisu.Model` and the datasets' device feed put the network and batches there.

Asking for a device that is not there is an error here, not at the first step, as in
MindSpore ("Unsupported device target GPU"): falling back to the CPU silently would hide a
broken CUDA install behind a run tens of times slower. Because every model-zoo config names
"GPU" or "Ascend", the environment variable ``JISU_DEVICE_TARGET=CPU`` (or ``GPU``,
``Ascend``) runs a ported script unchanged on another device: it replaces whatever
``device_target`` the script sets (with one warning saying so) and is the answer of
``get_context("device_target")``. With neither, ``get_context("device_target")`` answers as
MindSpore answers with its package's device: "GPU" where this torch sees a CUDA device,
"CPU" otherwise (the zoo reads it, e.g. ``if get_context("device_target") == "GPU"``);
:class:`jisu.Model` then leaves the network where its parameters are (under ``torchrun``
with CUDA: the rank's GPU).
"""

from __future__ import annotations

import copy
import importlib.util
import os
import warnings
from typing import Any, ClassVar

import torch

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_TARGETS = ("CPU", "GPU", "Ascend")
#: MindSpore's other name for Ascend
_ALIASES = {"Davinci": "Ascend"}
#: the environment variable that replaces the device_target a script sets (see the module)
ENV_DEVICE_TARGET = "JISU_DEVICE_TARGET"
_TORCH_TYPES = {"CPU": "cpu", "GPU": "cuda", "Ascend": "npu"}
_forced_warned: list[str] = []  # the replaced target already warned about in this process
_context: dict[str, Any] = {
    "mode": PYNATIVE_MODE,
    "device_target": None,  # None: wherever the network's parameters are
    "device_id": 0,
    "enable_graph_kernel": False,
    # how sink mode runs the train step on CUDA: captured once as a CUDA graph and replayed
    # (jisu.train.capture), through torch.compile(mode="reduce-overhead"), or launched per step
    "sink_capture": "cuda_graph",
    # GRAPH_MODE's train step: compiled when the run pays the compile back ("auto", see
    # jisu.train.graph_policy) or from the first step ("always")
    "graph_compile": "auto",
}
SINK_CAPTURES = ("cuda_graph", "reduce-overhead", "off")
GRAPH_COMPILES = ("auto", "always")
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
    "Ascend"; a missing device is a ``RuntimeError`` saying what to do, and
    ``JISU_DEVICE_TARGET`` replaces it: see the module), ``device_id`` (0-4095, checked
    against the visible devices) and ``enable_graph_kernel`` (GRAPH_MODE compiles with
    ``mode="max-autotune"`` when True), ``sink_capture`` (how sink mode runs the train step on
    CUDA: "cuda_graph", the default, captures the whole step once and replays it per batch;
    "reduce-overhead" compiles the forward and backward with ``torch.compile(mode=
    "reduce-overhead")``, whose CUDA graphs leave the optimizer step eager; "off" launches
    every kernel from Python; see :mod:`jisu.train.capture`), ``graph_compile`` (GRAPH_MODE's
    train step: "auto", the default, runs the first steps eagerly, measured, and compiles only
    when the run is long enough to pay the compile back, keeping the compiled step only when it
    is measured faster, see :mod:`jisu.train.graph_policy`; "always" compiles at the first
    step). MindSpore's compiler, log and
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
    if update["graph_compile"] not in GRAPH_COMPILES:
        raise ValueError(
            f"set_context: graph_compile must be one of {GRAPH_COMPILES}. "
            f"Received graph_compile={update['graph_compile']!r}"
        )
    if update["sink_capture"] not in SINK_CAPTURES:
        raise ValueError(
            f"set_context: sink_capture must be one of {SINK_CAPTURES}. "
            f"Received sink_capture={update['sink_capture']!r}"
        )
    device_id = update["device_id"]
    if (
        isinstance(device_id, bool)
        or not isinstance(device_id, int)
        or not 0 <= device_id <= _MAX_DEVICE_ID
    ):
        raise ValueError(
            f"set_context: device_id must be an int in [0, {_MAX_DEVICE_ID}]. Received "
            f"{device_id!r}"
        )
    target = update["device_target"]
    if target is not None:
        target = _ALIASES.get(target, target) if isinstance(target, str) else target
        if target not in _TARGETS:
            raise ValueError(
                f"set_context: device_target must be one of {_TARGETS}. Received {target!r}"
            )
        forced = _env_target()
        if "device_target" in kwargs and forced is not None and forced != target:
            _warn_forced(target, forced)
            target = forced
        _check_device(target, device_id)
        update["device_target"] = target
    _context.update(update)


def set_device(device_target: str, device_id: int | None = None) -> None:
    """MindSpore 2.5's ``set_device``: ``set_context(device_target=..., device_id=...)``
    (``device_id`` None: 0); ``JISU_DEVICE_TARGET`` replaces the target here too."""
    if device_target not in _TARGETS:  # MindSpore's set_device takes no "Davinci"
        raise ValueError(
            f"set_device: device_target must be one of {_TARGETS}. Received {device_target!r}"
        )
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
    """One setting of :func:`set_context`. ``"device_target"`` is always a name: the one set,
    else ``JISU_DEVICE_TARGET``, else the default device: "GPU" where this torch sees a CUDA
    device (or ``torch.set_default_device`` chose one), "CPU" otherwise, as MindSpore answers
    its package's device."""
    if key not in _context:
        raise ValueError(f"get_context: unknown key {key!r}; known: {sorted(_context)}")
    if key == "device_target" and _context[key] is None:
        return _env_target() or _default_target()
    return _context[key]


def stored_settings(*keys: str) -> dict[str, Any]:
    """The settings as stored, for ``set_context(**saved)`` to restore them: unlike
    :func:`get_context`, an unset ``device_target`` is None (restoring it leaves it unset)."""
    unknown = set(keys) - set(_context)
    if unknown:
        raise ValueError(f"stored_settings: unknown key(s) {sorted(unknown)}")
    return {key: _context[key] for key in keys}


_MAX_DEVICE_ID = 4095  # MindSpore's range for device_id
_OTHER_WAYS = (
    "set device_target='CPU' (the script's --device_target or its config's device_target; "
    "`jisu port --device CPU` rewrites a project's defaults), or run the script unchanged on "
    f"the CPU with {ENV_DEVICE_TARGET}=CPU"
)


def _env_target() -> str | None:
    """``JISU_DEVICE_TARGET`` as a target name (any case), or None when unset."""
    value = os.environ.get(ENV_DEVICE_TARGET, "").strip()
    if not value:
        return None
    names = {t.lower(): t for t in (*_TARGETS, *_ALIASES)}
    if value.lower() not in names:
        raise ValueError(
            f"{ENV_DEVICE_TARGET} must be one of {_TARGETS} (any case). Received {value!r}"
        )
    name = names[value.lower()]
    return _ALIASES.get(name, name)


def _default_target() -> str:
    kind = torch.get_default_device().type
    if kind == "cpu" and torch.cuda.is_available():
        kind = "cuda"
    return next((t for t, k in _TORCH_TYPES.items() if k == kind), "CPU")


def _warn_forced(target: str, forced: str) -> None:
    """One warning per process that the environment replaced the script's target."""
    if _forced_warned:
        return
    _forced_warned.append(target)
    warnings.warn(
        f"set_context: device_target={target!r} replaced by {ENV_DEVICE_TARGET}={forced} "
        "(unset it to use the script's device)",
        stacklevel=3,
    )


def no_cuda_reason() -> str:
    """Why this torch has no CUDA device, in a few words (for messages)."""
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        return "this torch has no CUDA device (it is a CPU-only build)"
    return "this torch has no CUDA device (a CUDA build, but no GPU visible or no driver)"


def _check_device(target: str, device_id: int) -> None:
    if target == "GPU":
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"set_context: device_target='GPU' but {no_cuda_reason()}: install a CUDA "
                f"build of torch (https://pytorch.org/get-started/locally/), or {_OTHER_WAYS}"
            )
        if device_id >= torch.cuda.device_count():
            raise RuntimeError(
                f"set_context: device_id={device_id} but only {torch.cuda.device_count()} "
                "CUDA device(s) are visible (CUDA_VISIBLE_DEVICES counts from 0)"
            )
    if target == "Ascend":
        if importlib.util.find_spec("torch_npu") is None:
            raise RuntimeError(
                "set_context: device_target='Ascend' needs the torch_npu package (pip install "
                "torch-npu matching your torch and CANN versions); without an NPU, "
                + _OTHER_WAYS.replace("'CPU'", "'GPU' or 'CPU'", 1)
            )
        import torch_npu  # noqa: F401  (registers the "npu" device)

        if not torch.npu.is_available():  # type: ignore[attr-defined]
            raise RuntimeError(
                f"set_context: device_target='Ascend' but torch_npu sees no NPU; {_OTHER_WAYS}"
            )
        if device_id >= torch.npu.device_count():  # type: ignore[attr-defined]
            raise RuntimeError(
                f"set_context: device_id={device_id} but only "
                f"{torch.npu.device_count()} NPU(s) are visible"  # type: ignore[attr-defined]
            )


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
    "gradients_mean": False,  # MindSpore's default: the ranks' gradients are summed
    "device_num": 1,
    "global_rank": 0,
    "parameter_broadcast": False,
}
#: MindSpore's other settings, set since the last reset (see _AUTO_PARALLEL_DEFAULTS)
_auto_parallel_set: dict[str, Any] = {}
_AUTO_PARALLEL_BOOLS = (
    "gradients_mean", "parameter_broadcast", "full_batch", "gradient_fp32_sync",
    "loss_repeated_mean", "enable_parallel_optimizer", "enable_alltoall",
    "optimizer_weight_shard_aggregated_save", "sharding_propagation",
)  # fmt: skip
_AUTO_PARALLEL_INTS = {
    "device_num": (1, 4096),
    "global_rank": (0, 4095),
    "pipeline_stages": (1, None),
    "grad_accumulation_step": (1, None),
}


def set_auto_parallel_context(**kwargs: Any) -> None:
    """MindSpore's parallel settings. jisu runs ``STAND_ALONE`` and ``DATA_PARALLEL`` (under
    ``torchrun``; ``Model`` joins the job and wraps the network in DistributedDataParallel):
    ``gradients_mean`` (MindSpore's default False: the ranks' gradients are summed; True:
    averaged), ``device_num`` (the divisor of the mean), ``global_rank``,
    ``parameter_broadcast`` (DistributedDataParallel always starts every rank from rank 0's
    weights). MindSpore's other settings (``all_reduce_fusion_config``, ``full_batch``,
    ``strategy_ckpt_save_file``, ``pipeline_stages``, ``enable_parallel_optimizer`` ...) are
    checked, recorded for :func:`get_auto_parallel_context`, and have no effect: they tune
    MindSpore's fusion, or apply to its other parallel modes.

    Raises:
        ValueError: an unknown keyword; ``parallel_mode`` other than the two; an int out of
            MindSpore's range (``device_num`` in [1, 4096], ``global_rank`` in [0, 4095]).
        TypeError: a bool setting that is not a bool; ``all_reduce_fusion_config`` not a list.
    """
    unknown = set(kwargs) - set(_auto_parallel) - set(_AUTO_PARALLEL_DEFAULTS)
    if unknown:
        raise ValueError(
            f"set_auto_parallel_context: unknown argument(s) {sorted(unknown)}; known: "
            f"{sorted({*_auto_parallel, *_AUTO_PARALLEL_DEFAULTS})}"
        )
    mode = kwargs.get("parallel_mode", _auto_parallel["parallel_mode"])
    if mode not in (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL):
        raise ValueError(
            f"set_auto_parallel_context: parallel_mode {mode!r} is not provided; jisu runs "
            "data parallel (ParallelMode.DATA_PARALLEL) under torchrun"
        )
    for key in _AUTO_PARALLEL_BOOLS:
        if key in kwargs and not isinstance(kwargs[key], bool):
            raise TypeError(
                f"set_auto_parallel_context: {key} must be a bool. Received: {key}={kwargs[key]!r}"
            )
    for key, (low, high) in _AUTO_PARALLEL_INTS.items():
        value = kwargs.get(key, low)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"set_auto_parallel_context: {key} must be an int. Received: {value!r}")
        if value < low or (high is not None and value > high):
            raise ValueError(
                f"set_auto_parallel_context: {key} must be in [{low}, {high or 'inf'}]. "
                f"Received: {key}={value}"
            )
    fusion = kwargs.get("all_reduce_fusion_config", [])
    if not isinstance(fusion, list) or not all(isinstance(i, int) for i in fusion):
        raise TypeError(
            "set_auto_parallel_context: all_reduce_fusion_config must be a list of ints. "
            f"Received: {fusion!r}"
        )
    for key, value in kwargs.items():
        if key in _auto_parallel:
            _auto_parallel[key] = value
        else:
            _auto_parallel_set[key] = copy.deepcopy(value)


#: MindSpore 2.0.0's answers to get_auto_parallel_context for the settings of its other
#: parallel modes and of its all-reduce fusion, which data parallelism on torch leaves
#: without effect (the zoo's models set and read them, e.g. ResNet's
#: all_reduce_fusion_config, Wide&Deep's full_batch)
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
    "comm_fusion": None,
    "parallel_optimizer_config": None,
}


def get_auto_parallel_context(key: str) -> Any:
    """One auto-parallel setting, as set, or MindSpore's default."""
    if key in _auto_parallel:
        return _auto_parallel[key]
    if key in _auto_parallel_set:
        return copy.deepcopy(_auto_parallel_set[key])
    if key in _AUTO_PARALLEL_DEFAULTS:
        return copy.deepcopy(_AUTO_PARALLEL_DEFAULTS[key])
    raise ValueError(f"get_auto_parallel_context: unknown key {key!r}")


def reset_auto_parallel_context() -> None:
    """Every auto-parallel setting back to MindSpore's default."""
    _auto_parallel_set.clear()
    set_auto_parallel_context(
        parallel_mode=ParallelMode.STAND_ALONE, gradients_mean=False, device_num=1,
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
    """The device set by ``device_target`` (else by ``JISU_DEVICE_TARGET``, checked as
    ``set_context`` checks it), or None when neither is set."""
    target, device_id = _context["device_target"], _context["device_id"]
    if target is None:
        target = _env_target()
        if target is None:
            return None
        _check_device(target, device_id)
    if target == "CPU":
        return torch.device("cpu")
    return torch.device(f"{_TORCH_TYPES[target]}:{device_id}")


def graph_mode() -> bool:
    return _context["mode"] == GRAPH_MODE
