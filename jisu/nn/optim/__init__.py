"""MindSpore's optimizers on ``torch.optim``: the base class and the update rules."""

from . import sgd as sgd  # MindSpore's nn.optim.sgd path
from ._thor import thor
from .adagrad import Adagrad
from .adam import Adam, AdamWeightDecay
from .ftrl import FTRL
from .lamb import Lamb
from .lars import LARS
from .momentum import SGD, Momentum
from .optimizer import Optimizer
from .rmsprop import RMSProp

__all__ = ["SGD", "Adam", "AdamWeightDecay", "Momentum", "Optimizer", "RMSProp"]
__all__ += ["FTRL", "LARS", "Adagrad", "Lamb", "thor"]
