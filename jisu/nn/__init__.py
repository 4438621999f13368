"""MindSpore's ``nn`` names on PyTorch, so that MindSpore code ports by swapping its imports.

Networks stay plain ``torch.nn.Module`` s: a :class:`Cell` is one. Here: ``Cell`` and its
containers (:mod:`jisu.nn.cell`), layers (:mod:`jisu.nn.layer`), losses (:mod:`jisu.nn.loss`),
the optimizers with MindSpore's arguments and per-step (dynamic) learning rates
(:mod:`jisu.nn.optim`), the dynamic-rate list helpers (:mod:`jisu.nn.dynamic_lr`), the
on-device schedules (:mod:`jisu.nn.learning_rate_schedule`) and the wrapper cells
(:mod:`jisu.nn.wrap`).
"""

from . import init as init  # nn.init: torch's initializers, as zoo code calls them
from . import layer, loss, wrap
from .cell import Cell, CellDict, CellList, SequentialCell, parameter_name
from .dynamic_lr import (
    cosine_decay_lr,
    exponential_decay_lr,
    inverse_decay_lr,
    natural_exp_decay_lr,
    piecewise_constant_lr,
    polynomial_decay_lr,
    warmup_lr,
)
from .layer import *  # noqa: F403 (each package lists its names in __all__)
from .learning_rate_schedule import (
    CosineDecayLR,
    ExponentialDecayLR,
    InverseDecayLR,
    LearningRateSchedule,
    NaturalExpDecayLR,
    PolynomialDecayLR,
    WarmUpLR,
)
from .loss import *  # noqa: F403
from .optim import *  # noqa: F403
from .wrap import *  # noqa: F403
from .zoo_cells import *  # noqa: F403 (ForwardValueAndGrad, PipelineCell, ...; GraphCell refused)

__all__ = [
    *layer.__all__,
    *loss.__all__,
    *optim.__all__,  # noqa: F405
    *wrap.__all__,
    *zoo_cells.__all__,  # noqa: F405
    "Cell",
    "CellDict",
    "CellList",
    "SequentialCell",
    "parameter_name",
    "CosineDecayLR",
    "ExponentialDecayLR",
    "InverseDecayLR",
    "LearningRateSchedule",
    "NaturalExpDecayLR",
    "PolynomialDecayLR",
    "WarmUpLR",
    "cosine_decay_lr",
    "exponential_decay_lr",
    "inverse_decay_lr",
    "natural_exp_decay_lr",
    "piecewise_constant_lr",
    "polynomial_decay_lr",
    "warmup_lr",
]

#: MindSpore's ``nn.Accuracy`` & co. (:mod:`jisu.nn.metrics`, also ``jisu.train.metrics``);
#: resolved on first use
_METRICS = ("Accuracy", "Loss", "MAE", "MSE", "Metric", "Top1CategoricalAccuracy",
            "Top5CategoricalAccuracy", "TopKCategoricalAccuracy", "ConfusionMatrixMetric", "F1",
            "Fbeta", "Precision", "Recall", "rearrange_inputs", "ROC", "auc")  # fmt: skip


def __getattr__(name: str):
    if name == "probability":  # MindSpore's nn.probability (its distributions)
        from . import probability

        return probability
    if name in _METRICS or name == "metrics":
        from . import metrics

        return metrics if name == "metrics" else getattr(metrics, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
