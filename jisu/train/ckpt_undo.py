"""All-or-nothing checkpoint loads: what a load may change is saved first and put back when
any step of the load fails, and the error then names the file.

:func:`jisu.load_checkpoint` checks the network's entries before copying any
(:func:`jisu.train.ckpt_params.plan_param_load`) and copies them last; what cannot be checked
without doing it (the optimizer's state, the loss scale, the learning-rate schedule, the
position, the network's torch-only buffers) is loaded under :func:`all_or_nothing`, which
keeps a copy of each beforehand.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

from ..dataset.record.validate import MalformedFileError

#: what a failed load leaves as it was, as the error says
_AS_BEFORE = "the network, optimizer, loss scale and learning-rate schedule are as they were"


def _state(obj: Any) -> Any:
    return None if obj is None else copy.deepcopy(obj.state_dict())


@contextlib.contextmanager
def all_or_nothing(
    path: str,
    *,
    optimizer: Any = None,
    model: Any = None,
    network: nn.Module | None = None,
    resume: Mapping[str, Any] | None = None,
    whole_network: bool = False,
) -> Iterator[None]:
    """Run a load; if it raises, put back ``optimizer``'s state, ``model``'s loss scale,
    schedule and pending position, and ``network``'s torch-only buffers that ``resume``
    holds (all of ``network``'s state with ``whole_network``: a load that copies it before
    it can fail), then raise an error naming ``path`` (a ValueError for a KeyError; the same type
    for ValueError, RuntimeError and TypeError; others, MalformedFileError included, as
    they are)."""
    saved_optimizer = _state(optimizer)
    manager = getattr(model, "loss_scale_manager", None)
    schedule = getattr(model, "_lr_schedule", None)
    saved_manager, saved_schedule = _state(manager), _state(schedule)
    saved_resume = copy.copy(getattr(model, "_resume", None))
    buffers = {}
    if network is not None and whole_network:
        buffers = {k: v.detach().clone() for k, v in network.state_dict(keep_vars=True).items()}
    elif network is not None and resume and isinstance(resume.get("buffers"), dict):
        own = network.state_dict(keep_vars=True)
        buffers = {k: own[k].detach().clone() for k in resume["buffers"] if k in own}
    try:
        yield
    except BaseException as exc:
        if saved_optimizer is not None:
            optimizer.load_state_dict(saved_optimizer)
        if saved_manager is not None:
            manager.load_state_dict(saved_manager)
        if saved_schedule is not None:
            schedule.load_state_dict(saved_schedule)
        if model is not None:
            model._resume = saved_resume
        if buffers:
            own = network.state_dict(keep_vars=True)
            with torch.no_grad():
                for key, value in buffers.items():
                    own[key].copy_(value)
        named = _named(exc, path)
        if named is exc:
            raise
        raise named from exc


def _named(exc: BaseException, path: str) -> BaseException:
    """``exc`` with a message naming the file and saying nothing was loaded."""
    if isinstance(exc, MalformedFileError) or not isinstance(
        exc, (ValueError, RuntimeError, TypeError, KeyError)
    ):
        return exc
    detail = f"it lacks the entry {exc}" if isinstance(exc, KeyError) else str(exc)
    message = f"load_checkpoint: '{path}' does not fit, so nothing was loaded ({_AS_BEFORE}): "
    kind = ValueError if isinstance(exc, KeyError) else type(exc)
    try:
        return kind(message + detail)
    except Exception:  # an exception type whose constructor takes other arguments
        return ValueError(message + detail)
