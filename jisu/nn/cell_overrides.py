"""What a MindSpore cell may hold or define that means something else to torch: its own
methods named ``forward`` or ``reset_parameters`` (plain methods in MindSpore, entry points in
torch) and ``ParameterTuple`` attributes (whose parameters MindSpore's cell owns). Installed by
:class:`jisu.nn.Cell` on each subclass and attribute."""

from __future__ import annotations

import os
import sys
from typing import Any

from torch import nn

from ..common.parameter_names import parameter_name
from ..common.tensor import ParameterTuple


def keep_own_forward(cls: type, base: type) -> None:
    """Let a cell keep a method of its own named ``forward``: in MindSpore it is an ordinary
    helper that ``construct`` calls (the zoo's ArcFace ``PartialFC.forward(features,
    weight)``), in torch the name is the module's entry point. A call from torch's module
    machinery runs ``construct``; any other call (``self.forward(...)``) runs the cell's
    method. A cell with no ``construct`` (torch style) keeps its ``forward`` for both."""
    own = cls.__dict__.get("forward")
    if own is None or cls.__module__.startswith("jisu.") or hasattr(own, "_jisu_own_forward"):
        return

    def forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        from_torch = sys._getframe(1).f_code.co_filename == _TORCH_MODULE_FILE
        if from_torch and type(self).construct is not base.construct:
            return base.forward(self, *args, **kwargs)
        return own(self, *args, **kwargs)

    forward._jisu_own_forward = own
    cls.forward = forward


_TORCH_MODULE_FILE = nn.modules.module.__file__
_TORCH_MODULES_DIR = os.path.dirname(_TORCH_MODULE_FILE)


def keep_own_reset(cls: type) -> None:
    """Let a layer subclass keep its own ``reset_parameters``: MindSpore's layers have no such
    method, so the zoo's subclasses (PointNet2's Conv2d and Dense) call theirs once their
    ``__init__`` is done; torch's layers call ``reset_parameters`` from their own ``__init__``,
    before the subclass is ready. That call gets torch's method; every other, the cell's."""
    own = cls.__dict__.get("reset_parameters")
    if own is None or cls.__module__.startswith("jisu.") or hasattr(own, "_jisu_own_reset"):
        return

    def reset_parameters(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1).f_code
        base = getattr(super(cls, self), "reset_parameters", None)
        in_torch_init = caller.co_name == "__init__" and (
            os.path.dirname(caller.co_filename) == _TORCH_MODULES_DIR
        )
        if base is not None and in_torch_init:
            return base(*args, **kwargs)
        return own(self, *args, **kwargs)

    reset_parameters._jisu_own_reset = own
    cls.reset_parameters = reset_parameters


def register_tuple(cell: nn.Module, value: ParameterTuple) -> None:
    """MindSpore's cell holds the parameters of a ``ParameterTuple`` attribute as its own,
    by their names (a hand-written LSTM's ``self.w_list = ParameterTuple([w_ih, w_hh])``:
    Tacotron2, LPCNet, atae_lstm...): they are trained and saved. The new ones are
    registered here; parameters the cell already holds, or that carry a network's dotted
    name (a train cell's ``ParameterTuple(network.trainable_params())``), are left alone."""
    if type(cell).__module__.startswith("jisu."):
        return
    held = {id(p) for p in cell.parameters()}
    for i, param in enumerate(value):
        key = parameter_name(param) or f"Parameter${i}"
        if id(param) in held or "." in key or not isinstance(param, nn.Parameter):
            continue
        if key in cell._parameters or hasattr(cell, key):
            continue
        cell.register_parameter(key, param)
        held.add(id(param))


def train_mode(module: nn.Module, mode: bool = True) -> None:
    """torch's ``module.train(mode)``, also where a cell hides torch's method under an
    attribute of its own (PointNet's ``self.train = True``, an ordinary attribute in
    MindSpore): then every module's mode is set directly."""
    modules = list(module.modules())
    if any("train" in m.__dict__ for m in modules):
        for m in modules:
            m.training = mode
    else:
        module.train(mode)
