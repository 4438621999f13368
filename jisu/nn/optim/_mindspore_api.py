"""What a MindSpore optimizer written the MindSpore way reads from its base: model-zoo
optimizers (mindcv's AdamW/Lion/NAdam/Adan, the zoo's BERT Adam, ResNet Momentum ...) subclass
``nn.Optimizer``, clone their moments with ``self.parameters.clone(prefix, init)`` and define
``construct(gradients)`` that updates the parameters with ``ops.assign`` through
``self.hyper_map``. jisu's :class:`~jisu.nn.optim.Optimizer` runs such a subclass: ``step()``
(and ``optimizer(grads)``) hands ``construct`` the gradients, in :attr:`parameters` order, under
``torch.no_grad()``.

The base's MindSpore attributes: ``parameters``/``_parameters`` (with ``clone``),
``learning_rate`` (a 0-d tensor, or a callable of the step for per-step rates; per parameter
with group rates), ``get_lr()``, ``global_step`` (counted once per step, by the subclass's own
``assignadd`` or else by ``step()``), ``global_step_increase_tensor``, ``assignadd``,
``weight_decay`` (scaled by the loss scale; per parameter with groups), ``get_weight_decay()``,
``decay_flags``, ``decay_weight``, ``scale_grad``, ``reciprocal_scale``, ``need_scale``,
``gradients_centralization`` (no centralization), ``flatten_gradients``/``broadcast_params``
(no flattening, no parallel optimizer), ``get_lr_parameter``, ``hyper_map``/``map_``/
``map_reverse``, ``is_group``, ``is_group_lr``, ``optim_filter``, ``use_parallel``, ``cls_name``.

``state_dict()`` holds the subclass's cloned moments and tensor attributes (``beta1_power``
...) under "mindspore_slots"; ``load_state_dict`` restores them.
"""

from __future__ import annotations

from typing import Any

import torch

from ...common.tensor import ParameterTuple


class MindSporeOptimizerAPI:
    """Mixed into :class:`~jisu.nn.optim.Optimizer`: MindSpore's base attributes (see the
    module) and the ``construct(gradients)`` way of stepping."""

    param_groups: list[dict[str, Any]]

    @property
    def cls_name(self) -> str:
        return type(self).__name__

    @property
    def _steps_by_construct(self) -> bool:
        """Whether the subclass updates the MindSpore way (its own ``construct``)."""
        return getattr(type(self), "construct", None) is not MindSporeOptimizerAPI.construct

    def construct(self, gradients: tuple[torch.Tensor, ...]) -> Any:
        raise NotImplementedError(f"{self.cls_name}: define construct(gradients) or _update")

    def _setup_mindspore_api(self, is_group: bool, is_group_lr: bool) -> None:
        """The attributes a ``construct``-based subclass reads, made at the end of the base's
        ``__init__`` (``is_group_lr``: a group gives its own rate)."""
        from ...ops import composite as C  # the ops package builds on jisu.nn: import late

        params = self.parameters
        self.is_group = is_group
        self.is_group_lr = is_group_lr
        self.decay_flags = tuple(f for g in self.param_groups for f in g["decay_flags"])
        self.exec_weight_decay = any(g["weight_decay"] > 0 for g in self.param_groups)
        self.reciprocal_scale = 1.0 / self.loss_scale
        self.need_scale = self.loss_scale != 1.0
        # MindSpore's weight_decay: float32 tensors of the decay times the loss scale
        decays = [g["weight_decay"] * self.loss_scale for g in self.param_groups]
        self._decays = tuple(d for d, g in zip(decays, self.param_groups) for _ in g["params"])
        self.weight_decay = (
            tuple(torch.tensor(d) for d in self._decays) if is_group else torch.tensor(decays[0])
        )
        self.optim_filter = (True,) * len(params)
        self.use_parallel = False
        self.hyper_map, self.map_, self.map_reverse = C.HyperMap(), C.Map(), C.Map(None, True)
        if self._steps_by_construct:
            step = self._step_tensor()
            self.global_step_increase_tensor = torch.ones((), dtype=step.dtype, device=step.device)
            self.learning_rate = self._ms_learning_rate()

    def _ms_learning_rate(self) -> Any:
        """MindSpore's ``learning_rate``: a 0-d tensor or a callable of the step, per parameter
        (a tuple) with group rates."""
        rates = []
        for i, group in enumerate(self.param_groups):
            dynamic = self._dynamic[i]
            rate = dynamic.at if dynamic is not None else torch.tensor(float(group["lr"]))
            rates.extend([rate] * (len(group["params"]) if self.is_group_lr else 1))
        return tuple(rates) if self.is_group_lr else rates[0]

    def assignadd(self, ref: torch.Tensor, value: Any) -> torch.Tensor:
        """``ref += value`` in place (MindSpore's ``AssignAdd``); adding to ``global_step``
        counts the step (``step()`` then does not)."""
        if ref is self.global_step:
            self._counted = True
        value = torch.as_tensor(value, device=ref.device)
        return ref.add_(value.reshape(ref.shape).to(ref.dtype))

    def get_weight_decay(self) -> Any:
        return self.weight_decay

    def decay_weight(self, gradients: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """``gradient + weight_decay * param`` where the decay applies (MindSpore's rule; the
        decay is scaled by the loss scale, as the gradients still are)."""
        if not self.exec_weight_decay:
            return gradients
        return tuple(
            g + d * p if flag and d > 0 else g
            for g, d, p, flag in zip(gradients, self._decays, self.parameters, self.decay_flags)
        )

    def scale_grad(self, gradients: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """The gradients divided by the loss scale."""
        if not self.need_scale:
            return gradients
        return tuple(g * self.reciprocal_scale for g in gradients)

    def gradients_centralization(self, gradients: Any) -> Any:
        return gradients

    def _grad_sparse_indices_deduplicate(self, gradients: Any) -> Any:
        return gradients

    def flatten_gradients(self, gradients: Any) -> Any:
        """MindSpore flattens the gradients of flattened parameters; jisu's are not."""
        return gradients

    def broadcast_params(self, optim_result: Any) -> Any:
        """MindSpore's parallel optimizer broadcasts the updated shards; jisu has none."""
        return optim_result

    def get_lr_parameter(self, param: Any) -> Any:
        """The rate of the group holding ``param`` (a list of parameters: a tuple of rates)."""
        if isinstance(param, (list, tuple)):
            return tuple(self.get_lr_parameter(p) for p in param)
        for i, group in enumerate(self.param_groups):
            if any(p is param for p in group["params"]):
                return torch.as_tensor(self._rate(i, group), dtype=torch.float32)
        raise ValueError(f"{self.cls_name}.get_lr_parameter: the parameter is not optimized here")

    def _is_dynamic_lr_or_weight_decay(self) -> bool:
        return self.dynamic_lr

    def _ms_slots(self) -> dict[str, Any]:
        """A ``construct``-based subclass's own state, by attribute: its cloned moments and its
        tensors (``beta1_power`` ...), copied (what ``state_dict()`` saves)."""
        own = {id(p) for p in self.parameters}
        slots: dict[str, Any] = {}
        for name, value in vars(self).items():
            if name in ("global_step", "global_step_increase_tensor", "param_groups", "state"):
                continue
            if isinstance(value, ParameterTuple) and not any(id(p) in own for p in value):
                slots[name] = [p.detach().clone() for p in value]
            elif isinstance(value, torch.Tensor) and id(value) not in own:
                slots[name] = value.detach().clone()
        return slots

    def _ms_load_slots(self, slots: dict[str, Any]) -> None:
        """Restore what :meth:`_ms_slots` saved, into the attributes in place."""
        for name, saved in slots.items():
            current = getattr(self, name, None)
            if isinstance(saved, list) and isinstance(current, ParameterTuple):
                with torch.no_grad():
                    for target, value in zip(current, saved):
                        target.copy_(value)
            elif isinstance(current, torch.Tensor) and current.shape == saved.shape:
                with torch.no_grad():
                    current.copy_(saved)
            else:
                setattr(self, name, saved)

    def _step_by_construct(self, keep: torch.Tensor | None, *extra: Any) -> Any:
        """One MindSpore-way step: ``construct`` with every parameter's gradient (zeros where
        there is none) and ``extra`` (a zoo optimizer's own inputs, as ``overflow``), the step
        counted once. An overflow (``keep`` False) skips it (a host synchronisation:
        ``construct`` updates in place)."""
        if keep is not None and not bool(keep):
            return False
        grads = tuple(
            p.grad if p.grad is not None else torch.zeros_like(p) for p in self.parameters
        )
        self._counted = False
        with torch.no_grad():
            out = self.construct(grads, *extra)
        if not self._counted:
            self._step_tensor().add_(1)
        return out
