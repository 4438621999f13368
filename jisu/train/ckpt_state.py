"""What a jisu ``.ckpt`` holds beyond MindSpore's entries, and how a network, a train step or
a :class:`jisu.Model` becomes a checkpoint's entries and back.

A checkpoint jisu writes is a MindSpore ``.ckpt`` (:mod:`jisu.train.ms_checkpoint`): the
network's parameters and moving statistics under MindSpore's names, the optimizer's state under
MindSpore's names (:mod:`jisu.train.optimizer_names`), MindSpore's ``append_dict`` /
``append_info`` entries; and, last, one entry MindSpore does not know, :data:`RESUME_ENTRY`
(``"_jisu.resume_state"``): a ``UInt8`` vector holding the ``torch.save`` bytes of a plain dict
with what an exact resume needs and MindSpore's file has no place for::

    {"format": 1,
     "buffers": {torch name: tensor},   # the network's torch-only buffers (num_batches_tracked)
     "optimizer": {...},                # the optimizer's rest (optimizer_entries' second value)
     "loss_scale_manager": {...}, "lr_scheduler": {...},
     "epoch": int, "step_in_epoch": int, "cur_step_num": int,   # where to resume
     "dataset_state": {...}, "rng_state": {...},
     "monitor": {"name": str, "value": float}}                   # ModelCheckpoint's ranking

Only tensors and plain values go in (checked when saving), and the bytes are read back with
``torch.load(weights_only=True)`` (:func:`jisu.train.checkpoint_format.safe_load`): nothing
but tensors and plain values is rebuilt. MindSpore's ``load_checkpoint`` reads the entry as one
more parameter, and its ``load_param_into_net`` skips it (it names no parameter of the net).
"""

from __future__ import annotations

import io
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ..dataset.record.validate import MalformedFileError
from ..nn.cell import mindspore_named_tensors
from .checkpoint_format import check_resume_fields, safe_load
from .optimizer_names import load_optimizer_entries, optimizer_entries

#: the name of the entry holding jisu's resume state
RESUME_ENTRY = "_jisu.resume_state"
#: the version of the resume entry's dict
RESUME_FORMAT = 1
#: the resume-state keys that :meth:`jisu.Model.load_state_dict` takes
MODEL_KEYS = (
    "loss_scale_manager",
    "lr_scheduler",
    "epoch",
    "step_in_epoch",
    "cur_step_num",
    "dataset_state",
    "rng_state",
)

# What the resume state may hold: torch.load(weights_only=True) rebuilds exactly these.
_PLAIN_LEAVES = (bool, int, float, complex, str, bytes, type(None), torch.dtype, torch.device)
_CONTAINERS = (dict, OrderedDict, list, tuple, set, torch.Size)
_TENSORS = (torch.Tensor, nn.Parameter)


# --------------------------------------------------------------------------- the entry
def pack_resume(state: dict[str, Any]) -> torch.Tensor:
    """The resume entry's tensor: ``state``'s ``torch.save`` bytes as a uint8 vector.

    Raises:
        TypeError: ``state`` holds something other than tensors and plain values (the key
            path is named): such an entry could not be loaded safely.
    """
    check_plain(state, "the resume state")
    buffer = io.BytesIO()
    torch.save(dict(state, format=RESUME_FORMAT), buffer)
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)


def unpack_resume(value: Any, path: str) -> dict[str, Any]:
    """The dict in a resume entry, read with ``weights_only`` and its fields checked.

    Raises:
        MalformedFileError: the entry is not a uint8 vector of a checked dict.
    """
    if not isinstance(value, torch.Tensor) or value.dtype != torch.uint8 or value.dim() != 1:
        raise MalformedFileError(path, f"holds a {RESUME_ENTRY!r} entry that is not a uint8 vector")
    state = safe_load(io.BytesIO(value.numpy().tobytes()), path, verified=False)
    if not isinstance(state, dict) or state.get("format") != RESUME_FORMAT:
        raise MalformedFileError(
            path, f"holds a {RESUME_ENTRY!r} entry of an unknown format (not a version-1 dict)"
        )
    check_resume_fields(state, path)
    for key in ("buffers", "optimizer", "monitor"):
        if state.get(key) is not None and not isinstance(state[key], dict):
            raise MalformedFileError(path, f"holds a bad {key!r}: not a dict")
    return state


def check_plain(obj: Any, where: str) -> None:
    """Raise TypeError naming the first value under ``obj`` that ``weights_only`` loading
    would refuse (exact types: a NumPy float64 is a float subclass, yet refused)."""
    kind = type(obj)
    if kind in _TENSORS or kind in _PLAIN_LEAVES:
        return
    if kind not in _CONTAINERS:
        raise TypeError(
            f"save_checkpoint: {where} is a {kind.__module__}.{kind.__qualname__}; a checkpoint "
            "holds only tensors, numbers, strings, bytes, None, torch dtypes/devices and "
            "lists, tuples, sets and dicts of them, so that loading it cannot run code. "
            "Convert it (e.g. float(x) for a NumPy number, x.tolist() for an array)"
        )
    if isinstance(obj, dict):
        for key, value in obj.items():
            check_plain(key, f"a key of {where}")
            check_plain(value, f"{where}[{key!r}]")
    else:
        for i, value in enumerate(obj):
            check_plain(value, f"{where}[{i}]")


# --------------------------------------------------------------------------- saving
def unwrap(network: nn.Module) -> nn.Module:
    """The user's network inside a mixed-precision or DistributedDataParallel wrapper (its
    names are the network's, without the wrapper's ``network.``/``module.``)."""
    if isinstance(network, nn.parallel.DistributedDataParallel):
        network = network.module
    if hasattr(network, "precision") and isinstance(getattr(network, "network", None), nn.Module):
        return network.network
    return network


def is_model(obj: Any) -> bool:
    """Whether ``obj`` is a :class:`jisu.Model` (by its interface: this module sits below
    :mod:`jisu.train.model`)."""
    return not isinstance(obj, nn.Module) and all(
        hasattr(obj, name) for name in ("train_network", "predict_network", "load_state_dict")
    )


def optimizer_of(obj: Any) -> torch.optim.Optimizer | None:
    """The torch optimizer a Model, a train step or a train cell holds (None: none)."""
    for holder in (obj, getattr(obj, "network", None)):
        optimizer = getattr(holder, "optimizer", None)
        if isinstance(optimizer, torch.optim.Optimizer):
            return optimizer
    return None


def network_entries(
    network: nn.Module,
) -> tuple[list[tuple[str, torch.Tensor]], dict[int, str], dict[str, torch.Tensor]]:
    """``network``'s MindSpore entries ``(name, tensor)``, the names by ``id`` of each tensor
    (what :func:`optimizer_entries` takes), and its torch-only state-dict entries by torch
    name (buffers MindSpore's file has no entry for, such as ``num_batches_tracked``)."""
    entries = [(name, t.detach()) for name, t in mindspore_named_tensors(network)]
    names = {id(t): name for name, t in mindspore_named_tensors(network)}
    buffers = {
        key: value.detach()
        for key, value in network.state_dict(keep_vars=True).items()
        if id(value) not in names and isinstance(value, torch.Tensor)
    }
    return entries, names, buffers


def object_entries(save_obj: Any) -> tuple[list[tuple[str, Any]], dict[str, Any] | None]:
    """The entries and resume state of a :class:`jisu.Model` (everything its
    ``state_dict()`` holds), a train step (``Model.train_network``: its network and
    optimizer, as MindSpore's ``TrainOneStepCell`` checkpoint has them), a train cell holding
    an optimizer, or a plain module (its tensors; the resume state holds its torch-only
    buffers, None when it has none)."""
    if is_model(save_obj):
        return model_entries(save_obj)
    # a module, or a train step (Model.train_network, cb_params.train_network)
    network = save_obj if isinstance(save_obj, nn.Module) else unwrap(save_obj.network)
    entries, names, buffers = network_entries(network)
    resume: dict[str, Any] = {"buffers": buffers} if buffers else {}
    optimizer = optimizer_of(save_obj)
    if optimizer is not None:
        more, resume["optimizer"] = optimizer_entries(optimizer, names)
        entries += more
    return entries, resume or None


def model_entries(
    model: Any, extra: dict[str, Any] | None = None
) -> tuple[list[tuple[str, Any]], dict[str, Any]]:
    """A :class:`jisu.Model`'s entries and resume state: what its ``state_dict()`` holds,
    the network and optimizer under MindSpore's names, the rest in the resume state, with
    ``extra`` (ModelCheckpoint's ``monitor``) added to it."""
    state = model.state_dict()
    entries, names, buffers = network_entries(unwrap(model.network))
    resume = {key: state[key] for key in MODEL_KEYS if key in state}
    resume["buffers"] = buffers
    optimizer = optimizer_of(model)
    if optimizer is not None:
        more, resume["optimizer"] = optimizer_entries(optimizer, names)
        entries += more
    resume.update(extra or {})
    return entries, resume


# --------------------------------------------------------------------------- loading
def load_buffers(network: nn.Module, resume: Mapping[str, Any] | None, strict: bool) -> None:
    """Copy the resume state's torch-only buffers into ``network``: all of them when
    ``strict`` (a resume: a missing or extra one is an error), else those ``network`` has
    with the same shape."""
    buffers = (resume or {}).get("buffers") or {}
    if not buffers:
        return
    own = network.state_dict(keep_vars=True)
    if not strict:
        buffers = {
            k: v
            for k, v in buffers.items()
            if k in own and isinstance(v, torch.Tensor) and v.shape == own[k].shape
        }
    missing = set(buffers) - set(own)
    if missing:
        raise ValueError(
            f"load_checkpoint: the checkpoint's buffers {sorted(missing)} are not in the "
            "network; check that the checkpoint is for this network"
        )
    with torch.no_grad():
        for key, value in buffers.items():
            own[key].copy_(value)


def load_optimizer(
    optimizer: torch.optim.Optimizer,
    names: dict[int, str],
    params: Mapping[str, Any],
    resume: Mapping[str, Any] | None,
) -> None:
    """Load the optimizer's MindSpore-named entries of ``params`` (and its exact torch state
    from the resume state, when the file has one) into ``optimizer``."""
    rest = (resume or {}).get("optimizer")
    tensors = {k: v for k, v in params.items() if isinstance(v, torch.Tensor)}
    load_optimizer_entries(optimizer, tensors, names, rest)


def optimizer_names(optimizer: torch.optim.Optimizer, network: nn.Module | None) -> dict[int, str]:
    """id(parameter) -> MindSpore name for ``optimizer``'s parameters: from ``network``, or
    the names a jisu Cell recorded (``trainable_params()``).

    Raises:
        ValueError: a parameter has no name (pass the network too).
    """
    from ..common.parameter_names import parameter_name

    names = {}
    if network is not None:
        names = {id(t): name for name, t in mindspore_named_tensors(unwrap(network))}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in names:
                name = parameter_name(p)
                if name is None:
                    raise ValueError(
                        "load_checkpoint: the optimizer's parameters have no MindSpore names; "
                        "pass the network too (load_checkpoint(path, net, optimizer=...))"
                    )
                names[id(p)] = name
    return names
