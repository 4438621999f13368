"""MindSpore's ``ops.operations._inner_ops`` (imported ``as inner``): its internal primitives,
most of them Ascend kernels (``PsROIPooling``, ``PromptKVCache``, ``DecoderKVCache`` ...) or
graph-compiler helpers. jisu provides none of them: each name, read from this module, is a
primitive class that raises ``NotImplementedError`` naming it when it is built (so a model file
that imports them still imports). The names are MindSpore 2.0.0's and 2.10's, plus the
KV-cache kernels of the releases between."""

from __future__ import annotations

from functools import cache

from ..._unprovided import refused_class
from ..primitive import Primitive

_TABLE = """
AntiQuant CellBackwardHook Centralization CheckBprop ClipByNorm ConfusionMulGrad
ConvertToAdapterTensor ConvertToDynamic ConvertToMsTensor CopyWithSlice Cummin DSDGrad DSDMatmul
DecodeImage DecoderKVCache Dequant DynamicBroadcastGradientArgs DynamicBroadcastTo
DynamicResizeNearestNeighbor DynamicStitch ErrorOnDynamicShapeInput ExtractImagePatches FFN
FlattenConcat Format Generator GetGrad GetitemTensorIndexInfo GpuConvertToDynamicShape
IsConstant IsInstance IsParameter IsSubClass KMeansCentroids Lamb MatmulDDS MatmulDDSGrad
MatrixDiag MatrixDiagPart MatrixSetDiag MixedPrecisionCast NonZeroWithValue
NonZeroWithValueShape ParallelResizeBilinear PartitionedCall PromptKVCache PsROIPooling Quant
Receive SameTypeShape SelectView Send SequenceMask SetitemTensorIndexInfo SiLU SliceGetItem
StackDestroy StackInit StackPop StackPush SyncBatchNorm TensorCopySlices TileSize TopTypeof
"""
_NAMES = frozenset(_TABLE.split())

_REASON = (
    "it is one of MindSpore's internal primitives (an Ascend/GPU kernel or a graph-compiler "
    "helper) with no public contract; write the computation with jisu.ops or torch"
)


@cache
def _refused(name: str) -> type:
    return refused_class(f"ops.operations._inner_ops.{name}", _REASON, base=Primitive)


def __getattr__(name: str) -> type:
    if name in _NAMES:
        return _refused(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
