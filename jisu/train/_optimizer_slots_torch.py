"""The MindSpore entries of torch.optim's optimizers (see :mod:`jisu.train._optimizer_slots`)."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from ._optimizer_slots import (
    Item,
    Layout,
    Slot,
    _beta_items,
    _f32,
    _global_step,
    _keys_in,
    _rate_items,
    _restore_rates,
    _same_f32,
    _state_keys,
    steps_from_powers,
)


class TorchSGDLayout(Layout):
    """``torch.optim.SGD`` as MindSpore's ``Momentum``: ``momentum_buffer`` is ``moments``
    (the same update for ``dampening=0``; MindSpore's accumulator starts at zeros, torch's at
    the first gradient, the same for ``dampening=0``). torch counts no steps: no
    ``global_step``."""

    def scalars(self, state: dict) -> list[Item]:
        momentum = self.opt.param_groups[0].get("momentum", 0.0)
        return [*_rate_items(self.opt, "front"), Item("momentum", _f32(momentum))]

    def slots(self, state: dict) -> list[Slot]:
        if all(g.get("momentum", 0.0) == 0 for g in self.opt.param_groups):
            return []
        return [Slot("moments", "momentum_buffer")]

    def restore_scalars(self, state: dict, entries: Mapping[str, torch.Tensor]) -> None:
        _restore_rates(self.opt, state, entries)
        value = entries.get("momentum")
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            for group in state["param_groups"]:
                if not _same_f32(group.get("momentum", 0.0), value):
                    group["momentum"] = float(value.reshape(()))


class TorchAdamLayout(Layout):
    """``torch.optim.Adam``/``AdamW`` as MindSpore's ``Adam``: ``exp_avg``, ``exp_avg_sq``,
    ``max_exp_avg_sq`` are ``moment1``, ``moment2``, ``vhat``; ``global_step`` and the beta
    powers come from the largest per-parameter ``step``."""

    def _betas(self) -> tuple[float, float]:
        beta1, beta2 = self.opt.param_groups[0]["betas"]
        return float(beta1), float(beta2)

    def scalars(self, state: dict) -> list[Item]:
        steps = [int(float(p["step"])) for p in state.get("state", {}).values() if "step" in p]
        step = max(steps, default=0)
        out = [Item("global_step", torch.tensor([step], dtype=torch.int32))]
        return out + _rate_items(self.opt, "front") + _beta_items(*self._betas(), step)

    def slots(self, state: dict) -> list[Slot]:
        slots = [Slot("moment1", "exp_avg"), Slot("moment2", "exp_avg_sq")]
        if any(g.get("amsgrad") for g in self.opt.param_groups):
            slots.append(Slot("vhat", "max_exp_avg_sq"))
        return slots

    def restore_scalars(self, state: dict, entries: Mapping[str, torch.Tensor]) -> None:
        _restore_rates(self.opt, state, entries)

    def fill(self, pstate: dict, param: torch.Tensor, state: dict) -> None:
        step = self._restored_step
        if step is None:
            return
        old = pstate.pop("step", None)
        others = dict(pstate)
        pstate.clear()  # torch's order: the step first
        if isinstance(old, torch.Tensor):
            pstate["step"] = torch.full_like(old, float(step))
        else:
            pstate["step"] = torch.tensor(float(step), dtype=torch.float32)
        pstate.update(others)

    def restore(self, entries: Mapping[str, torch.Tensor]) -> list[str]:
        self._restored_step = _global_step(entries)
        if self._restored_step is None:
            self._restored_step = steps_from_powers(entries, *self._betas())
        if self._restored_step is None:
            self._restored_step = 0
        return super().restore(entries)


class TorchLayout(Layout):
    """Any other torch optimizer: every per-parameter state tensor as ``<state key>.<name>``
    (jisu's naming; MindSpore reads them as parameters its network lacks)."""

    strict_shapes = False

    def scalars(self, state: dict) -> list[Item]:
        return _rate_items(self.opt, "front")

    def slots(self, state: dict) -> list[Slot]:
        return [Slot(key, key, None) for key in _state_keys(state)]

    def slots_for_restore(self, state: dict, entries: Mapping[str, torch.Tensor]) -> list[Slot]:
        keys = _keys_in(entries, [n for _, _, n in self.params], mindspore=False)
        return [Slot(key, key, None) for key in keys]

    def restore_scalars(self, state: dict, entries: Mapping[str, torch.Tensor]) -> None:
        _restore_rates(self.opt, state, entries)
