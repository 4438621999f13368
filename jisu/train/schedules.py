"""Learning-rate schedules run at the step they name, in sink mode too.

``Model(..., lr_scheduler=...)`` takes a torch scheduler (``torch.optim.lr_scheduler``) and
steps it after every train step (``interval="step"``, the default) or every epoch
(``interval="epoch"``); a ``ReduceLROnPlateau`` steps per epoch with the value it monitors.
The loop steps it as each step is *dispatched*, so in sink mode every step of a sink gets its
own rate, as in step mode, with no host synchronisation (the rate is a host value baked into
the next step's kernels, or a device tensor filled in place). Its state travels in
``Model.state_dict()``, so a resumed run continues the schedule at the step it stopped.

On CUDA, :func:`rates_on_device` makes the rates of capturable optimizers device tensors.
"""

from __future__ import annotations

from typing import Any

import torch

from .callbacks.plateau import _monitored

INTERVALS = ("step", "epoch")


def rates_on_device(optimizer: torch.optim.Optimizer, device: torch.device) -> int:
    """On CUDA, the float rates of ``capturable`` (or ``fused``) parameter groups become 0-d
    device tensors, so a step captured in a CUDA graph reads the current rate rather than the
    one of its capture; returns how many groups changed. Schedulers and ``rates.set_lr`` then fill
    the tensor in place. On other devices nothing changes (a float is read at each call)."""
    if device.type != "cuda":
        return 0
    changed = 0
    for group in optimizer.param_groups:
        wants = group.get("capturable") or group.get("fused")
        if wants and not isinstance(group["lr"], torch.Tensor):
            group["lr"] = torch.tensor(float(group["lr"]), dtype=torch.float32, device=device)
            changed += 1
    return changed


def _is_scheduler(value: Any) -> bool:
    return isinstance(
        value, (torch.optim.lr_scheduler.LRScheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
    )


class LRSchedulerRunner:
    """``Model``'s ``lr_scheduler`` argument, checked when the Model is built, and run by the
    training loop: :meth:`after_step` per dispatched step, :meth:`after_epoch` per epoch.

    ``spec`` is a scheduler, or a dict (Lightning's form): ``{"scheduler": s, "interval":
    "step" | "epoch", "frequency": n, "monitor": "eval_loss"}``; ``frequency`` steps it every
    ``n`` steps or epochs, ``monitor`` names the value a ``ReduceLROnPlateau`` watches (an
    evaluation metric of ``Model.fit``, ``eval_<metric>``, or ``loss``).
    """

    def __init__(self, spec: Any, optimizer: torch.optim.Optimizer | None) -> None:
        owner = "Model: lr_scheduler"
        options = dict(spec) if isinstance(spec, dict) else {"scheduler": spec}
        unknown = sorted(set(options) - {"scheduler", "interval", "frequency", "monitor"})
        if unknown:
            raise ValueError(
                f"{owner}: unknown key(s) {unknown}; known: scheduler, interval, frequency, monitor"
            )
        scheduler = options.get("scheduler")
        if not _is_scheduler(scheduler):
            raise TypeError(
                f"{owner} must be a torch.optim.lr_scheduler scheduler (or a dict with one under "
                f"'scheduler'). Received {type(scheduler).__name__}"
            )
        if optimizer is None or scheduler.optimizer is not optimizer:
            raise ValueError(f"{owner}: the scheduler must schedule the Model's optimizer")
        if getattr(optimizer, "dynamic_lr", False):
            raise ValueError(
                f"{owner}: the optimizer's learning rate is already per step (a list or a "
                "LearningRateSchedule); pass one or the other"
            )
        plateau = isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        interval = options.get("interval", "epoch" if plateau else "step")
        if interval not in INTERVALS:
            raise ValueError(f"{owner}: interval must be 'step' or 'epoch'. Received {interval!r}")
        frequency = options.get("frequency", 1)
        if isinstance(frequency, bool) or not isinstance(frequency, int) or frequency < 1:
            raise ValueError(f"{owner}: frequency must be an int >= 1. Received {frequency!r}")
        monitor = options.get("monitor")
        if plateau and (interval != "epoch" or not isinstance(monitor, str)):
            raise ValueError(
                f"{owner}: a ReduceLROnPlateau steps per epoch on a monitored value; pass "
                "{'scheduler': s, 'monitor': 'eval_loss'} (or another metric, or 'loss')"
            )
        self.scheduler, self.interval, self.frequency = scheduler, interval, frequency
        self.monitor = monitor if plateau else None
        self._steps = self._epochs = 0

    def after_step(self) -> None:
        """One train step was dispatched."""
        if self.interval == "step":
            self._steps += 1
            if self._steps % self.frequency == 0:
                self.scheduler.step()

    def after_epoch(self, params: Any) -> None:
        """An epoch ended (after its evaluation, before ``on_train_epoch_end``: a checkpoint
        written there holds the stepped scheduler, from which the next epoch resumes)."""
        if self.interval != "epoch":
            return
        self._epochs += 1
        if self._epochs % self.frequency:
            return
        if self.monitor is None:
            self.scheduler.step()
            return
        value = _monitored(params, self.monitor)
        if value is None:
            raise ValueError(
                f"Model: lr_scheduler monitors '{self.monitor}', which this run does not "
                "produce (run Model.fit with a valid_dataset and metrics, or monitor 'loss')"
            )
        self.scheduler.step(value)

    def state_dict(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler.state_dict(),
            "steps": self._steps,
            "epochs": self._epochs,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.scheduler.load_state_dict(state["scheduler"])
        self._steps, self._epochs = int(state.get("steps", 0)), int(state.get("epochs", 0))
