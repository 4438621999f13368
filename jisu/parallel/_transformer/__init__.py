"""MindSpore 2.0's ``mindspore.parallel._transformer`` (its big-model transformer library, which
pangu-like NLP projects of the model zoo build on): the parallel configs as validated records,
the layers on torch with MindSpore's parameter names (:mod:`.transformer`, :mod:`.layers`), the
masked cross entropy (:mod:`.loss`); MoE, incremental inference and the decoders are refused
by name."""

from .layers import _LayerNorm
from .loss import CrossEntropyLoss
from .moe import MoE, MoEConfig, default_moe_config
from .op_parallel_config import OpParallelConfig, default_dpmp_config
from .transformer import *  # noqa: F403

__all__ = [
    "AttentionMask",  # noqa: F405
    "CrossEntropyLoss",
    "EmbeddingOpParallelConfig",  # noqa: F405
    "FeedForward",  # noqa: F405
    "MoE",
    "MoEConfig",
    "MultiHeadAttention",  # noqa: F405
    "OpParallelConfig",
    "Transformer",  # noqa: F405
    "TransformerDecoder",  # noqa: F405
    "TransformerDecoderLayer",  # noqa: F405
    "TransformerEncoder",  # noqa: F405
    "TransformerEncoderLayer",  # noqa: F405
    "TransformerOpParallelConfig",  # noqa: F405
    "TransformerRecomputeConfig",  # noqa: F405
    "VocabEmbedding",  # noqa: F405
    "_LayerNorm",
    "default_dpmp_config",
    "default_moe_config",
    "default_transformer_config",  # noqa: F405
]
