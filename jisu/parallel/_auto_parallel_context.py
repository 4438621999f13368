"""MindSpore's ``mindspore.parallel._auto_parallel_context``: ``auto_parallel_context()``, the
object whose getters train cells and scripts of the model zoo read (``get_device_num_is_set``,
``get_parallel_mode``, ``get_pipeline_stages``, ...), over jisu's context
(:func:`jisu.context.get_auto_parallel_context`) and ``torch.distributed``.

jisu runs data parallel under ``torchrun``; the settings of model and pipeline parallelism
read as MindSpore's defaults (one stage, no optimizer sharding), and the fusion settings of
MindSpore's all-reduce are recorded and have no effect.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch.distributed as dist

from .. import context


def _setting(key: str, default: Any) -> Any:
    try:
        return context.get_auto_parallel_context(key)
    except ValueError:  # a setting jisu's context does not hold: MindSpore's default
        return default


def world_size() -> int:
    """The processes of the ``torchrun`` job (1 without one)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class _AutoParallelContext:
    """The getters (and a few recording setters) of MindSpore's auto-parallel context."""

    def __init__(self) -> None:
        self._recorded: dict[str, Any] = {}

    def get_parallel_mode(self) -> str:
        """``ParallelMode.STAND_ALONE`` or ``DATA_PARALLEL`` (jisu's context)."""
        return _setting("parallel_mode", context.ParallelMode.STAND_ALONE)

    def get_gradients_mean(self) -> bool:
        """Whether the gradients are averaged (not summed) across the processes."""
        return bool(_setting("gradients_mean", False))

    def get_device_num_is_set(self) -> bool:
        """Whether ``device_num`` was set (to other than its default, 1)."""
        return _setting("device_num", 1) != 1

    def get_device_num(self) -> int:
        """``device_num`` if set, else the processes of the job. A ``device_num`` other than
        the job's size is MindSpore's divisor of the mean all the same; it warns once (a zoo
        script's ``config.device_num`` left at 8 on a 2-process test run)."""
        if not self.get_device_num_is_set():
            return world_size()
        num = int(_setting("device_num", 1))
        world = world_size()
        if world > 1 and num != world and not self._recorded.get("warned_device_num"):
            self._recorded["warned_device_num"] = True
            warnings.warn(
                f"set_auto_parallel_context: device_num={num}, but the torchrun job has {world} "
                f"processes: a DistributedGradReducer averages over {num} (MindSpore's rule), "
                f"Model over {world}; set device_num=get_group_size()",
                stacklevel=3,
            )
        return num

    def get_global_rank(self) -> int:
        """This process's rank in the job (0 without one)."""
        return dist.get_rank() if world_size() > 1 else int(_setting("global_rank", 0))

    def get_global_rank_is_set(self) -> bool:
        """Whether ``global_rank`` was set (to other than 0)."""
        return _setting("global_rank", 0) != 0

    def get_parameter_broadcast(self) -> bool:
        return bool(_setting("parameter_broadcast", False))

    def get_pipeline_stages(self) -> int:
        """1: jisu has no pipeline parallelism."""
        return 1

    def get_enable_parallel_optimizer(self) -> bool:
        """False: jisu does not shard the optimizer."""
        return bool(_setting("enable_parallel_optimizer", False))

    def get_loss_repeated_mean(self) -> bool:
        return bool(self._recorded.get("loss_repeated_mean", True))

    def get_full_batch(self) -> bool:
        return bool(_setting("full_batch", False))

    def get_grad_accumulation_step(self) -> int:
        return int(self._recorded.get("grad_accumulation_step", 1))

    def get_strategy_ckpt_load_file(self) -> str:
        return ""

    def get_strategy_ckpt_save_file(self) -> str:
        return ""

    def get_search_mode(self) -> str:
        return str(self._recorded.get("search_mode", "dynamic_programming"))

    def get_sharding_propagation(self) -> bool:
        return False

    def set_all_reduce_fusion_split_indices(self, indices: Any, group: str = "") -> None:
        """Record MindSpore's all-reduce fusion split (no effect: torch fuses by buckets)."""
        self._recorded["all_reduce_fusion_split_indices"] = list(indices)

    def get_all_reduce_fusion_split_indices(self, group: str = "") -> list:
        return list(self._recorded.get("all_reduce_fusion_split_indices", []))

    def set_all_reduce_fusion_split_sizes(self, sizes: Any, group: str = "") -> None:
        """Record MindSpore's all-reduce fusion sizes (no effect)."""
        self._recorded["all_reduce_fusion_split_sizes"] = list(sizes)

    def get_all_reduce_fusion_split_sizes(self, group: str = "") -> list:
        return list(self._recorded.get("all_reduce_fusion_split_sizes", []))

    def set_loss_repeated_mean(self, value: bool) -> None:
        self._recorded["loss_repeated_mean"] = bool(value)

    def set_grad_accumulation_step(self, value: int) -> None:
        self._recorded["grad_accumulation_step"] = int(value)

    def reset(self) -> None:
        """Forget what the setters recorded."""
        self._recorded.clear()


_CONTEXT = _AutoParallelContext()


def auto_parallel_context() -> _AutoParallelContext:
    """The process's auto-parallel context object (one per process, as MindSpore's)."""
    return _CONTEXT


__all__ = ["auto_parallel_context"]
