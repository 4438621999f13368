"""``CheckpointConfig``: when :class:`~jisu.train.callbacks.model_checkpoint.ModelCheckpoint`
saves and which files it keeps (MindSpore's arguments, Lightning's and Keras' monitored
choice), and MindSpore's ``append_info`` entries of each file."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from ..ckpt_items import python_scalar_tensor


class CheckpointConfig:
    """When :class:`ModelCheckpoint` saves and which files it keeps: MindSpore's arguments,
    and a monitored value to keep the best files by (``monitor``, ``mode``, ``save_top_k``,
    ``save_last`` as in Lightning; ``save_best_only`` as in Keras).

    Without ``monitor``, a checkpoint is saved every ``save_checkpoint_steps`` steps (or
    ``save_checkpoint_seconds``) and the newest ``keep_checkpoint_max`` files are kept. With
    one, numbered checkpoints are chosen at each epoch end by the monitored value, and
    ``save_checkpoint_steps``/``save_checkpoint_seconds`` only say how often the
    ``{prefix}-last.ckpt`` file of ``save_last`` is refreshed between epoch ends.

    Args:
        save_checkpoint_steps: save every this many steps (0: not by steps). Default None:
            1 (every step, MindSpore's default) without a ``monitor``; with one, 0 (the
            ``save_last`` file is then written at epoch ends, as Lightning's).
        save_checkpoint_seconds: save when this many seconds passed since the last save
            (default 0: not by time).
        keep_checkpoint_max: keep the newest this many numbered files of the prefix, by
            modification time (default 5; 0: all). Not used with ``save_top_k``, which keeps
            files by their value.
        keep_checkpoint_per_n_minutes: accepted for MindSpore's signature; not implemented.
        monitor: None (default: periodic saves), or what ranks the checkpoints at each epoch
            end: the name of a metric in ``cb_params.metrics`` (those ``Model.fit`` computed
            on its ``valid_dataset``; ``"eval_acc"`` also finds ``"acc"``, MindSpore's
            spelling), or ``"loss"``, the training loss of the epoch's last step (MindSpore's
            meaning; the evaluation's loss metric is ``"eval_loss"``). An epoch without
            metrics (no evaluation in it) is skipped.
        mode: ``"min"`` (default: lower is better, as for a loss), ``"max"`` (higher is
            better, as for an accuracy), or ``"auto"``: ``"max"`` when the name contains
            ``"acc"``, else ``"min"`` (Keras' and jisu's EarlyStopping's rule).
        save_best_only: (Keras) write a numbered file only at an epoch end whose value beats
            every earlier one (strictly; a NaN never does), and keep the newest
            ``keep_checkpoint_max`` such files: the newest is the best.
        save_top_k: (Lightning) keep the ``k`` numbered files with the best values: an epoch
            end's file is written when fewer are kept or its value is strictly better than
            the worst kept one, which is then removed (a NaN is never written). ``-1``: write
            one at every epoch end with a value and keep all; ``0``: none (only
            ``save_last``'s file). Default None: 1 with a ``monitor`` (Lightning's default)
            unless ``save_best_only``.
        save_last: (Lightning) also keep ``{prefix}-last.ckpt``, always the latest state:
            rewritten (atomically) at every save, and with a ``monitor`` also at every epoch
            end and at the end of training; between epoch ends too when
            ``save_checkpoint_steps``/``save_checkpoint_seconds`` are given.
            ``latest_checkpoint`` returns it when it is newer than the numbered files.
        zero_pad: name the numbered files ``CKP-0010_000150.ckpt`` (``ls`` lists them in
            training order) instead of MindSpore's ``CKP-10_150.ckpt``.
        append_info: (MindSpore) extra top-level entries of every file: the strings
            ``"epoch_num"``/``"step_num"`` (the 1-based epoch of the file's name and the
            global step at the save) and dicts of name -> int/float/bool/str/tensor; numbers
            are stored as 0-d tensors, so the model zoo's
            ``load_checkpoint(f).get("epoch_num").asnumpy().item()`` reads them.
            ``{"epoch_num": 0, "step_num": 0}`` (the model zoo's idiom) also means the
            current values. As in MindSpore 2.10, the entries are Int64 scalars and are
            written only when asked for.
        crc_check: (MindSpore) end each file with MindSpore's CRC-32 trailer, verified when
            the file is loaded (by jisu always, by MindSpore 2.10 with ``crc_check=True``);
            MindSpore 2.0's reader cannot parse such a file.
        integrated_save, async_save, exception_save, format: MindSpore's flags, accepted:
            jisu always saves the whole (gathered) state synchronously and atomically.
        saved_network: (MindSpore) a network to save instead of the training state: each
            file then holds that network's tensors under MindSpore's names (and its
            torch-only buffers), no optimizer and no resume position, as
            ``save_checkpoint(saved_network, ...)`` writes.
        enc_key: not supported (an error when given).

    Raises:
        ValueError, TypeError: an argument out of range or of the wrong type; ``save_top_k``
            or ``save_best_only`` without ``monitor``; both of them; ``save_top_k=0``
            without ``save_last`` (nothing would be written).

    Example:
        >>> config = CheckpointConfig(monitor="acc", mode="max", save_top_k=3, save_last=True)
        >>> model.fit(20, train, valid, callbacks=[ModelCheckpoint("run", "ckpt", config)])
    """

    def __init__(
        self,
        save_checkpoint_steps: int | None = None,
        save_checkpoint_seconds: int = 0,
        keep_checkpoint_max: int = 5,
        keep_checkpoint_per_n_minutes: int = 0,
        monitor: str | None = None,
        mode: str = "min",
        save_best_only: bool = False,
        save_top_k: int | None = None,
        save_last: bool = False,
        zero_pad: bool = False,
        append_info: list | None = None,
        integrated_save: bool = True,
        async_save: bool = False,
        saved_network: Any = None,
        enc_key: Any = None,
        enc_mode: str = "AES-GCM",
        exception_save: bool = False,
        crc_check: bool = False,
        format: str = "ckpt",  # MindSpore's name
    ) -> None:
        self.append_info = _check_append_info(append_info)
        if enc_key is not None:
            raise ValueError(
                "CheckpointConfig: enc_key is not supported by jisu (checkpoints are saved "
                f"unencrypted). Received enc_key={enc_key!r}"
            )
        if saved_network is not None and not isinstance(saved_network, torch.nn.Module):
            raise TypeError(
                "CheckpointConfig: saved_network must be None or a network (a Cell). "
                f"Received: saved_network of type {type(saved_network).__name__}"
            )
        self.saved_network = saved_network
        if not isinstance(crc_check, bool):
            raise TypeError(f"CheckpointConfig: crc_check must be a bool. Received: {crc_check!r}")
        self.crc_check = crc_check
        if format not in ("ckpt",):
            raise ValueError(f"CheckpointConfig: format must be 'ckpt'. Received {format!r}")
        if not isinstance(zero_pad, bool):
            raise TypeError(f"CheckpointConfig: zero_pad must be a bool. Received: {zero_pad!r}")
        if save_checkpoint_steps is None:
            save_checkpoint_steps = 0 if monitor is not None else 1
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
        if not save_checkpoint_steps and not save_checkpoint_seconds and monitor is None:
            raise ValueError(
                "CheckpointConfig: set save_checkpoint_steps or save_checkpoint_seconds (or a "
                "monitor, whose checkpoints are chosen at epoch ends)"
            )
        if monitor is not None and (not isinstance(monitor, str) or not monitor):
            error = ValueError if isinstance(monitor, str) else TypeError
            raise error(
                "CheckpointConfig: monitor must be None or a metric name such as 'eval_loss', "
                f"'acc' or 'loss'. Received: monitor={monitor!r}"
            )
        if mode not in ("min", "max", "auto"):
            raise ValueError(
                f"CheckpointConfig: mode must be 'min', 'max' or 'auto'. Received: mode={mode!r}"
            )
        for name, flag in (("save_best_only", save_best_only), ("save_last", save_last)):
            if not isinstance(flag, bool):
                raise TypeError(f"CheckpointConfig: {name} must be a bool. Received: {flag!r}")
        if save_top_k is not None and (
            isinstance(save_top_k, bool) or not isinstance(save_top_k, int) or save_top_k < -1
        ):
            raise ValueError(
                "CheckpointConfig: save_top_k must be None or an int >= -1 (-1: keep all). "
                f"Received: save_top_k={save_top_k!r}"
            )
        if monitor is None and (save_best_only or save_top_k is not None):
            used = "save_best_only=True" if save_best_only else f"save_top_k={save_top_k}"
            raise ValueError(
                f"CheckpointConfig: {used} ranks checkpoints by a monitored value; pass "
                "monitor= (a metric name of Model.fit such as 'eval_loss' or 'acc', or 'loss')"
            )
        if save_best_only and save_top_k is not None:
            raise ValueError(
                "CheckpointConfig: pass save_best_only=True (Keras: write only improvements) or "
                f"save_top_k (Lightning: keep the k best), not both. Received: "
                f"save_top_k={save_top_k}"
            )
        if monitor is not None and not save_best_only and save_top_k is None:
            save_top_k = 1
        if save_top_k == 0 and not save_last:
            raise ValueError(
                "CheckpointConfig: save_top_k=0 without save_last=True writes no file; pass "
                "save_top_k >= 1 or -1, or save_last=True"
            )
        if mode == "auto" and monitor is not None:
            mode = "max" if "acc" in monitor.lower() else "min"
        elif mode == "min" and monitor is not None and "acc" in monitor.lower():
            warnings.warn(
                f"CheckpointConfig: monitor={monitor!r} with mode='min' keeps the checkpoints "
                "with the lowest value; for an accuracy pass mode='max' (or 'auto')",
                stacklevel=2,
            )
        self.save_checkpoint_steps = save_checkpoint_steps
        self.save_checkpoint_seconds = save_checkpoint_seconds
        self.keep_checkpoint_max = keep_checkpoint_max
        self.keep_checkpoint_per_n_minutes = keep_checkpoint_per_n_minutes
        self.monitor = monitor
        self.mode = mode  # "auto" resolved to "min" or "max" when there is a monitor
        self.save_best_only = save_best_only
        self.save_top_k = save_top_k  # None resolved to 1 when there is a monitor
        self.save_last = save_last
        self.zero_pad = zero_pad


_APPEND_VALUE = (bool, int, float, str, torch.Tensor)


def _check_append_info(append_info: Any) -> list[Any]:
    """MindSpore's ``append_info``: ``"epoch_num"``/``"step_num"`` and dicts of plain values."""
    if append_info is None:
        return []
    if not isinstance(append_info, list):
        raise TypeError(
            f"CheckpointConfig: append_info must be a list. Received {type(append_info).__name__}"
        )
    for item in append_info:
        if isinstance(item, str):
            if item not in ("epoch_num", "step_num"):
                raise ValueError(
                    "CheckpointConfig: a string in append_info must be 'epoch_num' or "
                    f"'step_num'. Received {item!r}"
                )
        elif isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str) or not isinstance(value, _APPEND_VALUE):
                    raise TypeError(
                        "CheckpointConfig: append_info dicts map str to int, float, bool, str "
                        f"or a tensor. Received {key!r}: {type(value).__name__}"
                    )
        else:
            raise TypeError(
                "CheckpointConfig: append_info holds 'epoch_num', 'step_num' or dicts. "
                f"Received {item!r}"
            )
    return list(append_info)


def appended_entries(append_info: list[Any], params: Any) -> list[tuple[str, Any]]:
    """The entries ``append_info`` adds to a file saved at ``params``' step, as MindSpore
    2.10's ModelCheckpoint writes them: ``epoch_num`` (the name's 1-based epoch) and
    ``step_num`` (the global step) as Int64 scalars, ints Int64, floats Float32, bools Bool,
    strings as str."""
    current = {"epoch_num": params.cur_epoch_num, "step_num": params.cur_step_num}
    entries: dict[str, Any] = {}
    for item in append_info:
        for key, value in ({item: None} if isinstance(item, str) else item).items():
            if key in current:  # the model zoo passes {"epoch_num": 0}: a placeholder
                value = current[key]
            entries[key] = python_scalar_tensor(value)
    return list(entries.items())
