"""MindSpore's optimizer base on ``torch.optim.Optimizer``: parameters, groups, weight decay,
loss scale and learning rates the MindSpore way, one update per ``step()`` the torch way.

What a MindSpore script passes works unchanged:

- ``params``: a network's parameters (``net.trainable_params()``, ``net.parameters()``,
  ``net.named_parameters()``), or MindSpore's group dicts (keys ``params``, ``lr``,
  ``weight_decay``, ``order_params``);
- ``learning_rate``: a number, a 0-d tensor, a per-step list/array/1-D tensor (the
  ``nn.*_lr`` helpers) or a :class:`~jisu.nn.LearningRateSchedule`. A dynamic rate is
  computed on the device from the optimizer's ``global_step`` inside ``step()``: per step in
  sink mode too, with no host synchronisation (and capturable in a CUDA graph);
- ``weight_decay``: added to the gradients before the update, of every parameter whose name
  holds neither ``beta`` nor ``gamma`` (MindSpore's rule, on the names of
  ``net.trainable_params()`` or ``named_parameters()``; parameters without a name all decay),
  or of every parameter of a group whose ``weight_decay`` is > 0;
- ``loss_scale``: the gradients are divided by it (the decay is scaled to match), for a loss
  scaled by a fixed ``FixedLossScaleManager(drop_overflow_update=False)``.

``group["lr"]`` holds a static rate as a float (torch's LR schedulers and jisu's
``LearningRateScheduler`` can set it) and a dynamic one as a 0-d tensor: the rate of the last
step. ``get_lr()`` is the rate of the next step. ``global_step`` counts the steps applied (an
overflow skipped by jisu's loss scaling is not one, as in MindSpore); ``state_dict()`` carries
it, so a resumed run continues the schedule.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

from ..cell import parameter_name, rename_parameter
from ..learning_rate_schedule import LearningRateSchedule
from ._mindspore_api import MindSporeOptimizerAPI, ParameterTuple

#: MindSpore's group keys; anything else is refused (MindSpore raises KeyError too)
GROUP_KEYS = ("params", "lr", "weight_decay", "order_params", "grad_centralization")


def _named(parameters: Iterable[Any]) -> list[tuple[str | None, torch.Tensor]]:
    """``(name, tensor)`` pairs from pairs (``named_parameters()``) or tensors (the MindSpore
    name a Cell's ``trainable_params()`` recorded, if any)."""
    out = []
    for item in parameters:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
            out.append((item[0], item[1]))
        elif isinstance(item, torch.Tensor):
            out.append((parameter_name(item), item))
        else:
            raise TypeError(
                "the parameters must be tensors, (name, tensor) pairs or group dicts. "
                f"Received {type(item).__name__}"
            )
    return out


class _DynamicLR:
    """A per-step rate: a 1-D table indexed by the step, or a schedule module."""

    def __init__(self, owner: str, rate: Any) -> None:
        self.owner = owner
        self.schedule: LearningRateSchedule | None = None
        self.table: torch.Tensor | None = None
        if isinstance(rate, LearningRateSchedule):
            self.schedule = rate
            return
        table = torch.as_tensor(np.asarray(rate, dtype=np.float32)).reshape(-1)
        if isinstance(rate, torch.Tensor) and rate.ndim > 1:
            raise ValueError(
                f"{owner}: a learning_rate tensor must be 0-d or 1-D. Received shape "
                f"{tuple(rate.shape)}"
            )
        if table.numel() == 0:
            raise ValueError(f"{owner}: the per-step learning_rate list is empty")
        if not bool(torch.isfinite(table).all()) or bool((table < 0).any()):
            raise ValueError(f"{owner}: every per-step learning rate must be finite and >= 0")
        self.table = table

    @property
    def steps(self) -> int | None:
        """How many steps the table covers (None: a schedule covers any step)."""
        return None if self.table is None else int(self.table.numel())

    def at(self, step: torch.Tensor) -> torch.Tensor:
        """The rate of ``step`` (a 0-d integer tensor) as a 0-d float32 tensor, on its device."""
        if self.schedule is not None:
            return self.schedule(step).to(torch.float32).reshape(())
        if self.table.device != step.device:
            self.table = self.table.to(step.device)
        return self.table[step]


def _learning_rate(owner: str, rate: Any) -> float | _DynamicLR:
    """A static rate (a float >= 0) or a dynamic one, from MindSpore's accepted forms."""
    if isinstance(rate, bool):
        raise TypeError(f"{owner}: learning_rate must be a number, a list or a schedule")
    if isinstance(rate, (int, float)) or (isinstance(rate, torch.Tensor) and rate.ndim == 0):
        value = float(rate)
        if not value >= 0:
            raise ValueError(f"{owner}: learning_rate must be >= 0. Received {value}")
        return value
    if isinstance(rate, (LearningRateSchedule, torch.Tensor, np.ndarray, list, tuple)):
        return _DynamicLR(owner, rate)
    if isinstance(rate, Iterable) and not isinstance(rate, (str, bytes, dict)):
        return _DynamicLR(owner, list(rate))  # a generator of per-step rates, as MindSpore
    raise TypeError(
        f"{owner}: learning_rate must be a number, a per-step list, array or tensor, or a "
        f"LearningRateSchedule. Received {type(rate).__name__}"
    )


def _weight_decay(owner: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(
            f"{owner}: weight_decay must be a number (a dynamic weight decay is not supported). "
            f"Received {value!r}"
        )
    if not value >= 0:
        raise ValueError(f"{owner}: weight_decay must be >= 0. Received {value}")
    return float(value)


class Optimizer(MindSporeOptimizerAPI, torch.optim.Optimizer):
    """Base class of jisu.nn's MindSpore optimizers (see the module). Subclasses implement
    :meth:`_update` for one group, given its gradients prepared (decayed, unscaled) and the
    group's rate; the base does everything else. A subclass written the MindSpore way (its
    own ``construct(gradients)``) runs too: see :mod:`jisu.nn.optim._mindspore_api`."""

    #: jisu's TrainStep hands it the overflow flag of a loss-scaled step (``found_inf``), as
    #: PyTorch's fused optimizers take it: the step is then skipped on the device, its
    #: ``global_step`` too.
    _step_supports_amp_scaling = True
    handles_found_inf = True
    #: the weight decay is added to the gradients (MindSpore's rule); an optimizer that
    #: decays the weights itself (AdamWeightDecay) sets False and reads ``decay_flags``
    _decay_in_gradient = True

    def __init__(
        self,
        learning_rate: Any,
        parameters: Any,
        weight_decay: float = 0.0,
        loss_scale: float = 1.0,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        owner = type(self).__name__
        self._owner = owner
        if isinstance(loss_scale, bool) or not isinstance(loss_scale, (int, float)):
            raise TypeError(f"{owner}: loss_scale must be a float. Received {loss_scale!r}")
        if not loss_scale > 0:
            raise ValueError(f"{owner}: loss_scale must be > 0. Received {loss_scale}")
        self.loss_scale = float(loss_scale)
        default_lr = _learning_rate(owner, learning_rate)
        default_decay = _weight_decay(owner, weight_decay)
        items = list(parameters) if not isinstance(parameters, torch.Tensor) else [parameters]
        if not items:
            raise ValueError(f"{owner}: the parameter list is empty")
        self._dynamic: list[_DynamicLR | None] = []
        groups = []
        if all(isinstance(item, dict) for item in items):
            for i, spec in enumerate(items):
                unknown = sorted(set(spec) - set(GROUP_KEYS))
                if unknown:
                    raise KeyError(
                        f"{owner}: group {i} has unknown key(s) {unknown}; known: "
                        f"{list(GROUP_KEYS)}"
                    )
                if "order_params" in spec:  # MindSpore's parameter order: no effect in torch,
                    # but MindSpore's checkpoint lists the optimizer's slots in this order
                    self._order_params = [p for _, p in _named(spec["order_params"])]
                    continue
                if spec.get("grad_centralization"):
                    raise ValueError(f"{owner}: grad_centralization is not supported by jisu")
                lr = _learning_rate(owner, spec["lr"]) if "lr" in spec else default_lr
                decay = (
                    _weight_decay(owner, spec["weight_decay"])
                    if "weight_decay" in spec
                    else default_decay
                )
                named = _named(spec["params"])
                groups.append(self._group(named, lr, decay, [decay > 0] * len(named)))
        elif any(isinstance(item, dict) for item in items):
            raise TypeError(f"{owner}: mix of group dicts and parameters; pass one or the other")
        else:
            named = _named(items)
            # MindSpore's filter: norm scales and shifts (gamma, beta) do not decay
            flags = [
                default_decay > 0 and (name is None or ("beta" not in name and "gamma" not in name))
                for name, _ in named
            ]
            groups.append(self._group(named, default_lr, default_decay, flags))
        super().__init__(groups, dict(defaults or {}))
        self.global_step: torch.Tensor | None = None  # on the parameters' device, at the first step
        self._calls = 0  # step() calls, counted on the host (the table bound is checked there)
        self.learning_rate = learning_rate
        is_group = all(isinstance(item, dict) for item in items)
        self._setup_mindspore_api(is_group, is_group and any("lr" in spec for spec in items))

    def _group(
        self, named: list[tuple[str | None, torch.Tensor]], lr: Any, decay: float, flags: list[bool]
    ) -> dict[str, Any]:
        dynamic = lr if isinstance(lr, _DynamicLR) else None
        self._dynamic.append(dynamic)
        rate = torch.zeros((), dtype=torch.float32) if dynamic is not None else lr
        return {
            "params": [p for _, p in named],
            "lr": rate,
            "weight_decay": decay,
            "decay_flags": flags,
        }

    # ------------------------------------------------------------------ rates
    @property
    def dynamic_lr(self) -> bool:
        """Whether a rate is per step (a list or a schedule), computed inside ``step()``."""
        return any(d is not None for d in self._dynamic)

    def _step_tensor(self) -> torch.Tensor:
        if self.global_step is None:
            device = self.param_groups[0]["params"][0].device
            self.global_step = torch.zeros((), dtype=torch.int64, device=device)
        return self.global_step

    def _rate(self, index: int, group: dict[str, Any]) -> Any:
        dynamic = self._dynamic[index]
        return group["lr"] if dynamic is None else dynamic.at(self._step_tensor())

    def get_lr(self) -> Any:
        """The rate of the next step: a 0-d tensor, also for groups that set only their weight
        decay (one per group, as a tuple, when groups have their own rates; one per parameter
        for a ``construct``-based subclass, as MindSpore's). Reading its value is a host
        synchronisation."""
        rates = tuple(
            torch.as_tensor(self._rate(i, g), dtype=torch.float32)
            for i, g in enumerate(self.param_groups)
        )
        if self._steps_by_construct and getattr(self, "is_group_lr", False):
            return tuple(r for r, g in zip(rates, self.param_groups) for _ in g["params"])
        if not getattr(self, "is_group_lr", True):  # groups (weight decay only) share one rate
            return rates[0]
        return rates[0] if len(rates) == 1 else rates

    # ------------------------------------------------------------------ MindSpore's calls
    @property
    def target(self) -> str:
        """Where MindSpore would run the update ("CPU" for a host-side fused kernel, else the
        device). jisu updates the parameters where they are; the value is only recorded."""
        return getattr(self, "_target", "Ascend")

    @target.setter
    def target(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"{self._owner}: target must be a str. Received {value!r}")
        if value not in ("CPU", "GPU", "Ascend"):
            raise ValueError(
                f"{self._owner}: target must be 'CPU', 'GPU' or 'Ascend'. Received {value!r}"
            )
        self._target = value

    def update_parameters_name(self, prefix: str = "", recurse: bool = True) -> None:
        """Prefix the MindSpore names of this optimizer's parameters with ``prefix`` (as
        MindSpore does, where it renames the network's parameters too: a GAN gives each
        optimizer its own prefix): the new names stay, in ``param.name`` and in the network's
        later ``trainable_params()`` and checkpoints. The optimizer's own entries in a
        MindSpore checkpoint (``global_step``, ``moment1.<name>`` ...) take the prefix too, as
        MindSpore's do (``optim_g.moment1.<name>``; recorded in ``_name_prefix``)."""
        if not isinstance(prefix, str):
            raise TypeError(f"{self._owner}: prefix must be a str. Received {prefix!r}")
        self._name_prefix = prefix + getattr(self, "_name_prefix", "")
        for p in self.parameters:
            name = parameter_name(p)
            if name is not None:
                rename_parameter(p, prefix + name)

    @property
    def parameters(self) -> ParameterTuple:
        """Every parameter, in group order (MindSpore's ``optimizer.parameters``: what
        ``value_and_grad(..., weights=optimizer.parameters)`` differentiates; ``clone`` makes
        moments, as MindSpore's ``ParameterTuple``)."""
        return ParameterTuple(p for group in self.param_groups for p in group["params"])

    @property
    def _parameters(self) -> ParameterTuple:
        """MindSpore's internal name of :attr:`parameters`."""
        return self.parameters

    def __call__(self, gradients: Any, *args: Any) -> Any:
        """MindSpore's way to step: ``optimizer(grads)`` with one gradient per parameter, in
        :attr:`parameters` order (a ``construct``-based subclass may take more inputs after
        them, and its ``construct``'s result is returned)."""
        params = self.parameters
        gradients = tuple(gradients)
        if len(gradients) != len(params):
            raise ValueError(
                f"{self._owner}: {len(gradients)} gradients for {len(params)} parameters"
            )
        for p, g in zip(params, gradients):
            # a gradient in another dtype (a clipped fp16 gradient comes back float32, as in
            # MindSpore) updates the parameter in the parameter's dtype
            p.grad = None if g is None else g.detach().to(p.dtype)
        if self._steps_by_construct and args:
            self._check_table()
            out = self._step_by_construct(None, *args)
            self._calls += 1
            return out
        # the class's step: a MindSpore subclass may name a Parameter of its own ``step``
        # (research/nlp/hypertext's RiemannianAdam counts its steps in self.step)
        type(self).step(self)
        return True

    # ------------------------------------------------------------------ the step
    def _check_table(self) -> None:
        for dynamic in self._dynamic:
            if dynamic is not None and dynamic.steps is not None and self._calls >= dynamic.steps:
                raise RuntimeError(
                    f"{self._owner}: learning_rate has {dynamic.steps} per-step values and this "
                    f"is step {self._calls + 1}: make the list as long as the steps trained "
                    "(epochs x steps per epoch; MindSpore fails here too)"
                )

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._check_table()
        found_inf = getattr(self, "found_inf", None)
        keep = None if found_inf is None else found_inf.reshape(()) == 0
        if self._steps_by_construct:
            self._step_by_construct(keep)
            self._calls += 1
            return loss
        for i, group in enumerate(self.param_groups):
            pairs = [
                (p, f) for p, f in zip(group["params"], group["decay_flags"]) if p.grad is not None
            ]
            if not pairs:
                continue
            params = [p for p, _ in pairs]
            grads = [p.grad for p in params]
            decayed = [(p, g) for (p, flag), g in zip(pairs, grads) if flag]
            if decayed and group["weight_decay"] > 0 and self._decay_in_gradient:
                # MindSpore: the decay is scaled with the loss, then unscaled with it
                scaled = group["weight_decay"] * self.loss_scale
                grads = [
                    g.add(p, alpha=scaled) if flag else g for (p, flag), g in zip(pairs, grads)
                ]
            if self.loss_scale != 1.0:
                grads = torch._foreach_mul(grads, 1.0 / self.loss_scale)
            rate = self._rate(i, group)
            if self._dynamic[i] is not None:
                group["lr"] = rate
            self._update(group, params, grads, rate, keep)
        step = self._step_tensor()
        step.add_(1 if keep is None else keep.to(step.dtype))
        self._calls += 1
        return loss

    def _update(
        self,
        group: dict[str, Any],
        params: list[torch.Tensor],
        grads: list[torch.Tensor],
        lr: Any,
        keep: torch.Tensor | None,
    ) -> None:
        """Apply one update to ``params`` (in place) from ``grads``; with ``keep`` (a 0-d bool
        tensor) False, leave the parameters and the state as they were (an overflow)."""
        raise NotImplementedError

    def _state_buffers(self, params: list[torch.Tensor], name: str) -> list[torch.Tensor]:
        """The state tensor ``name`` of each parameter, zeros at first."""
        out = []
        for p in params:
            state = self.state[p]
            if name not in state:
                state[name] = torch.zeros_like(p, memory_format=torch.preserve_format)
            out.append(state[name])
        return out

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["global_step"] = 0 if self.global_step is None else int(self.global_step)
        state["step_calls"] = self._calls
        if self._steps_by_construct:
            state["mindspore_slots"] = self._ms_slots()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        step = int(state_dict.pop("global_step", 0))
        calls = int(state_dict.pop("step_calls", step))
        slots = state_dict.pop("mindspore_slots", None)
        super().load_state_dict(state_dict)
        if slots is not None:
            self._ms_load_slots(slots)
        self._step_tensor().fill_(step)
        self._calls = calls


def masked_copy_(targets: list[torch.Tensor], new: list[torch.Tensor], keep: torch.Tensor | None):
    """``targets[i] = new[i]``, or, with ``keep`` (a 0-d bool tensor) False, left as they are:
    decided on the device."""
    if keep is None:
        torch._foreach_copy_(targets, new)
    else:
        for t, n in zip(targets, new):
            t.copy_(torch.where(keep, n, t))


def descend(
    params: list[torch.Tensor], steps: list[torch.Tensor], lr: Any, keep: torch.Tensor | None
) -> None:
    """``param -= lr * step`` (``lr`` a float or a 0-d tensor), skipped where ``keep`` is False."""
    if keep is None and not isinstance(lr, torch.Tensor):
        torch._foreach_add_(params, steps, alpha=-lr)
        return
    scaled = torch._foreach_mul(steps, lr)
    if keep is None:
        torch._foreach_sub_(params, scaled)
        return
    masked_copy_(params, torch._foreach_sub(params, scaled), keep)


def opt_init_args_register(fn: Callable) -> Callable:
    """MindSpore's decorator of an optimizer's ``__init__``: records its arguments on the
    instance (``init_params`` = {"params": ...}, ``init_learning_rate``, ``init_args``: the
    rest, defaults applied) before calling it. Model-zoo optimizers decorate theirs with it.
    As MindSpore's, the wrapper does not carry ``fn``'s signature: ``inspect.signature`` of a
    decorated ``__init__`` is ``(self, *args, **kwargs)`` (mindocr's create_optimizer relies on
    it: it refuses an optimizer whose signature names ``clip``)."""

    def register(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = inspect.signature(fn).bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop("self", None)
        if "params" in arguments:
            self.init_params = {"params": arguments.pop("params")}
        if "optimizer" in arguments:
            inner = arguments.pop("optimizer")
            self.init_params = {"params": getattr(inner, "init_params", {}).get("params")}
        if "learning_rate" in arguments:
            rate = arguments.pop("learning_rate")
            if isinstance(rate, torch.Tensor):
                rate = rate.tolist()
            self.init_learning_rate = None if isinstance(rate, torch.nn.Module) else rate
        self.init_args = arguments
        fn(self, *args, **kwargs)

    return register
