"""MindSpore's ``load_param_into_net`` on torch modules: a checkpoint's ``{name: tensor}``
dict copied into a network's parameters and moving statistics by MindSpore's names
(:func:`jisu.nn.cell.mindspore_named_tensors`), with MindSpore 2.10's shape and dtype rules
and its two returned lists. jisu's resume entry (:data:`~jisu.train.ckpt_state.RESUME_ENTRY`)
is not a parameter: its torch-only buffers (``num_batches_tracked``) are copied into the
network where it has them, and it is never reported in ``ckpt_not_load``."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch
from torch import nn

from ..nn.cell import mindspore_named_tensors
from .ckpt_state import RESUME_ENTRY, load_buffers, unpack_resume

__all__ = ["ParamLoad", "load_param_into_net", "plan_param_load"]

_FLOATS = {torch.float16, torch.bfloat16, torch.float32, torch.float64}
_INTS = {torch.int8, torch.int16, torch.int32, torch.int64}


def _refuse(where: str, **options: tuple[Any, Any]) -> None:
    for name, (value, default) in options.items():
        if value is not default and value != default:
            raise ValueError(
                f"{where}: jisu does not support {name!r} (MindSpore's encryption and parallel "
                f"options); leave it at {default!r}. Received: {name}={value!r}"
            )


def load_param_into_net(
    net: nn.Module,
    parameter_dict: dict[str, Any],
    strict_load: bool = False,
    remove_redundancy: bool = False,
) -> tuple[list[str], list[str]]:
    """Copy ``parameter_dict``'s tensors into ``net``'s parameters and moving statistics of
    the same MindSpore names, in place (under ``no_grad``), as MindSpore 2.10 does.

    Shapes must agree (a checkpoint shape with extra trailing 1s is reshaped, as MindSpore
    does). A dtype that differs is cast to the net's when both are floating or both signed
    integers and ``strict_load`` is False; otherwise it is an error. With ``strict_load``
    False, net parameters not found by name are looked up again under a common prefix of the
    checkpoint's names (a checkpoint of a wrapper cell, ``"network." + name``). Entries that
    are strings are skipped. A net tensor whose MindSpore name is missing but whose torch
    name is there (``bn.weight`` for ``bn.gamma``: the flat dict of a jisu checkpoint of the
    earlier format, or a torch state dict) is loaded by that name. jisu's resume entry
    (``"_jisu.resume_state"``) is no parameter: the torch-only buffers it holds
    (``num_batches_tracked``) are copied where the net has them, and it is in neither list.

    Args:
        net: any torch module.
        parameter_dict: name -> tensor (NumPy arrays are accepted too) or str, as
            :func:`~jisu.train.serialization.load_checkpoint` returns; or a nested
            ``Model.state_dict()``, whose ``network`` is loaded by torch's names.
        strict_load: refuse dtype conversions and the prefix search.
        remove_redundancy: must be False.

    Returns:
        ``(param_not_load, ckpt_not_load)``: the net's names that received nothing, and the
        checkpoint's names not loaded by exact name (like MindSpore, names loaded through the
        prefix search stay in ``ckpt_not_load``).

    Raises:
        TypeError: ``net`` is not a module, or ``parameter_dict`` not a dict of str ->
            tensor/str.
        RuntimeError: a shape or dtype disagrees; the message names the parameter and both.
            All or nothing: every shape and dtype is checked before the first copy, so the
            net is then as it was.
    """
    _refuse("load_param_into_net", remove_redundancy=(remove_redundancy, False))
    if not isinstance(net, nn.Module):
        raise TypeError(
            f"load_param_into_net: net must be a torch nn.Module. Received: {type(net).__name__}"
        )
    if not isinstance(parameter_dict, dict):
        raise TypeError(
            "load_param_into_net: parameter_dict must be a dict. "
            f"Received: {type(parameter_dict).__name__}"
        )
    if isinstance(parameter_dict.get("network"), dict):  # a jisu checkpoint (ModelCheckpoint's)
        return _load_jisu_network(net, parameter_dict["network"], strict_load)
    for key, value in parameter_dict.items():
        if not isinstance(key, str) or not isinstance(value, (torch.Tensor, np.ndarray, str)):
            raise TypeError(
                "load_param_into_net: parameter_dict must map str to tensors or str. "
                f"Received: {key!r}: {type(value).__name__}"
            )
    plan = plan_param_load(net, parameter_dict, strict_load)
    plan.apply()
    return plan.param_not_load, plan.ckpt_not_load


class ParamLoad:
    """A checked :func:`load_param_into_net`, not yet applied: what goes where, and the two
    lists. Every shape and dtype was checked when it was made, so :meth:`apply` only copies
    (a load is all or nothing: a mismatch found while planning leaves the net untouched)."""

    def __init__(self, net: nn.Module, parameter_dict: dict[str, Any]) -> None:
        self.net, self.parameter_dict = net, parameter_dict
        self.copies: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.param_not_load: list[str] = []
        self.ckpt_not_load: list[str] = []

    def apply(self) -> None:
        """Copy every planned tensor (and the resume entry's torch-only buffers), then warn
        about the net's parameters that received nothing."""
        with torch.no_grad():
            for target, value in self.copies:
                target.copy_(value)
        if RESUME_ENTRY in self.parameter_dict:
            resume = unpack_resume(self.parameter_dict[RESUME_ENTRY], "the parameter dict")
            load_buffers(self.net, resume, strict=False)
        if self.param_not_load:
            warnings.warn(
                f"load_param_into_net: {len(self.param_not_load)} parameters of the net are not "
                f"in the checkpoint and were not loaded: {self.param_not_load}",
                stacklevel=3,
            )


def plan_param_load(
    net: nn.Module, parameter_dict: dict[str, Any], strict_load: bool = False
) -> ParamLoad:
    """Check a :func:`load_param_into_net` of ``parameter_dict`` into ``net`` (a flat dict of
    MindSpore names) and return it unapplied.

    Raises:
        RuntimeError: a shape or dtype disagrees (nothing was copied).
        MalformedFileError: the resume entry is damaged (nothing was copied).
    """
    strict_load = bool(strict_load)
    plan = ParamLoad(net, parameter_dict)
    targets = list(mindspore_named_tensors(net))
    param_not_load = plan.param_not_load
    loaded: set[str] = set()
    for name, target in targets:
        if name in parameter_dict:
            value = parameter_dict[name]
            if isinstance(value, str):
                continue  # MindSpore skips what has no data, and keeps it in neither list
            plan.copies.append((target, _checked(name, target, value, strict_load)))
            loaded.add(name)
        elif not name.startswith("accu_grads"):
            param_not_load.append(name)
    if param_not_load:
        _load_by_torch_names(plan, targets, loaded)
    if RESUME_ENTRY in parameter_dict:  # checked now: applying it cannot fail
        unpack_resume(parameter_dict[RESUME_ENTRY], "the parameter dict")
    if param_not_load and not strict_load:
        _load_under_prefix(plan, targets, strict_load)
    plan.ckpt_not_load.extend(
        name for name in parameter_dict if name != RESUME_ENTRY and name not in loaded
    )
    return plan


def _load_jisu_network(
    net: nn.Module, state: dict[str, Any], strict_load: bool
) -> tuple[list[str], list[str]]:
    """The network of a jisu checkpoint (``Model.state_dict()``, torch's names) into ``net``:
    what a ported script's ``load_param_into_net(net, load_checkpoint(path))`` does with the
    files ``ModelCheckpoint`` writes. Returns torch's missing and unexpected names. Checked
    first (torch's ``load_state_dict`` copies what fits before it reports what does not)."""
    own = net.state_dict()
    for key, value in state.items():
        if key in own and isinstance(value, torch.Tensor) and value.shape != own[key].shape:
            raise RuntimeError(
                f"load_param_into_net: {key!r} has shape {tuple(own[key].shape)} in the net but "
                f"{tuple(value.shape)} in the checkpoint; check that the checkpoint is for "
                "this network"
            )
    if strict_load and own.keys() != state.keys():
        raise RuntimeError(
            "load_param_into_net: with strict_load=True the checkpoint's names must be the "
            f"net's: missing {sorted(own.keys() - state.keys())}, unexpected "
            f"{sorted(state.keys() - own.keys())}"
        )
    result = net.load_state_dict(state, strict=bool(strict_load))
    if result.missing_keys:
        warnings.warn(
            f"load_param_into_net: {len(result.missing_keys)} parameters of the net are not in "
            f"the checkpoint and were not loaded: {result.missing_keys}",
            stacklevel=3,
        )
    return list(result.missing_keys), list(result.unexpected_keys)


def _load_by_torch_names(plan: ParamLoad, targets: list, loaded: set[str]) -> None:
    """Plan the net tensors not found by MindSpore name under their torch names."""
    net, parameter_dict, param_not_load = plan.net, plan.parameter_dict, plan.param_not_load
    torch_names = {id(t): key for key, t in net.state_dict(keep_vars=True).items()}
    for name, target in targets:
        key = torch_names.get(id(target))
        if name in param_not_load and key not in (None, name) and key in parameter_dict:
            value = parameter_dict[key]
            if isinstance(value, str):
                continue
            plan.copies.append((target, _checked(name, target, value, False)))
            param_not_load.remove(name)
            loaded.add(key)


def _load_under_prefix(plan: ParamLoad, targets: list, strict_load: bool) -> None:
    """MindSpore's second pass: find a checkpoint name ending with a missing net name, take
    what precedes it as a prefix, and load every missing name found under that prefix;
    repeat while that finds a new prefix."""
    parameter_dict, param_not_load = plan.parameter_dict, plan.param_not_load
    sentinel = param_not_load[0]
    while param_not_load:
        prefix = sentinel
        for missing in param_not_load:
            found = next((k for k in parameter_dict if k.endswith(missing)), None)
            if found is not None:
                prefix = found[: -len(missing)]
                break
        if prefix == sentinel:
            return
        warnings.warn(
            f"load_param_into_net: loading the net's missing names under the checkpoint "
            f"prefix {prefix!r}",
            stacklevel=4,
        )
        loaded = 0
        for name, target in targets:
            if name in param_not_load and prefix + name in parameter_dict:
                value = parameter_dict[prefix + name]
                if isinstance(value, str):
                    continue
                plan.copies.append((target, _checked(name, target, value, strict_load)))
                param_not_load.remove(name)
                loaded += 1
        if not loaded:  # only a str matched: nothing more can be found
            return


def _checked(name: str, target: torch.Tensor, value: Any, strict_load: bool) -> torch.Tensor:
    """``value`` as it is to be copied into ``target``, its shape and dtype checked as
    MindSpore checks them."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(np.ascontiguousarray(value))
    conv1d = value.dim() == 4 == target.dim() + 1 and value.shape[2] == 1
    if conv1d and tuple(value.shape[:2]) + tuple(value.shape[3:]) == tuple(target.shape):
        value = value.squeeze(2)  # MindSpore's Conv1d weight (out, in, 1, k); torch's (out, in, k)
    if tuple(value.shape) != tuple(target.shape):
        extra = tuple(value.shape[target.dim() :])
        if value.dim() <= target.dim() or any(d != 1 for d in extra):
            raise RuntimeError(
                f"load_param_into_net: {name!r} has shape {tuple(target.shape)} in the net but "
                f"{tuple(value.shape)} in the checkpoint; check that the checkpoint is for "
                "this network"
            )
        value = value.reshape(target.shape)
    if value.dtype != target.dtype:
        kinds = {value.dtype, target.dtype}
        if strict_load or not (kinds <= _FLOATS or kinds <= _INTS):
            raise RuntimeError(
                f"load_param_into_net: {name!r} is {target.dtype} in the net but {value.dtype} "
                "in the checkpoint"
                + ("; strict_load=True refuses the conversion" if strict_load else "")
            )
    return value.to(dtype=target.dtype)
