"""MindSpore's layers (``mindspore.nn`` layers) as thin torch modules: each is a subclass of
the torch layer it computes with :class:`~jisu.nn.Cell` mixed in, so AMP, ``torch.compile``,
DDP and ``state_dict`` treat it as that torch layer."""

from ..cell import CellDict as CellDict  # MindSpore's nn.layer.CellList & co. paths
from ..cell import CellList as CellList
from ..cell import SequentialCell as Sequential  # zoo code's nn.Sequential (none in MindSpore)
from ..cell import SequentialCell as SequentialCell
from .activation import (
    ELU,
    GELU,
    Hardtanh,
    HSigmoid,
    HSwish,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    SeLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softsign,
    Tanh,
    get_activation,
)
from .basic import (
    BiDense,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    Dense,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    Flatten,
    Identity,
    Linear,
    OneHot,
    Pad,
    ReflectionPad1d,
    ReflectionPad2d,
    ZeroPad2d,
)
from .clip import ClipByNorm
from .combined import Conv2dBnAct, DenseBnAct
from .conv import Conv1d, Conv2d, Conv2dTranspose
from .conv3d import Conv1dTranspose, Conv3d, Conv3dTranspose
from .embedding import Embedding, EmbeddingLookup
from .image import PSNR, SSIM, CentralCrop, PixelShuffle, PixelUnshuffle, ResizeBilinear, Unfold
from .math import MatMul, Norm, Range, Tril
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .normalization_zoo import (
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    SyncBatchNorm,
)
from .pooling import AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d
from .rnn_cells import GRUCell, LSTMCell, RNNCell
from .rnns import GRU, LSTM, RNN
from .transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "GELU",
    "GRU",
    "LSTM",
    "RNN",
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "Conv2dTranspose",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRUCell",
    "Identity",
    "LSTMCell",
    "LayerNorm",
    "LeakyReLU",
    "LogSoftmax",
    "MaxPool2d",
    "MultiheadAttention",
    "Pad",
    "RNNCell",
    "ReLU",
    "ReLU6",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "get_activation",
]

# helper C2's layers (issue 45)
__all__ += [
    "ELU",
    "PSNR",
    "SSIM",
    "AvgPool1d",
    "BatchNorm3d",
    "BiDense",
    "CentralCrop",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "Conv1dTranspose",
    "Conv2dBnAct",
    "Conv3d",
    "Conv3dTranspose",
    "DenseBnAct",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "EmbeddingLookup",
    "GroupNorm",
    "HSigmoid",
    "HSwish",
    "Hardtanh",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "Linear",
    "LogSigmoid",
    "MatMul",
    "MaxPool1d",
    "Mish",
    "Norm",
    "OneHot",
    "PReLU",
    "PixelShuffle",
    "PixelUnshuffle",
    "Range",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ResizeBilinear",
    "SeLU",
    "Sequential",
    "SiLU",
    "Softsign",
    "SyncBatchNorm",
    "Tril",
    "Unfold",
    "ZeroPad2d",
]  # fmt: skip

# helper B's layers (issue 45)
__all__ += ["ClipByNorm"]
