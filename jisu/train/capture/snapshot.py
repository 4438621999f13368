"""What a captured step froze, pictured from host values: :class:`StepSnapshot`."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _plain(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str))


def _picture(value: Any) -> Any:
    """A host-side picture of a hyper-parameter: a tensor by identity, a plain value as it is."""
    if isinstance(value, torch.Tensor):
        return ("tensor", id(value))
    if isinstance(value, (tuple, list)):
        return tuple(_picture(v) for v in value)
    return value


def _tensor(t: Any) -> Any:
    """A tensor by identity and storage (``p.data = ...`` keeps the one, moves the other)."""
    if t is None:
        return None
    return (id(t), t.data_ptr(), t.dtype, tuple(t.shape))


def _attributes(obj: Any) -> tuple:
    """``obj``'s public plain attributes (hyper-parameters, flags), in a comparable form."""
    return tuple((k, v) for k, v in vars(obj).items() if not k.startswith("_") and _plain(v))


class StepSnapshot:
    """What a captured step froze, pictured from host values only (no device read).

    Built at the capture. Its *shallow* part, cheap enough for every step, pictures the
    optimizer's groups list and each group's hyper-parameters (a tensor by identity), the
    loss-scale manager (its tensors and settings) and the step's clipping norm: what
    schedules and per-step callbacks change. Its *deep* part adds the optimizer's state
    object and each parameter's state tensors, and every module of ``modules`` (the network,
    the loss when it is a module): their order, training flags, plain attributes, hooks,
    parameters and buffers (by identity and storage, and whether each parameter trains).
    :meth:`changed` says what differs now, or None. The snapshot holds the tensors it
    pictured, so that none the graph writes can be freed and its memory reused.
    """

    def __init__(
        self,
        modules: nn.Module | list[nn.Module],
        optimizer: torch.optim.Optimizer,
        manager: Any = None,
        step: Any = None,
    ) -> None:
        self.modules = [modules] if isinstance(modules, nn.Module) else list(modules)
        self.optimizer, self.manager, self.step = optimizer, manager, step
        self._held: list[torch.Tensor] = []
        self._shallow = self._shallow_entries()
        self._deep = self._deep_entries(self._held)

    def _shallow_entries(self) -> list[tuple]:
        opt = self.optimizer
        entries: list[tuple] = [("the optimizer's param_groups", id(opt.param_groups))]
        for i, group in enumerate(opt.param_groups):
            for key, value in group.items():
                if key != "params":
                    entries.append(("group", i, key, _picture(value)))
        manager = self.manager
        if manager is not None:
            tensors = (manager._scale, manager._good, manager._bad)
            entries.append(("the loss-scale manager's state", tuple(map(id, tensors))))
            entries.append(("the loss-scale manager's settings", _attributes(manager)))
        if self.step is not None:
            entries.append(("the step's max_grad_norm", getattr(self.step, "max_grad_norm", None)))
        return entries

    def _deep_entries(self, held: list[torch.Tensor] | None = None) -> list[tuple]:
        opt = self.optimizer
        entries: list[tuple] = [("the optimizer's state", id(opt.state))]
        for i, group in enumerate(opt.param_groups):
            entries.append(("group", i, "params", tuple(map(_tensor, group["params"]))))
            states = []
            for p in group["params"]:
                state = opt.state.get(p)
                items = state.items() if state is not None else ()
                tensors = [(k, v) for k, v in items if isinstance(v, torch.Tensor)]
                if held is not None:
                    held.extend(v for _, v in tensors)
                states.append((id(state), tuple((k, _tensor(v)) for k, v in tensors)))
            entries.append(("group", i, "optimizer state", tuple(states)))
        for root in self.modules:
            for name, module in root.named_modules():
                params, buffers = module._parameters, module._buffers
                entries.append((
                    "module", name or type(module).__name__, id(module), _attributes(module),
                    len(module._forward_hooks), len(module._forward_pre_hooks),
                    len(module._backward_hooks),
                    tuple((k, _tensor(p), p is not None and p.requires_grad)
                          for k, p in params.items()),
                    tuple((k, _tensor(b)) for k, b in buffers.items()),
                ))  # fmt: skip
                if held is not None:
                    held.extend(t for t in (*params.values(), *buffers.values()) if t is not None)
        return entries

    def changed(self, deep: bool = True) -> str | None:
        """What changed since the capture (None: nothing; the graph may replay); only the
        shallow part unless ``deep``."""
        why = _difference(self._shallow, self._shallow_entries())
        if why is None and deep:
            why = _difference(self._deep, self._deep_entries())
        return why


def _difference(taken: list[tuple], now: list[tuple]) -> str | None:
    """What differs between two pictures, in words (None: nothing)."""
    if now == taken:
        return None
    if len(now) != len(taken):
        return "the modules, or the optimizer's groups or hyper-parameters, changed"
    was, new = next((a, b) for a, b in zip(taken, now) if a != b)
    if was[0] == "group":
        what = f"parameter group {was[1]}'s {was[2]}"
    elif was[0] == "module":
        if was[1] != new[1]:
            return "the modules changed after the capture"
        parts = ("place", "attributes", "hooks", "hooks", "hooks", "parameters", "buffers")
        index = next(i for i in range(2, len(was)) if was[i] != new[i])
        what = f"module {was[1]}'s {parts[index - 2]}"
    else:
        what = was[0]
    return f"{what} changed after the capture"
