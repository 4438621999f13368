"""The entries of a checkpoint file from what ``save_checkpoint`` is given: a module, a train
step, a :class:`jisu.Model`, a list or a dict, and MindSpore's ``append_dict``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from ..nn.cell import parameter_name
from .ckpt_state import RESUME_ENTRY, object_entries


def items_of(
    save_obj: Any, choice_func: Callable[[str], bool] | None
) -> tuple[list[tuple[str, Any]], dict[str, Any] | None]:
    """``save_obj`` as ``(name, tensor or str)`` pairs filtered by ``choice_func``, and the
    resume state that goes with them (None for a list or a dict: they are saved as given; and
    when ``choice_func`` refuses the resume entry's name, ``"_jisu.resume_state"``)."""
    resume = None
    if isinstance(save_obj, nn.Module) or isinstance(getattr(save_obj, "network", None), nn.Module):
        # a module, a Model, a train step (cb_params.train_network) or a train cell: the
        # network's tensors, and the optimizer's as MindSpore's TrainOneStepCell holds them
        pairs, resume = object_entries(save_obj)
    elif isinstance(save_obj, dict):
        pairs = [(k, tensor_or_str(v, k, allow_str=True)) for k, v in save_obj.items()]
    elif isinstance(save_obj, list):
        pairs = []
        for entry in save_obj:
            if isinstance(entry, dict) and "name" in entry and "data" in entry:
                pairs.append((entry["name"], tensor_or_str(entry["data"], entry["name"])))
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
            "save_checkpoint: save_obj must be a torch module, a jisu Model or train step, a "
            "list or a dict. "
            f"Received: {type(save_obj).__name__}"
        )
    if choice_func is not None:
        pairs = [(k, v) for k, v in pairs if choice_func(k)]
        if not choice_func(RESUME_ENTRY):
            resume = None  # the resume entry is chosen like any other name
    return pairs, resume


def tensor_or_str(value: Any, name: Any, allow_str: bool = False) -> torch.Tensor | str:
    """``value`` as a tensor (a NumPy array converted), or as a str when ``allow_str``."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    if allow_str and isinstance(value, str):
        return value
    hint = ""
    if isinstance(value, dict):  # jisu's earlier files held Model.state_dict() as it is
        hint = (
            "; a dict save_obj maps names to tensors (a MindSpore checkpoint is flat): save a "
            "Model's whole state with save_checkpoint(model, path)"
        )
    raise TypeError(
        f"save_checkpoint: {name!r} must be a tensor{' or str' if allow_str else ''}. "
        f"Received: {type(value).__name__}{hint}"
    )


def python_scalar_tensor(value: Any) -> Any:
    """A Python bool, int or float as MindSpore saves it (a Bool, Int64 or Float32 scalar);
    anything else as it is."""
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float32)
    return value


def appended_items(append_dict: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """``append_dict`` as pairs; Python numbers become MindSpore's default-typed scalars."""
    if append_dict is None:
        return []
    if not isinstance(append_dict, dict):
        raise TypeError(
            f"save_checkpoint: append_dict must be a dict. Received: {type(append_dict).__name__}"
        )
    pairs = []
    for key, value in append_dict.items():
        value = python_scalar_tensor(value)
        if not isinstance(value, (str, torch.Tensor, np.ndarray)):
            raise TypeError(
                "save_checkpoint: append_dict values must be int, float, bool, str or tensors. "
                f"Received: {key!r}: {type(value).__name__}"
            )
        pairs.append((key, tensor_or_str(value, key, allow_str=True)))
    return pairs
