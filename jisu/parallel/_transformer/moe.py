"""MindSpore 2.0's ``parallel._transformer.moe``: ``MoEConfig`` (a validated record),
``default_moe_config``, ``_check_moe_config``; the mixture-of-experts layer ``MoE`` is refused
by name (its expert routing is built on MindSpore's all-to-all expert parallelism)."""

from __future__ import annotations

from typing import Any

from ... import _checkparam as Validator
from ..._unprovided import refused_class
from ...nn.cell import Cell

__all__ = ["MoE", "MoEConfig", "_check_moe_config", "default_moe_config"]


class MoEConfig:
    """The mixture-of-experts settings of MindSpore's transformer layers, validated as
    MindSpore does (``expert_num`` 1 means no MoE, the only setting jisu's layers run)."""

    def __init__(self, expert_num: int = 1, capacity_factor: float = 1.1,
                 aux_loss_factor: float = 0.05, num_experts_chosen: int = 1,
                 expert_group_size: int | None = None, group_wise_a2a: bool = False,
                 comp_comm_parallel: bool = False,
                 comp_comm_parallel_degree: int = 2) -> None:  # fmt: skip
        Validator.check_positive_int(expert_num, "expert_num")
        Validator.check_positive_float(capacity_factor, "capacity_factor")
        Validator.check_positive_float(aux_loss_factor, "aux_loss_factor")
        Validator.check_positive_int(num_experts_chosen, "num_experts_chosen")
        Validator.check_bool(group_wise_a2a, "group_wise_a2a")
        Validator.check_bool(comp_comm_parallel, "comp_comm_parallel")
        Validator.check_positive_int(comp_comm_parallel_degree, "comp_comm_parallel_degree")
        if expert_group_size is not None:
            Validator.check_positive_int(expert_group_size, "expert_group_size")
        if capacity_factor < 1.0:
            raise ValueError(f"MoEConfig: capacity_factor must be >= 1. Received {capacity_factor}")
        if aux_loss_factor >= 1.0:
            raise ValueError(f"MoEConfig: aux_loss_factor must be < 1. Received: {aux_loss_factor}")
        if num_experts_chosen > expert_num:
            raise ValueError(
                f"MoEConfig: num_experts_chosen ({num_experts_chosen}) must not exceed expert_num "
                f"({expert_num})"
            )
        self.expert_num, self.capacity_factor = expert_num, capacity_factor
        self.aux_loss_factor, self.num_experts_chosen = aux_loss_factor, num_experts_chosen
        self.expert_group_size, self.group_wise_a2a = expert_group_size, group_wise_a2a
        self.comp_comm_parallel = comp_comm_parallel
        self.comp_comm_parallel_degree = comp_comm_parallel_degree


default_moe_config = MoEConfig()


def _check_moe_config(moe_config: Any = None, parallel_config: Any = None) -> None:
    """``moe_config`` must be a :class:`MoEConfig`; with experts (``expert_num > 1``) their
    number must be a multiple of ``parallel_config.expert_parallel``."""
    if not isinstance(moe_config, MoEConfig):
        raise TypeError(
            f"moe_config must be an instance of MoEConfig. Received: {type(moe_config).__name__}"
        )
    if moe_config.expert_num > 1 and moe_config.expert_num % parallel_config.expert_parallel:
        raise ValueError(
            f"MoE: expert_num ({moe_config.expert_num}) must be a multiple of expert_parallel "
            f"({parallel_config.expert_parallel})"
        )


MoE = refused_class(
    "parallel._transformer.moe.MoE",
    "MindSpore's mixture-of-experts layer routes tokens with its expert-parallel all-to-all; "
    "use MoEConfig(expert_num=1) (a FeedForward) with jisu's transformer layers",
    base=Cell,
)
