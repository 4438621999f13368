"""MindSpore's module path ``nn.optim.sgd`` (``from mindspore.nn.optim.sgd import SGD``)."""

from .momentum import SGD

__all__ = ["SGD"]
