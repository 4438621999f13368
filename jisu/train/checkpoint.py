"""Checkpoints: network, optimizer, loss scale, epoch/step and the dataset iterator state,
written atomically (a temporary file in the same folder, fsync, rename)."""

from __future__ import annotations

import os
import time
from typing import Any

import torch
from torch import nn

from ..distributed import is_main_process
from ..files import atomic_write
from .callback import Callback, RunContext


def save_checkpoint(save_obj: Any, ckpt_file_name: str) -> None:
    """Save ``save_obj`` (a module: its state_dict; or a dict) to ``ckpt_file_name``
    atomically: readers see the old file or the whole new one, never a partial one."""
    if isinstance(save_obj, nn.Module):
        save_obj = {"network": save_obj.state_dict()}
    with atomic_write(ckpt_file_name) as f:
        torch.save(save_obj, f)


def load_checkpoint(
    ckpt_file_name: str,
    net: nn.Module | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    model: Any = None,
) -> dict[str, Any]:
    """Read a checkpoint; load it into ``net``/``optimizer``, or into a :class:`jisu.Model`
    (network, optimizer, loss scale), which then resumes on the next batch when its
    ``train`` is called with ``initial_epoch`` = the checkpoint's ``epoch``. Returns the dict.
    """
    if not os.path.isfile(ckpt_file_name):
        raise FileNotFoundError(f"load_checkpoint: no such file: {ckpt_file_name}")
    state = torch.load(ckpt_file_name, map_location="cpu", weights_only=False)
    if not isinstance(state, dict) or "network" not in state:
        raise ValueError(f"load_checkpoint: {ckpt_file_name} is not a jisu checkpoint")
    if model is not None:
        model._load_state(state)
        return state
    if net is not None:
        net.load_state_dict(state["network"])
    if optimizer is not None and "optimizer" in state:
        optimizer.load_state_dict(state["optimizer"])
    return state


class CheckpointConfig:
    """When to save and how many files to keep (MindSpore's arguments)."""

    def __init__(
        self,
        save_checkpoint_steps: int = 1,
        save_checkpoint_seconds: int = 0,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_per_n_minutes: int = 0,
    ) -> None:
        for name, value in (
            ("save_checkpoint_steps", save_checkpoint_steps),
            ("save_checkpoint_seconds", save_checkpoint_seconds),
            ("keep_checkpoint_max", keep_checkpoint_max),
            ("keep_checkpoint_per_n_minutes", keep_checkpoint_per_n_minutes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(
                    f"CheckpointConfig: {name} must be an int >= 0. Received {value!r}"
                )
        if not save_checkpoint_steps and not save_checkpoint_seconds:
            raise ValueError(
                "CheckpointConfig: set save_checkpoint_steps or save_checkpoint_seconds"
            )
        self.save_checkpoint_steps = save_checkpoint_steps
        self.save_checkpoint_seconds = save_checkpoint_seconds
        self.keep_checkpoint_max = keep_checkpoint_max
        self.keep_checkpoint_per_n_minutes = keep_checkpoint_per_n_minutes


class ModelCheckpoint(Callback):
    """Saves ``{prefix}-{epoch}_{step}.ckpt`` files into ``directory`` every
    ``save_checkpoint_steps`` steps (or seconds) and at the end of training, keeping the
    newest ``keep_checkpoint_max``. Only rank 0 writes. In sink mode a checkpoint is written
    at the end of the sink in which it fell due (the weights then match the last step)."""

    def __init__(
        self,
        prefix: str = "CKP",
        directory: str | None = None,
        config: CheckpointConfig | None = None,
    ) -> None:
        if not isinstance(prefix, str) or not prefix or os.sep in prefix:
            raise ValueError(
                f"ModelCheckpoint: prefix must be a file-name prefix. Received {prefix!r}"
            )
        self.prefix = prefix
        self.directory = os.path.abspath(directory or os.getcwd())
        self.config = config or CheckpointConfig()
        self.saved: list[str] = []
        self._last_time = time.monotonic()
        self._last_step = 0
        self._due = False

    def on_train_step_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        steps, seconds = self.config.save_checkpoint_steps, self.config.save_checkpoint_seconds
        if steps and params.cur_step_num % steps == 0:
            self._due = True
        if seconds and time.monotonic() - self._last_time >= seconds:
            self._due = True
        if self._due and params.get("weights_current", True):
            self._save(params)

    def on_train_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        if params.cur_step_num != self._last_step:
            self._save(params)

    def _save(self, params: Any) -> None:
        self._due = False
        self._last_time = time.monotonic()
        self._last_step = params.cur_step_num
        if not is_main_process():
            return
        batch_num = params.batch_num
        epoch, step = params.cur_epoch_num - 1, params.get("step_in_epoch", params.cur_step_num)
        if batch_num and step >= batch_num:  # the epoch is complete: resume at the next one
            epoch, step = epoch + 1, 0
        state = {
            "network": params.network.state_dict(),
            "epoch": epoch,
            "step_in_epoch": step,
            "cur_step_num": params.cur_step_num,
            "dataset_state": params.get("dataset_state"),
        }
        if params.get("optimizer") is not None:
            state["optimizer"] = params.optimizer.state_dict()
        if params.get("loss_scale_manager") is not None:
            state["loss_scale_manager"] = params.loss_scale_manager.state_dict()
        in_epoch = params.get("step_in_epoch", params.cur_step_num)
        name = f"{self.prefix}-{params.cur_epoch_num}_{in_epoch}.ckpt"
        path = os.path.join(self.directory, name)
        save_checkpoint(state, path)
        if path in self.saved:
            self.saved.remove(path)
        self.saved.append(path)
        while self.config.keep_checkpoint_max and len(self.saved) > self.config.keep_checkpoint_max:
            old = self.saved.pop(0)
            if os.path.exists(old):
                os.unlink(old)

    @property
    def latest_ckpt_file_name(self) -> str | None:
        return self.saved[-1] if self.saved else None
