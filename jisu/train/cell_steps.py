"""The steps of MindSpore's two other ``Model`` wirings, used by the model zoo.

- ``Model(train_cell)`` with no ``loss_fn`` and no ``optimizer``: the network is the whole train
  step (a ``TrainOneStepCell``, a project's own ``TrainingWrapper``, ...), called with every
  column of the batch; it updates the parameters itself and returns the loss.
  :class:`CellStep` is that step. A train cell is told by the optimizer it holds
  (:func:`is_train_cell`); a plain network without one still gets "no optimizer".
- ``Model(net, ..., eval_network=cell, eval_indexes=[loss, prediction, label])``: the eval
  network is called with every column of the batch and the metrics are updated from its
  outputs: ``metric.update(*outputs)`` without ``eval_indexes``; with them, the ``Loss`` metric
  gets ``outputs[loss]`` and the others ``(outputs[prediction], outputs[label])``.
  :class:`CustomEvalStep` is that step.
"""

from __future__ import annotations

from typing import Any

import torch

from .metrics import Loss, Metric


def check_eval_indexes(eval_indexes: Any) -> list[int] | None:
    """``eval_indexes`` checked: None or a list of three ints (MindSpore's rule)."""
    if eval_indexes is None:
        return None
    if not (
        isinstance(eval_indexes, list)
        and len(eval_indexes) == 3
        and all(isinstance(i, int) and not isinstance(i, bool) for i in eval_indexes)
    ):
        raise ValueError(
            "Model: eval_indexes must be None or a list of three ints (loss, prediction, "
            f"label). Received eval_indexes={eval_indexes!r}"
        )
    return eval_indexes


def is_train_cell(network: torch.nn.Module) -> bool:
    """Whether ``network`` holds an optimizer (an attribute of its own, or of one of its
    submodules: a loss-scale wrapper around a ``TrainOneStepCell``)."""
    return any(
        isinstance(value, torch.optim.Optimizer)
        for module in network.modules()
        for value in vars(module).values()
    )


class CellStep:
    """A train cell as ``Model``'s step: ``network(*batch)``, which updates the parameters
    itself and returns the loss (MindSpore's ``Model(TrainOneStepCell(...))``)."""

    def __init__(self, network: torch.nn.Module) -> None:
        self.network = network

    def __call__(self, *batch: Any) -> Any:
        return self.network(*batch)


class CustomEvalStep:
    """``Model.eval``'s step with a user's ``eval_network``: ``eval_network(*batch)``, then the
    metrics updated from its outputs (see the module). Returns the outputs."""

    def __init__(
        self, network: Any, metrics: dict[str, Metric], eval_indexes: list[int] | None
    ) -> None:
        self.network, self.metrics, self.indexes = network, metrics, eval_indexes

    def __call__(self, *batch: torch.Tensor) -> Any:
        outputs = self.network(*batch)
        values = tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)
        if self.indexes is not None and len(values) < 3:
            raise ValueError(
                "Model.eval: with eval_indexes the eval network must return at least 3 "
                f"outputs. Received {len(values)}"
            )
        loss_at, pred_at, label_at = self.indexes or (None, None, None)
        for metric in self.metrics.values():
            if self.indexes is None:
                metric.update(*values)
            elif isinstance(metric, Loss):
                metric.update(values[loss_at])
            else:
                metric.update(values[pred_at], values[label_at])
        return outputs
