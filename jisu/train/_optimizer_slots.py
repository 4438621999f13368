"""Where each optimizer keeps its state, and under which MindSpore names (see
:mod:`jisu.train.optimizer_names`).

A :class:`Layout` lists an optimizer's checkpoint entries in MindSpore's order: the scalars
(``global_step``, the rate, the optimizer's own), one :class:`Slot` per kind of per-parameter
state (``moments``: the ``moments`` state tensor of each parameter, named
``moments.<parameter name>``), then a per-step rate table. It also restores them from a file
without jisu's remainder (:meth:`Layout.restore`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from ..nn.optim import Optimizer

#: MindSpore's slot prefixes: a torch optimizer without a MindSpore equivalent reads none of
#: them back (they are another optimizer's state)
MINDSPORE_PREFIXES = frozenset(
    {"moments", "moment1", "moment2", "vhat", "accum", "stat", "adam_m", "adam_v", "lamb_m"}
    | {"lamb_v", "mean_grad", "mean_square", "moment", "linear"}
)


@dataclass
class Item:
    """One checkpoint entry: its name, its tensor, and where the tensor sits in the optimizer's
    state dict (None: derived from it, not stored there)."""

    name: str
    tensor: torch.Tensor
    origin: tuple | None = None


@dataclass
class Slot:
    """A kind of per-parameter state: MindSpore's prefix, the state key, the value of a
    parameter without state yet (None: no entry), and, for a slot MindSpore keeps in another
    form, the conversions (``derive(state, param)`` -> entry, ``undo(state, entry, param)``)."""

    prefix: str
    key: str
    init: float | None = 0.0
    derive: Callable[[dict, torch.Tensor], torch.Tensor] | None = None
    undo: Callable[[dict, torch.Tensor, torch.Tensor], None] | None = None


def _f32(value: Any) -> torch.Tensor:
    return torch.as_tensor(value, dtype=torch.float32).detach().reshape(()).clone()


def _same_f32(current: Any, value: torch.Tensor) -> bool:
    """Whether ``current`` (a number or tensor) is ``value`` at float32 precision."""
    return bool(_f32(current) == value.to(torch.float32).reshape(()))


def _order(opt: Any) -> list[tuple[int, torch.Tensor]]:
    """``(state-dict index, parameter)`` in MindSpore's order: the ``order_params`` group's
    order where one was given, else the groups' order (torch's state-dict indices)."""
    indexed, seen = [], set()
    for group in opt.param_groups:
        for p in group["params"]:
            if id(p) not in seen:
                seen.add(id(p))
                indexed.append((len(indexed), p))
    wanted = getattr(opt, "_order_params", None)
    if wanted:
        rank = {id(p): i for i, p in enumerate(wanted)}
        indexed.sort(key=lambda pair: rank.get(id(pair[1]), len(rank) + pair[0]))
    return indexed


class Layout:
    """The MindSpore entries of an optimizer whose state dict is torch's (``state`` by
    parameter index, ``param_groups``), with MindSpore's names."""

    def __init__(self, opt: Any, names: dict[int, str]) -> None:
        self.opt = opt
        self.params = [(i, p, names.get(id(p))) for i, p in _order(opt)]

    # ---------------------------------------------------------------- what subclasses give
    def scalars(self, state: dict) -> list[Item]:
        """The entries before the slots."""
        return []

    def tail(self, state: dict) -> list[Item]:
        """The entries after the slots."""
        return []

    def slots(self, state: dict) -> list[Slot]:
        return []

    def restore_scalars(self, state: dict, entries: Mapping[str, torch.Tensor]) -> None:
        """Set the state dict's scalars from the entries (rest=None)."""

    def fill(self, pstate: dict, param: torch.Tensor, state: dict) -> None:
        """Complete a parameter's restored state (a torch Adam's ``step``)."""

    def after(self, entries: Mapping[str, torch.Tensor]) -> None:
        """Restore what lives outside the state dict (attributes, rate tables)."""

    # ---------------------------------------------------------------- the mechanics
    def items(self, state: dict) -> list[Item]:
        out = self.scalars(state)
        per_param = state.get("state", {})
        for slot in self.slots(state):
            for index, param, name in self.params:
                if name is None:
                    continue
                pstate = per_param.get(index, {})
                origin = None
                if slot.derive is not None:
                    tensor = slot.derive(pstate, param)
                elif isinstance(pstate.get(slot.key), torch.Tensor):
                    tensor, origin = pstate[slot.key], ("state", index, slot.key)
                elif slot.init is not None:
                    tensor = torch.full_like(param.detach(), slot.init)
                else:
                    continue
                out.append(Item(f"{slot.prefix}.{name}", tensor.detach(), origin))
        return out + self.tail(state)

    def restore(self, entries: Mapping[str, torch.Tensor]) -> list[str]:
        """Load what ``entries`` hold into the optimizer; the names of the parameters whose
        slots are missing."""
        state = self.opt.state_dict()
        state["state"] = dict(state.get("state", {}))
        slots = self.slots_for_restore(state, entries)
        missing = []
        for index, param, name in self.params:
            found = {}
            for slot in slots:
                value = entries.get(f"{slot.prefix}.{name}") if name is not None else None
                if value is not None:
                    found[slot.prefix] = _checked(slot, name, value, param, self.strict_shapes)
            if not found:
                if slots:
                    missing.append(name or f"parameter {index}")
                continue
            pstate = dict(state["state"].get(index, {}))
            for slot in slots:
                value = found.get(slot.prefix)
                if value is None:
                    if slot.init is not None and slot.key not in pstate:
                        pstate[slot.key] = torch.full_like(param.detach(), slot.init)
                elif slot.undo is not None:
                    slot.undo(pstate, value, param)
                else:
                    pstate[slot.key] = value
            self.fill(pstate, param, state)
            state["state"][index] = pstate
        self.restore_scalars(state, entries)
        self.opt.load_state_dict(state)
        self.after(entries)
        return missing

    strict_shapes = True

    def slots_for_restore(self, state: dict, entries: Mapping[str, torch.Tensor]) -> list[Slot]:
        return self.slots(state)


def _checked(slot: Slot, name: str, value: Any, param: torch.Tensor, strict: bool) -> Any:
    entry = f"{slot.prefix}.{name}"
    if not isinstance(value, torch.Tensor):
        raise ValueError(
            f"load_optimizer_entries: '{entry}' must be a tensor. Received {type(value).__name__}"
        )
    if strict and tuple(value.shape) != tuple(param.shape):
        raise ValueError(
            f"load_optimizer_entries: '{entry}' has shape {tuple(value.shape)}, its parameter "
            f"'{name}' {tuple(param.shape)}"
        )
    value = value.detach().to(param.device)
    if strict and value.is_floating_point():
        value = value.to(param.dtype)
    return value.clone()


# -------------------------------------------------------------------- rates
def _rate_specs(opt: Any) -> list[tuple[str, list[int], str, str]]:
    """MindSpore's rate entries of ``opt``: ``(name, group indices, "front"|"tail", "static"|
    "table")``; a schedule's rate has none."""
    groups = opt.param_groups
    if isinstance(opt, Optimizer):
        dynamic = opt._dynamic
        kinds = [
            "static" if d is None else ("table" if d.table is not None else "schedule")
            for d in dynamic
        ]
        if not getattr(opt, "is_group_lr", False):
            where = "front" if kinds[0] == "static" else "tail"
            out = [("learning_rate", list(range(len(groups))), where, kinds[0])]
        else:
            where = "tail" if any(k != "static" for k in kinds) else "front"
            out = [(f"learning_rate_group_{i}", [i], where, k) for i, k in enumerate(kinds)]
        return [spec for spec in out if spec[3] != "schedule"]
    if len(groups) == 1:
        return [("learning_rate", [0], "front", "static")]
    return [(f"learning_rate_group_{i}", [i], "front", "static") for i in range(len(groups))]


def _rate_items(opt: Any, where: str) -> list[Item]:
    out = []
    for name, indices, place, kind in _rate_specs(opt):
        if place != where:
            continue
        i = indices[0]
        if kind == "table":
            out.append(Item(name, opt._dynamic[i].table.detach()))
        else:
            out.append(Item(name, _f32(opt.param_groups[i]["lr"])))
    return out


def _restore_rates(opt: Any, state: dict, entries: Mapping[str, torch.Tensor]) -> None:
    """The file's rates, where the optimizer's are of the same form (as MindSpore's
    ``load_param_into_net`` would set them); otherwise a warning, and the script's rate."""
    for name, indices, _, kind in _rate_specs(opt):
        value = entries.get(name)
        if not isinstance(value, torch.Tensor):
            continue
        for i in indices:
            if kind == "table":
                table = opt._dynamic[i].table
                if tuple(value.shape) != tuple(table.shape):
                    warnings.warn(
                        f"load_optimizer_entries: the checkpoint's '{name}' has "
                        f"{value.numel()} per-step rates, the optimizer's {table.numel()}: "
                        "the optimizer keeps its own",
                        stacklevel=4,
                    )
                    break
                opt._dynamic[i].table = value.detach().to(table.device, torch.float32).clone()
            elif value.numel() != 1:
                warnings.warn(
                    f"load_optimizer_entries: the checkpoint's '{name}' is a per-step table, "
                    "the optimizer's rate is one number: the optimizer keeps its own",
                    stacklevel=4,
                )
                break
            else:
                group = state["param_groups"][i]
                if not _same_f32(group["lr"], value):
                    old, new = group["lr"], float(value.reshape(()))
                    if torch.is_tensor(old):
                        new = torch.as_tensor(new, dtype=old.dtype)
                    group["lr"] = new


def _global_step(entries: Mapping[str, torch.Tensor]) -> int | None:
    value = entries.get("global_step")
    if not isinstance(value, torch.Tensor) or value.numel() != 1:
        return None
    return int(value.reshape(-1)[0])


def steps_from_powers(entries: Mapping[str, torch.Tensor], beta1: float, beta2: float):
    """The step count MindSpore's ``beta1_power``/``beta2_power`` say (``beta^t``), or None."""
    for key, beta in (("beta1_power", beta1), ("beta2_power", beta2)):
        value = entries.get(key)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            power = float(value.reshape(()))
            if 1e-30 < power <= 1.0:
                return max(0, round(math.log(power) / math.log(beta)))
    return None


def _beta_items(beta1: float, beta2: float, step: int) -> list[Item]:
    """float32 ``beta^step``, computed as jisu's Adam computes its bias corrections."""
    powers = torch.pow(torch.tensor([beta1, beta2], dtype=torch.float32), torch.tensor(step))
    return [Item("beta1_power", powers[0].clone()), Item("beta2_power", powers[1].clone())]


def _state_keys(state: dict) -> list[str]:
    """Every per-parameter state key holding a tensor, in first-seen order."""
    keys: dict[str, None] = {}
    for pstate in state.get("state", {}).values():
        for key, value in pstate.items():
            if isinstance(value, torch.Tensor):
                keys.setdefault(key, None)
    return list(keys)


def _keys_in(entries: Mapping[str, Any], names: list[str | None], mindspore: bool) -> list[str]:
    """The ``<key>`` of every entry ``<key>.<parameter name>`` (``mindspore``: also MindSpore's
    slot prefixes)."""
    known = {n for n in names if n is not None}
    keys: dict[str, None] = {}
    for entry in entries:
        key, dot, rest = entry.partition(".")
        if dot and rest in known and (mindspore or key not in MINDSPORE_PREFIXES):
            keys.setdefault(key, None)
    return list(keys)
