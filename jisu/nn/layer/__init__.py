"""MindSpore's layers (``mindspore.nn`` layers) as thin torch modules: each is a subclass of
the torch layer it computes with :class:`~jisu.nn.Cell` mixed in, so AMP, ``torch.compile``,
DDP and ``state_dict`` treat it as that torch layer."""

from .activation import (
    GELU,
    LeakyReLU,
    LogSoftmax,
    ReLU,
    ReLU6,
    Sigmoid,
    Softmax,
    Tanh,
    get_activation,
)
from .basic import Dense, Dropout, Flatten, Identity, Pad
from .conv import Conv1d, Conv2d, Conv2dTranspose
from .embedding import Embedding
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .rnn_cells import GRUCell, LSTMCell, RNNCell
from .rnns import GRU, LSTM, RNN

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
    "Pad",
    "RNNCell",
    "ReLU",
    "ReLU6",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "get_activation",
]
