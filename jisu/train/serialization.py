"""MindSpore's ``mindspore.train.serialization`` on PyTorch: ``save_checkpoint``,
``load_checkpoint`` and ``load_param_into_net``, the one way jisu writes and reads ``.ckpt``
files (also as ``jisu.save_checkpoint``/``jisu.load_checkpoint``, ``jisu.train.*`` and
``jisu.train.checkpoint.*``).

Every ``.ckpt`` jisu writes is a MindSpore checkpoint (the format:
:mod:`jisu.train.ms_checkpoint`) that MindSpore 2.10's ``load_checkpoint`` reads: parameters
and norm-layer moving statistics under MindSpore's names
(:func:`jisu.nn.cell.mindspore_named_tensors`: a torch ``BatchNorm2d``'s ``weight/bias/
running_mean/running_var`` are ``gamma/beta/moving_mean/moving_variance``, an ``Embedding``'s
``weight`` is ``embedding_table``; names given by ``update_parameters_name`` kept), the
optimizer's state under MindSpore's names (``moments.*``, ``learning_rate``, ``global_step``:
:mod:`jisu.train.optimizer_names`), ``append_dict`` entries, and with ``crc_check=True``
MindSpore's CRC-32 trailer (off by default, as in MindSpore: MindSpore 2.0's reader cannot
parse a file with it; 2.10 reads both).
What an exact resume needs beyond that (position, random states, data iterator, schedule,
loss scale, torch-only buffers, the optimizer's exact torch state) travels in one more entry,
``"_jisu.resume_state"`` (:mod:`jisu.train.ckpt_state`), which MindSpore's
``load_param_into_net`` skips. Files of jisu's earlier format (a ``torch.save`` zip archive)
are still read (:mod:`jisu.train.checkpoint_format`); nothing writes them.

Safety: files are parsed as hostile (sizes checked before allocating, a CRC trailer that is
present always verified), and the resume entry is unpickled with ``weights_only``: nothing
but tensors and plain values is rebuilt, so loading a checkpoint runs no code.

Differences from MindSpore 2.10:

- ``load_checkpoint`` returns ``jisu.Parameter`` objects (``torch.nn.Parameter`` with the
  name recorded: ``.name``, ``.asnumpy()``, ``.data``) that do not require gradients.
- A CRC trailer that is present is always verified (MindSpore only with ``crc_check=True``);
  a damaged file raises :class:`MalformedFileError` instead of loading.
- Encryption (``dec_key``/``enc_key``), ``remove_redundancy``, MapParameters and parallel
  merging are refused by name; ``async_save`` writes synchronously (the file is complete when
  the call returns).
- ``save_checkpoint`` writes atomically (temporary file, fsync, rename) with ordinary
  permissions; MindSpore makes the file read-only for its owner.
"""

from __future__ import annotations

import functools
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from ..common.parameter_names import _remember
from ..dataset.record.validate import MalformedFileError
from ..files import atomic_write
from . import ms_checkpoint
from .checkpoint_format import read_state
from .ckpt_items import appended_items, items_of
from .ckpt_params import _refuse, load_param_into_net, plan_param_load
from .ckpt_state import (
    MODEL_KEYS,
    RESUME_ENTRY,
    load_buffers,
    load_optimizer,
    optimizer_names,
    optimizer_of,
    pack_resume,
    unpack_resume,
    unwrap,
)
from .ckpt_undo import all_or_nothing

__all__ = ["MalformedFileError", "load_checkpoint", "load_param_into_net", "save_checkpoint"]

_FORMATS = ("ckpt", "safetensors")


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
    *,
    optimizer: torch.optim.Optimizer | None = None,
    model: Any = None,
) -> OrderedDict[str, Any]:
    """Read a checkpoint as MindSpore's ``{name: Parameter}`` dict; load it into ``net``
    (and ``optimizer``), or resume a :class:`jisu.Model` from it.

    Reads MindSpore's ``.ckpt`` files (MindSpore's own and every one jisu writes), a
    MindSpore-named ``.safetensors`` (``format="safetensors"``), and jisu's earlier
    torch-zip checkpoints (read only: their network under torch's names).

    Args:
        ckpt_file_name: the file.
        net: a torch module to load into (:func:`load_param_into_net`), or None.
        strict_load: passed to :func:`load_param_into_net`.
        filter_prefix: names starting with it (a str or a list/tuple of them) are skipped.
        dec_key, dec_mode: decryption; not supported (``dec_key`` must be None).
        specify_prefix: only names starting with it are loaded.
        choice_func: ``choice_func(name)`` decides which to load; used only when neither
            prefix is given, as in MindSpore.
        crc_check: require a CRC: warn when a ``.ckpt`` has no CRC trailer (one that is
            present is always verified). A file of jisu's earlier format always needs its
            checksum.
        remove_redundancy: must be False (parallel redundancy removal is not supported).
        format: ``"ckpt"`` or ``"safetensors"``.
        optimizer: (jisu, keyword only) a torch optimizer to load the optimizer state into
            (exactly, from a file jisu wrote; from MindSpore's file, what its entries hold).
            Its parameters are named by ``net``, or by the names a jisu Cell recorded.
        model: (jisu, keyword only) a :class:`jisu.Model` to resume instead: its network,
            optimizer, loss scale, learning-rate schedule, and, from a file ``ModelCheckpoint``
            or ``save_checkpoint(model, ...)`` wrote, the position, the data iterator's and
            the random generators' states: the next ``model.train(epochs, data)`` (with
            ``initial_epoch`` left at None) continues exactly where the run stopped.

    Returns:
        ``OrderedDict`` name -> ``jisu.Parameter`` (a ``torch.nn.Parameter`` with its
        ``.name``; CPU, fresh memory) or str (``append_dict`` strings), in file order, as
        MindSpore 2.10's ``load_checkpoint`` returns for the same file:
        ``param_dict["conv1.weight"]``, ``param_dict.get("epoch_num")`` work. A file jisu
        wrote also holds ``"_jisu.resume_state"`` (a uint8 vector; skipped by
        :func:`load_param_into_net`). For a file of jisu's earlier format: the network's
        tensors under torch's names and the file's top-level tensors and strings.

    Raises:
        FileNotFoundError: no such file.
        MalformedFileError: the file is damaged or not a checkpoint.
        ValueError: an unsupported option, nothing left after the filters (MindSpore's
            message, and the filters given; an empty file is a :class:`MalformedFileError`
            instead), or ``net`` together with ``model``.
        TypeError: a prefix of the wrong type.
        ValueError, RuntimeError: the file does not fit ``model`` (or ``net``/``optimizer``):
            another optimizer, a shape or dtype that differs. All or nothing: the message
            names the file and the mismatch, and the network, optimizer, loss scale,
            learning-rate schedule and position are then as they were.

    Example:
        >>> params = load_checkpoint("lenet.ckpt", choice_func=lambda n: n.startswith("fc"))
        >>> load_param_into_net(net, params)
        >>> jisu.load_checkpoint(jisu.latest_checkpoint("ckpt", "run"), model=model)
        >>> model.train(10, data)  # continues after the checkpoint's step
    """
    _refuse(
        "load_checkpoint", dec_key=(dec_key, None), remove_redundancy=(remove_redundancy, False)
    )
    if format not in _FORMATS:
        raise ValueError(
            f"load_checkpoint: format must be 'ckpt' or 'safetensors'. Received: format={format!r}"
        )
    if not isinstance(ckpt_file_name, (str, os.PathLike)):
        raise TypeError(
            f"load_checkpoint: ckpt_file_name must be a path. Received: {ckpt_file_name!r}"
        )
    if model is not None and net is not None:
        raise ValueError("load_checkpoint: pass net= or model=, not both")
    for name, flag in (("strict_load", strict_load), ("crc_check", crc_check)):
        if not isinstance(flag, bool):  # jisu's earlier third argument was the optimizer
            raise TypeError(
                f"load_checkpoint: {name} must be a bool; pass an optimizer as "
                f"optimizer=... (keyword only). Received: {name} of type {type(flag).__name__}"
            )
    specify = _check_prefix(specify_prefix, "specify_prefix")
    filters = _check_prefix(filter_prefix, "filter_prefix")
    keep = choice_func
    if specify or filters:
        keep = functools.partial(_by_prefix, specify=specify, filters=filters)
    path = os.fspath(ckpt_file_name)
    if format == "safetensors":
        from .safetensors_format import read_safetensors

        params: OrderedDict[str, Any] = OrderedDict(
            (k, v)
            for k, v in read_safetensors(path, crc_check=crc_check).items()
            if keep is None or keep(k)
        )
    elif _is_zip(path):  # jisu's earlier format
        return _load_earlier_format(path, net, strict_load, optimizer, model)
    else:
        params = ms_checkpoint.read_ckpt(path, keep, crc_check=crc_check)
    if not params and keep is None:
        raise MalformedFileError(path, "holds no parameter (an empty or truncated file)")
    if not params:  # the file has entries (an empty one is refused by the reader)
        given = [
            f"{name}={value!r}"
            for name, value in (
                ("filter_prefix", filter_prefix),
                ("specify_prefix", specify_prefix),
                ("choice_func", choice_func),
            )
            if value is not None
        ]
        raise ValueError(
            "The loaded parameter dict is empty after filter or specify, please check whether "
            "'filter_prefix' or 'specify_prefix' are set correctly. (load_checkpoint: "
            f"'{path}' holds entries, but none passed {', '.join(given)})"
        )
    params = _as_parameters(params)
    if model is not None:
        load_into_model(model, params, path)
        return params
    if net is not None and not isinstance(net, nn.Module):
        raise TypeError(
            f"load_checkpoint: net must be a torch nn.Module. Received: {type(net).__name__}"
        )
    with all_or_nothing(path, optimizer=optimizer):  # checked, then loaded: all or nothing
        plan = None if net is None else plan_param_load(net, params, strict_load)
        if optimizer is not None:
            resume = unpack_resume(params[RESUME_ENTRY], path) if RESUME_ENTRY in params else None
            load_optimizer(optimizer, optimizer_names(optimizer, net), params, resume)
        if plan is not None:
            plan.apply()
    return params


def load_into_model(model: Any, params: Mapping[str, Any], path: str) -> None:
    """Load a checkpoint's entries into a :class:`jisu.Model`: the network by MindSpore's
    names, its torch-only buffers, the optimizer, and from the resume state the loss scale,
    the learning-rate schedule and the position ``Model.train`` resumes at. All or nothing:
    the network's shapes and dtypes are checked before anything is loaded, and a failure of
    any later step (another optimizer's state, a network without the file's buffers) puts
    back what it changed; the error names ``path``. ``model._checkpoint_path`` then records
    the file (:class:`~jisu.train.callbacks.ModelCheckpoint` continues its run's files)."""
    resume = unpack_resume(params[RESUME_ENTRY], path) if RESUME_ENTRY in params else None
    network = unwrap(model.network)
    optimizer = optimizer_of(model)
    with all_or_nothing(path, optimizer=optimizer, model=model, network=network, resume=resume):
        plan = plan_param_load(network, params)  # every shape and dtype checked first
        load_buffers(network, resume, strict=True)
        if optimizer is not None and (
            (resume is not None and "optimizer" in resume) or "global_step" in params
        ):
            load_optimizer(optimizer, optimizer_names(optimizer, network), params, resume)
        if resume is not None:
            model.load_state_dict({key: resume[key] for key in MODEL_KEYS if key in resume})
        plan.apply()  # the network last: what comes before may still fail and be undone
    model._checkpoint_path = os.path.realpath(path)  # ModelCheckpoint: whose files these are


def _as_parameters(params: OrderedDict[str, Any]) -> OrderedDict[str, Any]:
    """MindSpore's ``Parameter`` values: each tensor (fresh, so not copied again) as a
    ``torch.nn.Parameter`` without gradients, its name recorded (``p.name``)."""
    for name, value in params.items():
        if isinstance(value, torch.Tensor):
            param = torch.nn.Parameter(value, requires_grad=False)
            _remember(param, name)
            params[name] = param
    return params


def _load_earlier_format(
    path: str, net: Any, strict_load: bool, optimizer: Any, model: Any
) -> OrderedDict[str, Any]:
    """A checkpoint of jisu's earlier format (read only): loaded into ``model``, or into
    ``net``/``optimizer`` by torch's names, as it was; returned as a flat dict."""
    with open(path, "rb") as f:
        state = read_state(f, path)
    network = None
    if model is not None:
        network, optimizer = model.network, optimizer_of(model)
    with all_or_nothing(
        path,
        optimizer=optimizer,
        model=model,
        network=net if net is not None else network,
        whole_network=True,
    ):
        if model is not None:
            model.load_state_dict(state)
        if net is not None:
            load_param_into_net(net, state, strict_load)
        if optimizer is not None and model is None and "optimizer" in state:
            optimizer.load_state_dict(state["optimizer"])
    if model is not None:
        model._checkpoint_path = os.path.realpath(path)
    flat: OrderedDict[str, Any] = OrderedDict(state["network"])
    for key, value in state.items():
        if key != "network" and isinstance(value, (torch.Tensor, str)):
            flat[key] = value
    return _as_parameters(flat)


def _is_zip(path: str) -> bool:
    """Whether ``path`` is a zip archive (jisu's earlier format, or a torch file), not a
    MindSpore one (a path that is not a readable file is left to the MindSpore reader's
    errors)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"PK"
    except OSError:
        return False


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


# --------------------------------------------------------------------------- saving
def save_checkpoint(
    save_obj: Any,
    ckpt_file_name: str | os.PathLike,
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
    """Write a MindSpore checkpoint that MindSpore 2.10 reads, atomically.

    Args:
        save_obj: a torch module (its parameters and norm-layer moving statistics, under
            MindSpore's names); a train step (``Model.train_network``,
            ``cb_params.train_network``) or a train cell holding an optimizer
            (``TrainOneStepCell``): the network's tensors and the optimizer's entries, as
            MindSpore's ``TrainOneStepCell`` checkpoint has them; a :class:`jisu.Model`:
            all of that and what an exact resume needs (``load_checkpoint(path,
            model=...)``); a list of ``{"name": str, "data": tensor}`` dicts; a list of
            parameters whose MindSpore names a jisu ``Cell`` recorded
            (``trainable_params()``); or a dict name -> tensor, NumPy array or str (such as
            ``load_checkpoint``'s result). Modules, steps and Models also get the entry
            ``"_jisu.resume_state"`` (:mod:`jisu.train.ckpt_state`) when they have state
            MindSpore's file has no place for (a module: only its torch-only buffers).
        ckpt_file_name: the file; ``".ckpt"`` (``".safetensors"``) is appended when the name
            does not end with ``"ckpt"`` (``"safetensors"``), as MindSpore does.
        integrated_save: accepted (only matters for MindSpore's model parallelism).
        async_save: accepted (``False``, ``True``, ``"thread"``, ``"process"``); jisu writes
            before returning.
        append_dict: extra entries: int (saved Int64), float (Float32), bool (Bool), str or
            tensor; not filtered by ``choice_func``, as in MindSpore.
        enc_key, enc_mode: encryption; not supported (``enc_key`` must be None).
        choice_func: ``choice_func(name)`` decides which entries of ``save_obj`` to save.
        crc_check: write MindSpore's CRC-32 (a ``.ckpt``'s trailer, a ``.safetensors``'s
            ``crc_num``), which jisu and MindSpore 2.10 verify on load (a damaged file is
            then refused). Off by default, as in MindSpore: MindSpore 2.0's ``load_checkpoint``
            cannot parse a ``.ckpt`` with the trailer.
        format: ``"ckpt"`` or ``"safetensors"`` (MindSpore-named tensors; strings go to the
            file's metadata).
        kwargs: MindSpore's ``incremental``, ``global_step_num``, ``remove_redundancy`` are
            accepted and ignored; others are refused.

    Raises:
        TypeError: ``save_obj``, a name or a value of an unsupported type.
        ValueError: an unsupported option, or a name given twice.
        OSError: the file could not be written (the previous one is left intact).

    Example:
        >>> jisu.save_checkpoint(net, "lenet.ckpt")  # mindspore.load_checkpoint reads it
        >>> jisu.save_checkpoint(model, "resume.ckpt")  # also what an exact resume needs
    """
    _refuse("save_checkpoint", enc_key=(enc_key, None))
    if format not in _FORMATS:
        raise ValueError(
            f"save_checkpoint: format must be 'ckpt' or 'safetensors'. Received: format={format!r}"
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
    if not isinstance(ckpt_file_name, (str, os.PathLike)):
        raise TypeError(
            f"save_checkpoint: ckpt_file_name must be a path. Received: {ckpt_file_name!r}"
        )
    items, resume = items_of(save_obj, choice_func)
    write_checkpoint(
        os.fspath(ckpt_file_name), items + appended_items(append_dict), resume, crc_check, format
    )


def write_checkpoint(
    ckpt_file_name: str,
    items: list[tuple[str, Any]],
    resume: dict[str, Any] | None = None,
    crc_check: bool = False,
    format: str = "ckpt",
) -> str:
    """Write ``items`` (``(name, tensor or str)``) and, last, the resume entry of ``resume``
    (None: none) to ``ckpt_file_name`` atomically; what :func:`save_checkpoint` and
    ``ModelCheckpoint`` write through. Returns the path written (``".ckpt"`` appended when
    the name does not end with ``"ckpt"``).

    Raises:
        TypeError: a name or a value of an unsupported type, or a resume state holding
            something other than tensors and plain values.
        ValueError: a name given twice.
        OSError: the file could not be written (the previous one is left intact).
    """
    path = os.path.realpath(ckpt_file_name)
    if os.path.isdir(path):
        raise IsADirectoryError(f"save_checkpoint: '{path}' is a folder; give a file name")
    if not path.endswith(format):
        path += "." + format
    if resume is not None:
        items = [*items, (RESUME_ENTRY, pack_resume(resume))]
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
    if format == "safetensors":
        from .safetensors_format import write_safetensors

        tensors = [(k, v.detach()) for k, v in items if isinstance(v, torch.Tensor)]
        strings = {k: v for k, v in items if isinstance(v, str)}
        write_safetensors(path, tensors, strings or None, crc_check=bool(crc_check))
        return path
    with atomic_write(path) as f:
        ms_checkpoint.write_ckpt(f, items, crc_check=bool(crc_check))
    return path


# MindSpore's module-level names that model-zoo export scripts import from here
from .. import context  # noqa: E402, F401
from ..common.tensor import Tensor  # noqa: E402, F401
from ._serialization_gaps import *  # noqa: E402, F403
from ._serialization_gaps import _update_param  # noqa: E402, F401
from .exporting import export  # noqa: E402, F401
from .safetensors_convert import ckpt_to_safetensors, safetensors_to_ckpt  # noqa: E402, F401
