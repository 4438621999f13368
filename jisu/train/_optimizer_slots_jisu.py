"""The MindSpore entries of jisu.nn's optimizers (see :mod:`jisu.train._optimizer_slots`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import torch

from ..common.parameter_names import parameter_name
from ..nn.optim import FTRL, SGD, Adagrad, Adam, AdamWeightDecay, Lamb, Momentum, RMSProp
from ._optimizer_slots import (
    Item,
    Layout,
    Slot,
    _beta_items,
    _f32,
    _global_step,
    _keys_in,
    _rate_items,
    _restore_rates,
    _same_f32,
    _state_keys,
    steps_from_powers,
)


def _stat(pstate: dict, param: torch.Tensor) -> torch.Tensor:
    """MindSpore SGD's ``stat``: ones until a parameter's first step, then zeros (jisu keeps
    the opposite flag, ``started``, as one number)."""
    started = pstate.get("started")
    if started is None:
        return torch.ones_like(param.detach())
    return torch.full_like(param.detach(), 1.0) - started.to(param.dtype)


def _started(pstate: dict, value: torch.Tensor, param: torch.Tensor) -> None:
    pstate["started"] = (1 - value.reshape(-1)[0]).to(param.dtype).clone()


def _jisu_slots(opt: Any) -> list[Slot] | None:
    """MindSpore's slots of a jisu.nn optimizer, in MindSpore's order (None: not one of
    MindSpore's own)."""
    if isinstance(opt, Momentum):
        return [Slot("moments", "moments")]
    if isinstance(opt, SGD):
        return [Slot("accum", "accum"), Slot("stat", "started", 1.0, _stat, _started)]
    if isinstance(opt, Adam):
        slots = [Slot("moment1", "moment1"), Slot("moment2", "moment2")]
        return slots + ([Slot("vhat", "vhat")] if opt.use_amsgrad else [])
    if isinstance(opt, AdamWeightDecay):
        return [Slot("adam_m", "moment1"), Slot("adam_v", "moment2")]
    if isinstance(opt, Lamb):
        return [Slot("lamb_m", "moment1"), Slot("lamb_v", "moment2")]
    if isinstance(opt, RMSProp):
        centered = [Slot("mean_grad", "mean_grad")] if opt.centered else []
        return [*centered, Slot("mean_square", "mean_square", 1.0), Slot("moment", "moment")]
    if isinstance(opt, Adagrad):
        return [Slot("accum", "accum", opt.accum)]
    if isinstance(opt, FTRL):
        return [Slot("moments", "moments", opt.initial_accum), Slot("linear", "linear")]
    return None


class JisuLayout(Layout):
    """A jisu.nn optimizer (``Optimizer._update`` kind): MindSpore's slots for MindSpore's
    optimizers, ``<state key>.<name>`` for a subclass of jisu's own."""

    def __init__(self, opt: Any, names: dict[int, str]) -> None:
        super().__init__(opt, names)
        self.known = _jisu_slots(opt)

    def scalars(self, state: dict) -> list[Item]:
        step = int(state.get("global_step", 0))
        out = [Item("global_step", torch.tensor([step], dtype=torch.int32))]
        out += _rate_items(self.opt, "front")
        if isinstance(self.opt, (Momentum, SGD)):
            out.append(Item("momentum", _f32(self.opt.momentum)))
        if isinstance(self.opt, Adam):
            out += _beta_items(self.opt.beta1, self.opt.beta2, step)
        return out

    def tail(self, state: dict) -> list[Item]:
        return _rate_items(self.opt, "tail")

    def slots(self, state: dict) -> list[Slot]:
        if self.known is not None:
            return self.known
        return [Slot(key, key, None) for key in _state_keys(state)]

    def slots_for_restore(self, state: dict, entries: Mapping[str, torch.Tensor]) -> list[Slot]:
        if isinstance(self.opt, SGD) and self.opt.momentum == 0.0:
            return []  # MindSpore writes accumulators that plain SGD never reads; jisu has none
        if self.known is not None:
            return self.known
        keys = _keys_in(entries, [n for _, _, n in self.params], mindspore=True)
        return [Slot(key, key, None) for key in keys]

    def restore_scalars(self, state: dict, entries: Mapping[str, torch.Tensor]) -> None:
        step = _global_step(entries)
        if isinstance(self.opt, Adam):
            powers = steps_from_powers(entries, self.opt.beta1, self.opt.beta2)
            if step is None:
                step = powers
            elif powers is not None and powers != step:
                warnings.warn(
                    f"load_optimizer_entries: the checkpoint's beta powers say step {powers}, "
                    f"its global_step {step}; jisu's Adam corrects its bias by global_step",
                    stacklevel=4,
                )
        if step is not None:
            state["global_step"] = state["step_calls"] = step
        _restore_rates(self.opt, state, entries)

    def after(self, entries: Mapping[str, torch.Tensor]) -> None:
        value = entries.get("momentum")
        momentum = isinstance(self.opt, (Momentum, SGD)) and isinstance(value, torch.Tensor)
        if momentum and not _same_f32(self.opt.momentum, value):
            self.opt.momentum = float(value.reshape(()))


class ConstructLayout(Layout):
    """A jisu.nn optimizer written the MindSpore way (its own ``construct``): its cloned
    moments and named tensors under the names they were given (``clone(prefix=...)``,
    ``Parameter(..., name=...)``)."""

    def _own(self, saved: dict) -> list[tuple[str, Any, str | None, torch.Tensor | None]]:
        """``(attribute, index or None, name, live tensor)`` of each slot tensor of ``saved``
        (the state dict's "mindspore_slots")."""
        out = []
        for attr, value in saved.items():
            live = getattr(self.opt, attr)
            if isinstance(value, list):
                for i, tensor in enumerate(live):
                    out.append((attr, i, parameter_name(tensor), tensor))
            elif isinstance(live, torch.Tensor):
                out.append((attr, None, parameter_name(live), live))
        return out

    def items(self, state: dict) -> list[Item]:
        step = int(state.get("global_step", 0))
        out = [Item("global_step", torch.tensor([step], dtype=torch.int32))]
        out += _rate_items(self.opt, "front")
        used = {item.name for item in out}
        slots = state.get("mindspore_slots", {})
        for attr, index, name, _ in self._own(slots):
            if name is None or name in used:
                continue
            used.add(name)
            if index is None:
                out.append(Item(name, slots[attr], ("mindspore_slots", attr)))
            else:
                out.append(Item(name, slots[attr][index], ("mindspore_slots", attr, index)))
        return out + _rate_items(self.opt, "tail")

    def restore(self, entries: Mapping[str, torch.Tensor]) -> list[str]:
        missing = []
        with torch.no_grad():
            for _, _, name, live in self._own(self.opt._ms_slots()):
                value = entries.get(name) if name is not None else None
                if not isinstance(value, torch.Tensor):
                    if name is not None and name not in ("global_step", "learning_rate"):
                        missing.append(name)
                    continue
                if tuple(value.shape) != tuple(live.shape):
                    raise ValueError(
                        f"load_optimizer_entries: '{name}' has shape {tuple(value.shape)}, "
                        f"the optimizer's {tuple(live.shape)}"
                    )
                live.copy_(value)
        step = _global_step(entries)
        state = {"param_groups": [dict(g) for g in self.opt.param_groups]}
        _restore_rates(self.opt, state, entries)
        for group, new in zip(self.opt.param_groups, state["param_groups"]):
            group["lr"] = new["lr"]
        if not self.opt.dynamic_lr:  # construct reads the rate as a tensor attribute
            self.opt.learning_rate = self.opt._ms_learning_rate()
        if step is not None:
            self.opt._step_tensor().fill_(step)
            self.opt._calls = step
        return missing


class LarsLayout(Layout):
    """MindSpore's ``LARS``: its placeholders ``fake_lr``/``fake_param`` after the wrapped
    optimizer's ``global_step``, then the wrapped optimizer's entries."""

    def __init__(self, opt: Any, names: dict[int, str]) -> None:
        super().__init__(opt, names)
        inner = opt.opt
        kind = ConstructLayout if inner._steps_by_construct else JisuLayout
        self.inner = kind(inner, names)

    def items(self, state: dict) -> list[Item]:
        inner = self.inner.items(state)
        fakes = [Item("fake_lr", _f32(0.0)), Item("fake_param", _f32(0.0))]
        return inner[:1] + fakes + inner[1:]

    def restore(self, entries: Mapping[str, torch.Tensor]) -> list[str]:
        return self.inner.restore(entries)
