"""An optimizer's state under MindSpore's names, for checkpoints MindSpore reads.

MindSpore's checkpoint of a ``TrainOneStepCell(net, optimizer)`` holds the optimizer's state as
parameters: ``global_step`` (int32, shape ``(1,)``), ``learning_rate`` (a float32 scalar; a
per-step list's float32 table, written after the slots; none for a ``LearningRateSchedule``;
``learning_rate_group_<i>`` per group with group rates), the optimizer's own scalars
(``momentum``, ``beta1_power``, ``beta2_power``) and one slot per parameter and kind,
``<slot>.<parameter name>`` (``moments.*``; ``moment1.*``/``moment2.*``/``vhat.*`` ...), in
the order MindSpore's optimizer creates them (the slots in ``order_params``' order where a
group gives one; every name prefixed after ``optimizer.update_parameters_name(prefix)``:
``optim_g.global_step``, ``optim_g.moment1.<name>``), recorded from MindSpore 2.10, the same
in 2.0.0 (tests/fixtures/ms_optimizer_ckpt/).

:func:`optimizer_entries` gives those entries for a jisu.nn optimizer (the same names, order,
dtypes and shapes as MindSpore's file of the equivalent optimizer), for ``torch.optim.SGD``
(``learning_rate``, ``momentum``, ``moments.*``, as MindSpore's ``Momentum``; no
``global_step``: torch's SGD counts no steps), ``Adam``/``AdamW`` (as MindSpore's ``Adam``:
``moment1.*``, ``moment2.*``, ``vhat.*``, beta powers from the step) and, for any other torch
optimizer, every per-parameter state tensor as ``<state key>.<parameter name>`` (jisu's naming;
MindSpore loads them as parameters its network does not have, which ``load_param_into_net``
leaves out); and the remainder (``rest``) that rebuilds ``optimizer.state_dict()`` exactly.
:func:`load_optimizer_entries` is the inverse; without ``rest`` (a file MindSpore wrote) it
restores what the file holds (see its docstring for what it cannot).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import torch

from ..nn.optim import LARS, Optimizer
from ._optimizer_slots import Item, Layout
from ._optimizer_slots_jisu import ConstructLayout, JisuLayout, LarsLayout
from ._optimizer_slots_torch import TorchAdamLayout, TorchLayout, TorchSGDLayout

__all__ = ["load_optimizer_entries", "optimizer_entries"]

#: what marks, in ``rest``, a state tensor that travels as an entry: ``(MARK, entry name)``
MARK = "jisu.optimizer_entry"
#: the version of ``rest``'s layout
REST_FORMAT = 1


def optimizer_entries(
    optimizer: torch.optim.Optimizer, names: dict[int, str]
) -> tuple[list[tuple[str, torch.Tensor]], dict]:
    """The optimizer's state as MindSpore-named checkpoint entries, and the remainder.

    Args:
        optimizer: a jisu.nn optimizer, a torch optimizer, or any object with
            ``state_dict()``/``load_state_dict()``.
        names: ``id(parameter)`` -> the parameter's MindSpore name
            (``jisu.nn.cell.mindspore_named_tensors``). A parameter without a name keeps its
            state in ``rest``.

    Returns:
        ``(entries, rest)``: ``entries`` in MindSpore's order, with MindSpore's dtypes and
        shapes (the state tensors themselves, not copies: write them before the next step);
        ``rest``, a dict of plain values and small tensors that :func:`load_optimizer_entries`
        needs with the entries to rebuild ``optimizer.state_dict()`` bit for bit (the state
        dict with each tensor that is an entry replaced by ``(MARK, name)``).
    """
    state = optimizer.state_dict()
    layout, prefix = _layout(optimizer, names)
    items = layout.items(state) if layout is not None else []
    for item in items:
        item.name = prefix + item.name
    marked = _marked(state, items)
    rest = {
        "format": REST_FORMAT,
        "type": _type_name(optimizer),
        "state_dict": marked,
    }
    return [(item.name, item.tensor) for item in items], rest


def load_optimizer_entries(
    optimizer: torch.optim.Optimizer,
    entries: Mapping[str, torch.Tensor],
    names: dict[int, str],
    rest: dict | None,
) -> None:
    """Load MindSpore-named entries (and ``rest``) into ``optimizer``.

    With ``rest`` from :func:`optimizer_entries`, ``optimizer.state_dict()`` afterwards
    equals the saved one bit for bit (training continues exactly). With ``rest=None`` (a file
    MindSpore wrote, or one whose remainder is lost), what the file holds is restored, as
    MindSpore's ``load_param_into_net`` into the optimizer would: each parameter's slots, the
    step (``global_step``; a torch ``Adam``'s per-parameter step from it, or from the beta
    powers), ``learning_rate`` (a static rate, or a per-step table of the same length) and
    ``momentum``. What a MindSpore file cannot give, and stays as the optimizer has it: the
    count of overflow-skipped steps (jisu's per-step rate table is read at the step count),
    a torch optimizer's per-parameter steps where they differed, the state of torch optimizers
    MindSpore has no equivalent of (unless jisu wrote their ``<key>.<name>`` entries), and a
    rate given by a ``LearningRateSchedule`` (MindSpore saves none). A warning names the
    parameters whose slots the file lacks.

    Args:
        optimizer: the optimizer to fill (as built by the script: its groups and rates).
        entries: the checkpoint's entries (all of them, or the optimizer's), name -> tensor.
        names: ``id(parameter)`` -> the parameter's MindSpore name.
        rest: the remainder :func:`optimizer_entries` returned, or None.

    Raises:
        ValueError: ``rest`` is of another optimizer type or version, an entry it refers to is
            missing, or a slot's shape differs from its parameter's.
    """
    if rest is not None:
        _load_exact(optimizer, entries, rest)
        return
    layout, prefix = _layout(optimizer, names)
    if prefix:
        entries = {k[len(prefix) :]: v for k, v in entries.items() if k.startswith(prefix)}
    if layout is None:
        warnings.warn(
            f"load_optimizer_entries: {_type_name(optimizer)} has no MindSpore-named state; "
            "its state is left as it is",
            stacklevel=2,
        )
        return
    missing = layout.restore(entries)
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        warnings.warn(
            f"load_optimizer_entries: the checkpoint has no {type(optimizer).__name__} slots "
            f"for {len(missing)} parameter(s) ({shown}): their optimizer state is left as it "
            "is (fresh, in a new optimizer)",
            stacklevel=2,
        )


def layout_of(opt: Any, names: dict[int, str]) -> Layout | None:
    """Where ``opt`` keeps its state and under which MindSpore names (None: an optimizer jisu
    does not know, whose state travels whole in ``rest``)."""
    if isinstance(opt, LARS):
        return LarsLayout(opt, names)
    if isinstance(opt, Optimizer):
        return ConstructLayout(opt, names) if opt._steps_by_construct else JisuLayout(opt, names)
    if type(opt) is torch.optim.SGD:
        return TorchSGDLayout(opt, names)
    if type(opt) in (torch.optim.Adam, torch.optim.AdamW):
        return TorchAdamLayout(opt, names)
    if isinstance(opt, torch.optim.Optimizer) and type(opt).state_dict is _TORCH_STATE_DICT:
        return TorchLayout(opt, names)
    return None


_TORCH_STATE_DICT = torch.optim.Optimizer.state_dict


def _layout(opt: Any, names: dict[int, str]) -> tuple[Layout | None, str]:
    """``opt``'s layout, and the prefix its ``update_parameters_name`` gave its entries.

    MindSpore's ``optimizer.update_parameters_name(prefix)`` renames every parameter the
    optimizer holds: the network's (``prefix + name``, which ``names`` already has) and its
    own, made before (``prefix + "moment1." + name``, ``prefix + "global_step"``): the
    layout works on the names without the prefix."""
    prefix = getattr(opt, "_name_prefix", "") or ""
    if prefix:
        names = {k: v[len(prefix) :] if v.startswith(prefix) else v for k, v in names.items()}
    return layout_of(opt, names), prefix


def _type_name(optimizer: Any) -> str:
    kind = type(optimizer)
    return f"{kind.__module__}.{kind.__qualname__}"


def _marked(state: dict, items: list[Item]) -> dict:
    """A copy of the state dict with each entry's tensor replaced by its mark: the containers
    on the way are copied (once each), the caller's state dict is left as it is."""
    out = dict(state)
    copied: set[tuple] = set()
    for item in items:
        if item.origin is None:
            continue
        node, path = out, item.origin
        for depth, key in enumerate(path[:-1]):
            child = node[key]
            if path[: depth + 1] not in copied:
                child = dict(child) if isinstance(child, dict) else list(child)
                node[key] = child
                copied.add(path[: depth + 1])
            node = child
        node[path[-1]] = (MARK, item.name)
    return out


def _unmarked(value: Any, entries: Mapping[str, torch.Tensor], where: str) -> Any:
    # (a list too: a remainder that went through JSON)
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] == MARK:
        name = value[1]
        if name not in entries:
            raise ValueError(
                f"load_optimizer_entries: the checkpoint lacks '{name}', which the saved "
                f"optimizer state ({where}) refers to"
            )
        tensor = entries[name]
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(
                f"load_optimizer_entries: '{name}' must be a tensor. Received "
                f"{type(tensor).__name__}"
            )
        return tensor.detach().clone()
    if isinstance(value, dict):
        return {k: _unmarked(v, entries, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_unmarked(v, entries, where) for v in value]
    return value


def _same_type(saved: Any, current: str) -> bool:
    """Whether the saved optimizer type is the current one: the same module and name, or the
    same name of a user's class whose module is named otherwise now (a script's ``__main__``
    class imported by another script)."""
    if saved == current:
        return True
    if not isinstance(saved, str):
        return False
    libraries = ("torch.", "jisu.")
    return saved.rpartition(".")[2] == current.rpartition(".")[2] and not any(
        name.startswith(libraries) for name in (saved, current)
    )


def _load_exact(optimizer: Any, entries: Mapping[str, torch.Tensor], rest: dict) -> None:
    if not isinstance(rest, dict) or "state_dict" not in rest:
        raise ValueError(
            "load_optimizer_entries: rest must be the dict optimizer_entries returned. "
            f"Received {type(rest).__name__}"
        )
    if rest.get("format") != REST_FORMAT:
        raise ValueError(
            f"load_optimizer_entries: rest has format {rest.get('format')!r}; this jisu reads "
            f"format {REST_FORMAT}"
        )
    saved, current = rest.get("type"), _type_name(optimizer)
    if not _same_type(saved, current):
        raise ValueError(
            f"load_optimizer_entries: the saved state is of {saved}, the optimizer is "
            f"{current}: build the optimizer the run was saved with"
        )
    state = _unmarked(rest["state_dict"], entries, saved)
    optimizer.load_state_dict(state)
