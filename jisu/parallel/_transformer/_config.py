"""The transformer-level configs of MindSpore 2.0's ``parallel._transformer.transformer``
(``EmbeddingOpParallelConfig``, ``TransformerRecomputeConfig``, ``TransformerOpParallelConfig``
and their defaults), validated records as in :mod:`.op_parallel_config`, and
``_get_lambda_func``, MindSpore's per-layer pipeline/recompute settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .op_parallel_config import (
    MoEParallelConfig,
    OpParallelConfig,
    _Config,
    _PipeLineConfig,
    bool_property,
    delegated_property,
    positive_int_property,
)

__all__ = [
    "EmbeddingOpParallelConfig",
    "TransformerOpParallelConfig",
    "TransformerRecomputeConfig",
    "_get_lambda_func",
    "default_embedding_parallel_config",
    "default_transformer_config",
    "default_transformer_recompute_config",
]


class EmbeddingOpParallelConfig(_Config):
    """``data_parallel``, ``model_parallel`` (in ``dp_mp_config``) and ``vocab_emb_dp``."""

    data_parallel = delegated_property("_dp_mp_config", "data_parallel")
    model_parallel = delegated_property("_dp_mp_config", "model_parallel")
    vocab_emb_dp = bool_property("vocab_emb_dp")

    def __init__(self, data_parallel: int = 1, model_parallel: int = 1,
                 vocab_emb_dp: bool = True) -> None:  # fmt: skip
        self._dp_mp_config = OpParallelConfig(data_parallel, model_parallel)
        self.vocab_emb_dp = vocab_emb_dp

    @property
    def dp_mp_config(self) -> OpParallelConfig:
        """The data/model-parallel part."""
        return self._dp_mp_config


class TransformerRecomputeConfig(_Config):
    """MindSpore's recomputation switches (bools), recorded."""

    recompute = bool_property("recompute")
    parallel_optimizer_comm_recompute = bool_property("parallel_optimizer_comm_recompute")
    mp_comm_recompute = bool_property("mp_comm_recompute")
    recompute_slice_activation = bool_property("recompute_slice_activation")

    def __init__(self, recompute: bool = False, parallel_optimizer_comm_recompute: bool = False,
                 mp_comm_recompute: bool = True,
                 recompute_slice_activation: bool = False) -> None:  # fmt: skip
        self.recompute = recompute
        self.parallel_optimizer_comm_recompute = parallel_optimizer_comm_recompute
        self.mp_comm_recompute = mp_comm_recompute
        self.recompute_slice_activation = recompute_slice_activation


default_transformer_recompute_config = TransformerRecomputeConfig()


class TransformerOpParallelConfig(_Config):
    """The parallel settings of a whole transformer: data/model/expert-parallel degrees,
    pipeline stages and micro batches, recomputation, optimizer sharding, gradient aggregation
    groups, ``vocab_emb_dp``; ``dp_mp_config``, ``embedding_dp_mp_config`` and
    ``moe_parallel_config`` are its parts, as MindSpore's layers take them."""

    data_parallel = delegated_property("_embed_dp_mp_config", "data_parallel", "_moe_config")
    model_parallel = delegated_property("_embed_dp_mp_config", "model_parallel", "_moe_config")
    expert_parallel = delegated_property("_moe_config", "expert_parallel")
    vocab_emb_dp = delegated_property("_embed_dp_mp_config", "vocab_emb_dp")
    pipeline_stage = delegated_property("_pp_config", "pipeline_stage")
    micro_batch_num = delegated_property("_pp_config", "micro_batch_num")
    gradient_aggregation_group = positive_int_property("gradient_aggregation_group")
    optimizer_shard = bool_property("optimizer_shard")

    def __init__(self, data_parallel: int = 1, model_parallel: int = 1, expert_parallel: int = 1,
                 pipeline_stage: int = 1, micro_batch_num: int = 1,
                 recompute: Any = default_transformer_recompute_config,
                 optimizer_shard: bool = False, gradient_aggregation_group: int = 4,
                 vocab_emb_dp: bool = True) -> None:  # fmt: skip
        self.recompute = recompute
        self.optimizer_shard = optimizer_shard
        self.gradient_aggregation_group = gradient_aggregation_group
        self._embed_dp_mp_config = EmbeddingOpParallelConfig(
            data_parallel, model_parallel, vocab_emb_dp
        )
        self._pp_config = _PipeLineConfig(pipeline_stage, micro_batch_num)
        self._moe_config = MoEParallelConfig(data_parallel, model_parallel, expert_parallel)

    @property
    def recompute(self) -> Any:
        """A :class:`TransformerRecomputeConfig` or a bool."""
        return self._recompute

    @recompute.setter
    def recompute(self, value: Any) -> None:
        if not isinstance(value, (TransformerRecomputeConfig, bool)):
            raise TypeError(
                "TransformerOpParallelConfig: recompute must be a TransformerRecomputeConfig or a "
                f"bool. Received: {type(value).__name__}"
            )
        self._recompute = value

    @property
    def embedding_dp_mp_config(self) -> EmbeddingOpParallelConfig:
        """The embedding's part."""
        return self._embed_dp_mp_config

    @property
    def dp_mp_config(self) -> OpParallelConfig:
        """The data/model-parallel part (what the layers take)."""
        return self._embed_dp_mp_config.dp_mp_config

    @property
    def moe_parallel_config(self) -> MoEParallelConfig:
        """The mixture-of-experts part."""
        return self._moe_config


default_transformer_config = TransformerOpParallelConfig()
default_embedding_parallel_config = EmbeddingOpParallelConfig()


def _get_lambda_func(total_layer: int | None = None) -> Callable[..., None]:
    """MindSpore's per-layer setter: gives layer ``layer_id`` its pipeline stage and
    gradient-fusion group (recorded on the cell) and turns on its recomputation when the
    config asks (``Cell.recompute``)."""

    def set_layer(network: Any, layer_id: int, offset: int, parallel_config: Any,
                  layers: int) -> None:  # fmt: skip
        layers = total_layer or layers
        if layers < parallel_config.pipeline_stage:
            raise ValueError(
                f"layers ({layers}) must be at least the pipeline stages "
                f"({parallel_config.pipeline_stage})"
            )
        per_stage = max(layers // parallel_config.pipeline_stage, 1)
        network.pipeline_stage = min((layer_id + offset) // per_stage,
                                     parallel_config.pipeline_stage - 1)  # fmt: skip
        per_group = max(layers // parallel_config.gradient_aggregation_group, 1)
        network.set_comm_fusion((layer_id + offset) // per_group + 1)
        recompute = parallel_config.recompute
        if recompute is True or (not isinstance(recompute, bool) and recompute.recompute):
            network.recompute()

    return set_layer
