"""MindSpore's ``mindspore.parallel._utils`` helpers that train cells import
(``_get_device_num``, ``_get_gradients_mean``, ``_get_parallel_mode``, ...)."""

from __future__ import annotations

from ._auto_parallel_context import auto_parallel_context


def _get_parallel_mode() -> str:
    """The parallel mode of the context (``stand_alone`` or ``data_parallel``)."""
    return auto_parallel_context().get_parallel_mode()


def _get_gradients_mean() -> bool:
    """Whether gradients are averaged across the processes."""
    return auto_parallel_context().get_gradients_mean()


def _get_device_num() -> int:
    """MindSpore's rule: 1 in ``stand_alone`` mode; else ``device_num`` if set, else the
    processes of the ``torchrun`` job (1 without one)."""
    if _get_parallel_mode() == "stand_alone":
        return 1
    return auto_parallel_context().get_device_num()


def _get_global_rank() -> int:
    """MindSpore's rule: 0 in ``stand_alone`` mode; else this process's rank in the job
    (``global_rank`` when set and no job runs)."""
    if _get_parallel_mode() == "stand_alone":
        return 0
    return auto_parallel_context().get_global_rank()


def _get_enable_parallel_optimizer() -> bool:
    """False: jisu does not shard the optimizer."""
    return auto_parallel_context().get_enable_parallel_optimizer()


def _get_pipeline_stages() -> int:
    """1: jisu has no pipeline parallelism."""
    return auto_parallel_context().get_pipeline_stages()


def _get_grad_accumulation_shard() -> bool:
    return False


def _is_sharding_propagation() -> bool:
    return False


def _is_pynative_parallel() -> bool:
    return False


def _is_in_auto_parallel_mode() -> bool:
    """False: jisu's parallelism is data parallel only."""
    return _get_parallel_mode() in ("semi_auto_parallel", "auto_parallel")


def _get_full_batch() -> bool:
    return auto_parallel_context().get_full_batch()
