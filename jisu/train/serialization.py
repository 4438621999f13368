"""MindSpore's ``mindspore.train.serialization`` on PyTorch: ``load_checkpoint``,
``load_param_into_net`` and ``save_checkpoint`` for MindSpore's ``.ckpt`` files (the format:
:mod:`jisu.train.ms_checkpoint`), so a MindSpore script's checkpoints work after swapping its
imports, and files move both ways between MindSpore and jisu.

Parameters are matched by MindSpore's names (:func:`jisu.nn.cell.mindspore_named_tensors`:
a torch ``BatchNorm2d``'s ``weight/bias/running_mean/running_var`` are ``gamma/beta/
moving_mean/moving_variance``, an ``Embedding``'s ``weight`` is ``embedding_table``), so a
plain torch module with the same structure loads a MindSpore network's checkpoint.

Differences from MindSpore 2.10:

- ``load_checkpoint`` returns an ``OrderedDict`` of torch tensors (CPU, fresh copies), not
  ``Parameter`` objects; ``append_dict`` strings stay ``str`` as in MindSpore.
- A CRC trailer that is present is always verified (MindSpore only with ``crc_check=True``);
  a damaged file raises :class:`MalformedFileError` instead of loading.
- Encryption (``dec_key``/``enc_key``), ``format="safetensors"``, ``remove_redundancy``,
  MapParameters and parallel merging are refused by name; ``async_save`` writes synchronously
  (the file is complete when the call returns).
- ``save_checkpoint`` writes atomically (temporary file, fsync, rename) with ordinary
  permissions; MindSpore makes the file read-only for its owner.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ..dataset.record.validate import MalformedFileError
from ..files import atomic_write
from ..nn.cell import mindspore_named_tensors, parameter_name
from . import ms_checkpoint
from .checkpoint_format import read_state

__all__ = ["MalformedFileError", "load_checkpoint", "load_param_into_net", "save_checkpoint"]

_FLOATS = {torch.float16, torch.bfloat16, torch.float32, torch.float64}
_INTS = {torch.int8, torch.int16, torch.int32, torch.int64}


# --------------------------------------------------------------------------- loading
def load_checkpoint(
    ckpt_file_name: str | os.PathLike,
    net: nn.Module | None = None,
    strict_load: bool = False,
    filter_prefix: str | list[str] | tuple[str, ...] | None = None,
    dec_key: bytes | None = None,
    dec_mode: str = "AES-GCM",
    specify_prefix: str | list[str] | tuple[str, ...] | None = None,
    choice_func: Callable[[str], bool] | None = None,
    crc_check: bool = False,
    remove_redundancy: bool = False,
    format: str = "ckpt",  # MindSpore's name
) -> OrderedDict[str, torch.Tensor | str]:
    """Read a MindSpore ``.ckpt`` file; load it into ``net`` when given.

    Args:
        ckpt_file_name: the file.
        net: a torch module to load into (:func:`load_param_into_net`), or None.
        strict_load: passed to :func:`load_param_into_net`.
        filter_prefix: names starting with it (a str or a list/tuple of them) are skipped.
        dec_key, dec_mode: decryption; not supported (``dec_key`` must be None).
        specify_prefix: only names starting with it are loaded.
        choice_func: ``choice_func(name)`` decides which to load; used only when neither
            prefix is given, as in MindSpore.
        crc_check: warn when the file has no CRC trailer (one that is present is always
            verified).
        remove_redundancy: must be False (parallel redundancy removal is not supported).
        format: must be ``"ckpt"``.

    Returns:
        ``OrderedDict`` name -> torch tensor (or str for ``append_dict`` strings), in file
        order. (MindSpore returns ``Parameter`` objects.) A jisu checkpoint (a zip archive
        written by ``jisu.save_checkpoint`` or ``ModelCheckpoint``) is read by
        :func:`jisu.train.checkpoint.load_checkpoint` and its dict returned as that gives it
        (``load_param_into_net`` takes it); the filters do not apply to it.

    Raises:
        FileNotFoundError: no such file.
        MalformedFileError: the file is damaged or not a MindSpore checkpoint.
        ValueError: an unsupported option, or nothing left after the filters.
        TypeError: a prefix of the wrong type.

    Example:
        >>> params = load_checkpoint("lenet.ckpt", choice_func=lambda n: n.startswith("fc"))
        >>> load_param_into_net(net, params)
    """
    _refuse(
        "load_checkpoint", dec_key=(dec_key, None), remove_redundancy=(remove_redundancy, False)
    )
    if format != "ckpt":
        raise ValueError(
            "load_checkpoint: jisu reads MindSpore's 'ckpt' format only. "
            f"Received: format={format!r}"
        )
    if not isinstance(ckpt_file_name, (str, os.PathLike)):
        raise TypeError(
            f"load_checkpoint: ckpt_file_name must be a path. Received: {ckpt_file_name!r}"
        )
    specify = _check_prefix(specify_prefix, "specify_prefix")
    filters = _check_prefix(filter_prefix, "filter_prefix")
    keep = choice_func
    if specify or filters:
        keep = functools.partial(_by_prefix, specify=specify, filters=filters)
    path = os.fspath(ckpt_file_name)
    if _is_zip(path):  # jisu's own checkpoint (jisu.save_checkpoint, ModelCheckpoint)
        with open(path, "rb") as f:
            state = read_state(f, path, crc_check=False)  # a CRC present is verified
        if net is not None:
            load_param_into_net(net, state, strict_load)
        return state
    params = ms_checkpoint.read_ckpt(path, keep, crc_check=crc_check)
    if not params:
        raise ValueError(
            f"load_checkpoint: no parameter of '{path}' is left after filter_prefix, "
            "specify_prefix or choice_func; check them"
        )
    if net is not None:
        load_param_into_net(net, params, strict_load)
    return params


def _is_zip(path: str) -> bool:
    """Whether ``path`` is a zip archive (a jisu or torch checkpoint), not a MindSpore one
    (a path that is not a readable file is left to the MindSpore reader's errors)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"PK"
    except OSError:
        return False


def _refuse(where: str, **options: tuple[Any, Any]) -> None:
    for name, (value, default) in options.items():
        if value is not default and value != default:
            raise ValueError(
                f"{where}: jisu does not support {name!r} (MindSpore's encryption and parallel "
                f"options); leave it at {default!r}. Received: {name}={value!r}"
            )


def _check_prefix(prefix: Any, name: str) -> tuple[str, ...] | None:
    if prefix is None:
        return None
    if isinstance(prefix, str):
        prefix = (prefix,)
    if not isinstance(prefix, (list, tuple)) or not all(isinstance(p, str) for p in prefix):
        raise TypeError(
            f"load_checkpoint: {name} must be a str or a list/tuple of str. Received: {prefix!r}"
        )
    if not prefix or "" in prefix:
        raise ValueError(
            f"load_checkpoint: {name} must not be empty or hold ''. Received: {prefix!r}"
        )
    return tuple(prefix)


def _by_prefix(name: str, specify: tuple[str, ...] | None, filters: tuple[str, ...] | None):
    if specify and not name.startswith(specify):
        return False
    return not (filters and name.startswith(filters))


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
    are strings are skipped.

    Args:
        net: any torch module.
        parameter_dict: name -> tensor (NumPy arrays are accepted too) or str, as
            :func:`load_checkpoint` returns for a MindSpore file; or a jisu checkpoint's dict
            (``Model.state_dict()``, what ``ModelCheckpoint`` writes), whose ``network`` is
            loaded by torch's names.
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
    strict_load = bool(strict_load)
    targets = list(mindspore_named_tensors(net))
    param_not_load: list[str] = []
    ckpt_not_load = list(parameter_dict)
    for name, target in targets:
        if name in parameter_dict:
            value = parameter_dict[name]
            if isinstance(value, str):
                continue  # MindSpore skips what has no data, and keeps it in neither list
            _update(name, target, value, strict_load)
            ckpt_not_load.remove(name)
        elif not name.startswith("accu_grads"):
            param_not_load.append(name)
    if param_not_load and not strict_load:
        _load_under_prefix(targets, parameter_dict, param_not_load, strict_load)
    if param_not_load:
        warnings.warn(
            f"load_param_into_net: {len(param_not_load)} parameters of the net are not in the "
            f"checkpoint and were not loaded: {param_not_load}",
            stacklevel=2,
        )
    return param_not_load, ckpt_not_load


def _load_jisu_network(
    net: nn.Module, state: dict[str, Any], strict_load: bool
) -> tuple[list[str], list[str]]:
    """The network of a jisu checkpoint (``Model.state_dict()``, torch's names) into ``net``:
    what a ported script's ``load_param_into_net(net, load_checkpoint(path))`` does with the
    files ``ModelCheckpoint`` writes. Returns torch's missing and unexpected names."""
    result = net.load_state_dict(state, strict=bool(strict_load))
    if result.missing_keys:
        warnings.warn(
            f"load_param_into_net: {len(result.missing_keys)} parameters of the net are not in "
            f"the checkpoint and were not loaded: {result.missing_keys}",
            stacklevel=3,
        )
    return list(result.missing_keys), list(result.unexpected_keys)


def _load_under_prefix(targets, parameter_dict, param_not_load, strict_load) -> None:
    """MindSpore's second pass: find a checkpoint name ending with a missing net name, take
    what precedes it as a prefix, and load every missing name found under that prefix;
    repeat while that finds a new prefix."""
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
            stacklevel=3,
        )
        loaded = 0
        for name, target in targets:
            if name in param_not_load and prefix + name in parameter_dict:
                value = parameter_dict[prefix + name]
                if isinstance(value, str):
                    continue
                _update(name, target, value, strict_load)
                param_not_load.remove(name)
                loaded += 1
        if not loaded:  # only a str matched: nothing more can be found
            return


def _update(name: str, target: torch.Tensor, value: Any, strict_load: bool) -> None:
    """Copy ``value`` into ``target`` in place, checking shape and dtype as MindSpore does."""
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
    with torch.no_grad():
        target.copy_(value.to(dtype=target.dtype))


# --------------------------------------------------------------------------- saving
def save_checkpoint(
    save_obj: nn.Module | list | dict,
    ckpt_file_name: str,
    integrated_save: bool = True,
    async_save: bool | str = False,
    append_dict: dict[str, Any] | None = None,
    enc_key: bytes | None = None,
    enc_mode: str = "AES-GCM",
    choice_func: Callable[[str], bool] | None = None,
    crc_check: bool = False,
    format: str = "ckpt",  # MindSpore's name
    **kwargs: Any,
) -> None:
    """Write a MindSpore ``.ckpt`` file that MindSpore 2.x reads, atomically.

    Args:
        save_obj: a torch module (its parameters and norm-layer moving statistics, under
            MindSpore's names); a list of ``{"name": str, "data": tensor}`` dicts; a list of
            tensors whose MindSpore names a jisu ``Cell`` recorded (``trainable_params()``);
            or a dict name -> tensor, NumPy array or str.
        ckpt_file_name: the file; ``".ckpt"`` is appended when the name does not end with
            ``"ckpt"``, as MindSpore does.
        integrated_save: accepted (only matters for MindSpore's model parallelism).
        async_save: accepted (``False``, ``True``, ``"thread"``, ``"process"``); jisu writes
            before returning.
        append_dict: extra entries: int (saved Int64), float (Float32), bool (Bool), str or
            tensor; not filtered by ``choice_func``, as in MindSpore.
        enc_key, enc_mode: encryption; not supported (``enc_key`` must be None).
        choice_func: ``choice_func(name)`` decides which entries of ``save_obj`` to save.
        crc_check: append MindSpore's CRC-32 trailer.
        format: must be ``"ckpt"``.
        kwargs: MindSpore's ``incremental``, ``global_step_num``, ``remove_redundancy`` are
            accepted and ignored; others are refused.

    Raises:
        TypeError: ``save_obj``, a name or a value of an unsupported type.
        ValueError: an unsupported option.
        OSError: the file could not be written (the previous one is left intact).
    """
    _refuse("save_checkpoint", enc_key=(enc_key, None))
    if format != "ckpt":
        raise ValueError(
            "save_checkpoint: jisu writes MindSpore's 'ckpt' format only. "
            f"Received: format={format!r}"
        )
    unknown = set(kwargs) - {"incremental", "global_step_num", "remove_redundancy"}
    if unknown:
        raise TypeError(f"save_checkpoint: unexpected arguments {sorted(unknown)}")
    if not isinstance(async_save, (bool, str)) or async_save not in (
        False,
        True,
        "thread",
        "process",
    ):
        raise ValueError(
            "save_checkpoint: async_save must be a bool, 'thread' or 'process'. "
            f"Received: async_save={async_save!r}"
        )
    if not isinstance(ckpt_file_name, str):
        raise TypeError(
            f"save_checkpoint: ckpt_file_name must be a str. Received: {ckpt_file_name!r}"
        )
    path = os.path.realpath(ckpt_file_name)
    if os.path.isdir(path):
        raise IsADirectoryError(f"save_checkpoint: '{path}' is a folder; give a file name")
    if not path.endswith("ckpt"):
        path += ".ckpt"
    items = _items(save_obj, choice_func) + _appended(append_dict)
    seen: set[str] = set()
    for name, value in items:
        if (
            not isinstance(name, str)
            or not name
            or len(name.encode()) > ms_checkpoint.MAX_TAG_BYTES
        ):
            raise TypeError(f"save_checkpoint: a name must be a non-empty str. Received: {name!r}")
        if name in seen:
            raise ValueError(f"save_checkpoint: the name {name!r} appears twice")
        seen.add(name)
        if isinstance(value, torch.Tensor):
            ms_checkpoint.tensor_type_of(value, name)
    with atomic_write(path) as f:
        ms_checkpoint.write_ckpt(f, items, crc_check=bool(crc_check))


def _items(save_obj: Any, choice_func: Callable[[str], bool] | None) -> list[tuple[str, Any]]:
    """``save_obj`` as ``(name, tensor or str)`` pairs, filtered by ``choice_func``."""
    if isinstance(save_obj, nn.Module):
        pairs = list(mindspore_named_tensors(save_obj))
    elif isinstance(getattr(save_obj, "network", None), nn.Module):
        # a Model's train step (cb_params.train_network): its network's tensors (MindSpore's
        # TrainOneStepCell also holds the optimizer's moments, learning_rate, global_step)
        net = save_obj.network
        net = net.network if hasattr(net, "precision") and hasattr(net, "network") else net
        pairs = list(mindspore_named_tensors(net))
    elif isinstance(save_obj, dict):
        pairs = [(k, _tensor_or_str(v, k, allow_str=True)) for k, v in save_obj.items()]
    elif isinstance(save_obj, list):
        pairs = []
        for entry in save_obj:
            if isinstance(entry, dict) and "name" in entry and "data" in entry:
                pairs.append((entry["name"], _tensor_or_str(entry["data"], entry["name"])))
            elif isinstance(entry, torch.Tensor) and parameter_name(entry) is not None:
                pairs.append((parameter_name(entry), entry))
            else:
                raise TypeError(
                    "save_checkpoint: a list save_obj holds {'name': str, 'data': tensor} "
                    "dicts, or parameters of a jisu Cell (their names are recorded by "
                    f"trainable_params()). Received: an entry {type(entry).__name__}"
                )
    else:
        raise TypeError(
            "save_checkpoint: save_obj must be a torch module, a list or a dict. "
            f"Received: {type(save_obj).__name__}"
        )
    if choice_func is not None:
        pairs = [(k, v) for k, v in pairs if choice_func(k)]
    return pairs


def _tensor_or_str(value: Any, name: Any, allow_str: bool = False) -> torch.Tensor | str:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if allow_str and isinstance(value, str):
        return value
    raise TypeError(
        f"save_checkpoint: {name!r} must be a tensor{' or str' if allow_str else ''}. "
        f"Received: {type(value).__name__}"
    )


def _appended(append_dict: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """``append_dict`` as pairs; Python numbers become MindSpore's default-typed scalars."""
    if append_dict is None:
        return []
    if not isinstance(append_dict, dict):
        raise TypeError(
            f"save_checkpoint: append_dict must be a dict. Received: {type(append_dict).__name__}"
        )
    pairs = []
    for key, value in append_dict.items():
        if isinstance(value, bool):
            value = torch.tensor(value)
        elif isinstance(value, int):
            value = torch.tensor(value, dtype=torch.int64)
        elif isinstance(value, float):
            value = torch.tensor(value, dtype=torch.float32)
        elif not isinstance(value, (str, torch.Tensor, np.ndarray)):
            raise TypeError(
                "save_checkpoint: append_dict values must be int, float, bool, str or tensors. "
                f"Received: {key!r}: {type(value).__name__}"
            )
        pairs.append((key, _tensor_or_str(value, key, allow_str=True)))
    return pairs


# MindSpore's module-level names that model-zoo export scripts import from here
from .. import context  # noqa: E402, F401
from ..common.tensor import Tensor  # noqa: E402, F401
from ._serialization_gaps import *  # noqa: E402, F403
from ._serialization_gaps import _update_param  # noqa: E402, F401
from .exporting import export  # noqa: E402, F401
from .safetensors_convert import ckpt_to_safetensors, safetensors_to_ckpt  # noqa: E402, F401
