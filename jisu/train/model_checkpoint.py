"""``ModelCheckpoint``, the callback that saves checkpoints while training, its
``CheckpointConfig``, and :func:`latest_checkpoint`, which finds the one to resume from.

MindSpore's names and defaults (``{prefix}-{epoch}_{step}.ckpt`` every
``save_checkpoint_steps`` steps, the newest ``keep_checkpoint_max`` kept), with Lightning's
and Keras' choice by a monitored value (``monitor``, ``mode``, ``save_top_k``,
``save_best_only``, ``save_last``). The file format, saving and loading are in
:mod:`jisu.train.checkpoint`.

File names: ``{prefix}-{epoch}_{step}.ckpt`` with the 1-based epoch and the step in it, as
MindSpore writes them (``CKP-10_150.ckpt``: a MindSpore script that loads
``checkpoint_lenet-1_1875.ckpt`` by name finds it), or with ``CheckpointConfig(zero_pad=True)``
zero-padded (``CKP-0010_000150.ckpt``, widths :data:`EPOCH_DIGITS` and :data:`STEP_DIGITS`) so
that a plain ``ls`` lists them in training order. Both forms are recognised: counted by
``keep_checkpoint_max``, ranked, removed and found by :func:`latest_checkpoint` alike.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import time
import warnings
from typing import Any

import torch

from ..distributed import is_main_process
from ..files import host_tag, remove_dead_temporaries
from .callback import Callback, RunContext, loss_value
from .checkpoint import save_checkpoint

logger = logging.getLogger("jisu.train")


# --------------------------------------------------------------------------- file names
#: Digits of the epoch and of the step in a checkpoint's name, zero-padded so that a plain
#: ``ls`` lists the files in training order (``CKP-0002_000150.ckpt`` before
#: ``CKP-0010_000150.ckpt``) up to epoch 9999 and 999999 steps an epoch. Larger numbers are
#: written in full: still read right by jisu, only ``ls`` then sorts them out of order.
EPOCH_DIGITS, STEP_DIGITS = 4, 6


def _numbered_name(prefix: str, epoch: int, step: int, zero_pad: bool = False) -> str:
    if zero_pad:
        return f"{prefix}-{epoch:0{EPOCH_DIGITS}d}_{step:0{STEP_DIGITS}d}.ckpt"
    return f"{prefix}-{epoch}_{step}.ckpt"


def _numbered_pattern(prefix: str) -> re.Pattern[str]:
    """The names of ``prefix``'s numbered checkpoints: the zero-padded ones and the unpadded
    ``{prefix}-{epoch}_{step}.ckpt`` of MindSpore and of earlier jisu versions."""
    return re.compile(re.escape(prefix) + r"-(\d+)_(\d+)\.ckpt")


def _last_name(prefix: str) -> str:
    return f"{prefix}-last.ckpt"  # never matches the numbered pattern (no digits)


_SEPARATORS = (os.sep, os.altsep)


def _check_prefix(owner: str, prefix: Any) -> None:
    if not isinstance(prefix, str) or not prefix or any(s and s in prefix for s in _SEPARATORS):
        raise ValueError(
            f"{owner}: prefix must be a non-empty file-name prefix without a path separator. "
            f"Received: prefix={prefix!r}"
        )


def latest_checkpoint(directory: str | os.PathLike, prefix: str = "CKP") -> str | None:
    """The newest checkpoint that :class:`ModelCheckpoint` (``prefix``) wrote in ``directory``,
    to resume from; None when there is none (also when the folder does not exist yet, as
    TensorFlow's ``tf.train.latest_checkpoint``; MindSpore has no such function).

    Newest means the highest (epoch, step) read from the name, zero-padded or not (files of
    earlier jisu versions count too); of two files with the same numbers, the one modified
    last. ``{prefix}-last.ckpt`` (``save_last``, always the latest state) is returned instead
    when it was modified no earlier than that file: with a ``monitor``, the numbered files are
    the best epochs, and later epochs that did not qualify are only in the ``-last`` file.
    Temporary files, other prefixes' files (``CKP2-...`` for ``CKP``) and anything that is not
    a file are ignored.

    Example:
        >>> path = jisu.latest_checkpoint("ckpt", prefix="run")
        >>> if path:
        ...     state = jisu.load_checkpoint(path, model=model)
        ...     model.train(10, data, initial_epoch=state["epoch"])

    Raises:
        ValueError: ``prefix`` is empty or holds a path separator.
    """
    _check_prefix("latest_checkpoint", prefix)
    pattern, last = _numbered_pattern(prefix), _last_name(prefix)
    folder = os.fspath(directory)
    found, last_path, last_mtime = [], None, 0
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return None
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if not (match or entry.name == last):
            continue
        try:
            if not entry.is_file():
                continue
            mtime = entry.stat().st_mtime_ns
        except OSError:  # removed meanwhile
            continue
        path = os.path.join(folder, entry.name)
        if match:
            found.append((int(match[1]), int(match[2]), mtime, path))
        else:
            last_path, last_mtime = path, mtime
    if not found:
        return last_path
    newest = max(found)
    # the -last file holds a later state than the best numbered one (a same-time tie: a hard
    # link to it, or written right after it on a file system with coarse times)
    return last_path if last_path is not None and last_mtime >= newest[2] else newest[-1]


# --------------------------------------------------------------------------- the callback
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
            ``"epoch_num"``/``"step_num"`` (the epoch and global step at the save) and dicts
            of name -> int/float/bool/str/tensor; numbers are stored as 0-d tensors, so the
            model zoo's ``load_checkpoint(f).get("epoch_num").asnumpy().item()`` reads them.
            ``{"epoch_num": 0, "step_num": 0}`` (the model zoo's idiom) also means the
            current values.
        integrated_save, async_save, exception_save, crc_check, format: MindSpore's flags,
            accepted: jisu always saves the whole (gathered) state synchronously and
            atomically, with a CRC-32 of its bytes.
        saved_network, enc_key: not supported (an error when given).

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
        for name, value in (("saved_network", saved_network), ("enc_key", enc_key)):
            if value is not None:
                raise ValueError(
                    f"CheckpointConfig: {name} is not supported by jisu (the whole model "
                    f"state is saved, unencrypted). Received {name}={value!r}"
                )
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


def _appended(append_info: list[Any], params: Any) -> dict[str, Any]:
    """The top-level entries ``append_info`` adds to a file saved at ``params``' step."""
    current = {"epoch_num": params.cur_epoch_num, "step_num": params.cur_step_num}
    entries: dict[str, Any] = {}
    for item in append_info:
        for key, value in ({item: None} if isinstance(item, str) else item).items():
            if key in current:  # the model zoo passes {"epoch_num": 0}: a placeholder
                value = current[key]
            entries[key] = torch.tensor(value) if isinstance(value, (int, float)) else value
    return entries


class ModelCheckpoint(Callback):
    """Saves checkpoints named ``{prefix}-{epoch}_{step}.ckpt`` (MindSpore's names, e.g.
    ``CKP-3_150.ckpt``: the 1-based epoch and the step in it; ``CheckpointConfig(zero_pad=True)``
    pads them, ``CKP-0003_000150.ckpt``) into ``directory``, as :class:`CheckpointConfig` says.
    Only rank 0 writes.

    Without a ``monitor``: every ``save_checkpoint_steps`` steps (or seconds) and at the end
    of training. In sink mode a checkpoint is written at the end of the sink in which it fell
    due (the weights and random states then match the last step). With a ``monitor``: at
    epoch ends whose value qualifies (``save_top_k``, ``save_best_only``); each such file
    also records the value (``state["monitor"] = {"name", "value"}``).

    Each file holds what an exact resume needs, as the Model's ``state_dict()`` assembles it
    (``cb_params.model``): network, optimizer, loss scale, epoch/step, the dataset iterator's
    state and the random generators' states (see :func:`~jisu.train.checkpoint.load_checkpoint`;
    :func:`latest_checkpoint` finds the newest file to resume from).

    ``keep_checkpoint_max`` (0: keep all) counts every numbered file in ``directory`` for this
    exact prefix (padded or not), also those of earlier runs (a restart), and removes the
    oldest by modification time (as MindSpore does), ties broken by (epoch, step).
    Modification time rather than the numbers in the name: after a restart from an earlier
    checkpoint, the files the new run writes are the ones to keep even where an abandoned run
    got further. ``save_top_k`` instead ranks the files by value, counting the earlier runs'
    files that recorded a value of the same monitor (files without one are left alone). The
    file just written is never removed. Other prefixes' files (``CKP2-...`` for ``CKP``) and
    other files are never touched.

    Attributes (Lightning's names): ``best_k_models`` (path -> value of the ranked files
    kept), ``best_model_path`` and ``best_model_score`` (None before the first),
    ``last_model_path`` (the ``save_last`` file once written).
    """

    acts_on_training = False  # reads only: sink mode need not watch it

    def __init__(
        self,
        prefix: str = "CKP",
        directory: str | None = None,
        config: CheckpointConfig | None = None,
    ) -> None:
        _check_prefix("ModelCheckpoint", prefix)
        if config is not None and not isinstance(config, CheckpointConfig):
            raise TypeError(
                "ModelCheckpoint: config must be a CheckpointConfig. "
                f"Received: config of type {type(config).__name__}"
            )
        self.prefix = prefix
        self.directory = os.path.abspath(directory or os.getcwd())
        self.config = config or CheckpointConfig()
        self.saved: list[str] = []
        self.best_k_models: dict[str, float] = {}
        self.last_model_path: str | None = None
        self._own_name = _numbered_pattern(prefix)
        self._last_time = time.monotonic()
        self._last_step = 0  # cur_step_num of the last numbered save
        self._last_file_step = -1  # cur_step_num of the last write of the -last file
        self._due = False
        self._recalled = False  # best_k_models holds the earlier runs' ranked files
        self._cleaned = False  # the killed runs' temporaries were removed
        self._told_no_metrics = False

    # ------------------------------------------------------------------ hooks
    def on_train_step_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        steps, seconds = self.config.save_checkpoint_steps, self.config.save_checkpoint_seconds
        if steps and params.cur_step_num % steps == 0:
            self._due = True
        if seconds and time.monotonic() - self._last_time >= seconds:
            self._due = True
        if not self._due or not params.get("weights_current", True):
            return
        if self.config.monitor is None:
            self._save(params)
        elif self.config.save_last:
            self._write_last(params)
        else:
            self._due = False

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        config = self.config
        if config.monitor is None:
            return
        params = run_context.original_args()
        value = self._monitored(params)  # on every rank, so that an error stops them all
        if value is not None and is_main_process():
            self._recall()
            if self._qualifies(value):
                self._save(params, value)
                return
        if config.save_last and params.cur_step_num != self._last_file_step:
            self._write_last(params)

    def on_train_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        if self.config.monitor is None:
            if params.cur_step_num != self._last_step:
                self._save(params)
        elif self.config.save_last and params.cur_step_num != self._last_file_step:
            self._write_last(params)

    # ------------------------------------------------------------------ the monitored value
    def _monitored(self, params: Any) -> float | None:
        """The monitored value at this epoch end; None when the epoch has no metrics."""
        name = self.config.monitor
        if name == "loss":
            outputs = params.get("net_outputs")
            return None if outputs is None else loss_value(outputs)  # a host sync, per epoch
        metrics = params.get("metrics")
        if not metrics:
            if not self._told_no_metrics:
                self._told_no_metrics = True
                logger.warning(
                    "ModelCheckpoint: monitor %r has no value at the end of epoch %d: this "
                    "epoch has no metrics (Model.train evaluates nothing: use Model.fit with a "
                    "valid_dataset and the Model's metrics, or monitor 'loss'); epochs without "
                    "metrics write no ranked checkpoint",
                    name,
                    params.cur_epoch_num,
                )
            return None
        key = name if name in metrics else name[5:] if name.startswith("eval_") else None
        if key not in metrics:
            raise ValueError(
                f"ModelCheckpoint: monitor {name!r} is not among the metrics of epoch "
                f"{params.cur_epoch_num}: {sorted(metrics)}. Pass one of them (or 'eval_<name>', "
                "or 'loss' for the training loss) as CheckpointConfig(monitor=...)"
            )
        try:
            return float(metrics[key])
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(
                f"ModelCheckpoint: metric {key!r} is not one number: {metrics[key]!r}; "
                "monitor a metric whose eval() returns a scalar"
            ) from exc

    def _rank(self, value: float) -> float:
        """Sort key: lower is better; a NaN is the worst."""
        if math.isnan(value):
            return math.inf
        return value if self.config.mode == "min" else -value

    def _qualifies(self, value: float) -> bool:
        """Whether an epoch end with ``value`` writes a numbered file."""
        k = self.config.save_top_k
        if self.config.save_best_only:
            best = self.best_model_score
            return not math.isnan(value) and (best is None or self._rank(value) < self._rank(best))
        if k == -1:
            return True
        if k == 0 or math.isnan(value):
            return False
        if len(self.best_k_models) < k:
            return True
        worst = max(self._rank(v) for v in self.best_k_models.values())
        return self._rank(value) < worst

    def _recall(self) -> None:
        """Once: the values that the prefix's files in the folder recorded for this monitor
        (a restart continues the ranking of the run before), then ``save_top_k`` applied."""
        if self._recalled:
            return
        self._recalled = True
        if os.path.isdir(self.directory):
            for path in self._own_files():
                value = _recorded_value(path, self.config.monitor)
                if value is not None and path not in self.best_k_models:
                    self.best_k_models[path] = value
        self._remove_worst(keep=None)

    @property
    def best_model_path(self) -> str | None:
        """The kept ranked file with the best value (of equal ones, the first written)."""
        if not self.best_k_models:
            return None
        return min(self.best_k_models, key=lambda path: self._rank(self.best_k_models[path]))

    @property
    def best_model_score(self) -> float | None:
        """The value of :attr:`best_model_path` (None before the first)."""
        best = self.best_model_path
        return None if best is None else self.best_k_models[best]

    # ------------------------------------------------------------------ writing
    def _save(self, params: Any, value: float | None = None) -> None:
        """Write the numbered checkpoint of this step (with ``value`` recorded), the
        ``-last`` file too when asked, then remove what the config does not keep."""
        self._due = False
        self._last_time = time.monotonic()
        self._last_step = params.cur_step_num
        if not is_main_process():
            return
        self._before_first_save()
        in_epoch = params.get("step_in_epoch", params.cur_step_num)
        name = _numbered_name(self.prefix, params.cur_epoch_num, in_epoch, self.config.zero_pad)
        path = os.path.join(self.directory, name)
        state = params.model.state_dict()
        state.update(_appended(self.config.append_info, params))
        if value is not None:
            state["monitor"] = {"name": self.config.monitor, "value": value}
        save_checkpoint(state, path)
        if path in self.saved:
            self.saved.remove(path)
        self.saved.append(path)
        self.best_k_models.pop(path, None)  # a rewritten file (a restart) has its new value
        if value is not None:
            self.best_k_models[path] = value
        if self.config.save_last:
            self._last_file_step = params.cur_step_num
            self._replace_last(path, state)
        if self.config.monitor is None or self.config.save_best_only:
            self._remove_old(keep=path)
        else:
            self._remove_worst(keep=path)

    def _write_last(self, params: Any) -> None:
        """Write ``{prefix}-last.ckpt`` alone (no numbered file at this point)."""
        self._due = False
        self._last_time = time.monotonic()
        self._last_file_step = params.cur_step_num
        if not is_main_process():
            return
        self._before_first_save()
        path = os.path.join(self.directory, _last_name(self.prefix))
        state = params.model.state_dict()
        state.update(_appended(self.config.append_info, params))
        save_checkpoint(state, path)
        self.last_model_path = path

    def _replace_last(self, source: str, state: dict[str, Any]) -> None:
        """Make ``{prefix}-last.ckpt`` a copy of the numbered file just written: a hard link
        renamed over it (atomic, and no second write of a model-sized file), or where the
        file system has no hard links, a second atomic write."""
        path = os.path.join(self.directory, _last_name(self.prefix))
        link = os.path.join(self.directory, f".tmp-{os.getpid()}-{host_tag()}link.ckpt")
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)  # this process's own, from an interrupted call
            os.link(source, link)
        except OSError:
            save_checkpoint(state, path)
        else:
            try:
                os.replace(link, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(link)
                raise
        self.last_model_path = path

    def _before_first_save(self) -> None:
        """The first write of this callback: clear what killed runs left."""
        if not self._cleaned:
            self._cleaned = True
            self._remove_dead_temporaries()

    def _remove_dead_temporaries(self) -> None:
        """Remove the partial ``.tmp-*.ckpt`` files of saves whose process was killed (a
        checkpoint is as large as the model: a few crashes would otherwise fill the disk)."""
        removed = remove_dead_temporaries(self.directory, ".ckpt")
        if removed:
            logger.warning(
                "ModelCheckpoint: removed %d partial checkpoint file(s) of killed runs from "
                "'%s' (%.1f MiB): %s",
                len(removed),
                self.directory,
                sum(size for _, size in removed) / (1 << 20),
                ", ".join(os.path.basename(path) for path, _ in removed),
            )

    # ------------------------------------------------------------------ removing
    def _own_files(self) -> list[str]:
        """This prefix's numbered checkpoint files in the folder (regular files, not links),
        oldest first: by modification time, then (epoch, step)."""
        found = []
        with os.scandir(self.directory) as entries:
            for entry in entries:
                match = self._own_name.fullmatch(entry.name)
                if not match or not entry.is_file(follow_symlinks=False):
                    continue
                try:
                    mtime = entry.stat(follow_symlinks=False).st_mtime_ns
                except FileNotFoundError:  # removed meanwhile
                    continue
                found.append((mtime, int(match[1]), int(match[2]), entry.path))
        return [path for *_, path in sorted(found)]

    def _remove_old(self, keep: str) -> None:
        """Remove the oldest of this prefix's files beyond ``keep_checkpoint_max``."""
        limit = self.config.keep_checkpoint_max
        if not limit:
            return
        others = [path for path in self._own_files() if path != keep]
        for old in others[: max(0, len(others) + 1 - limit)]:
            self._remove(old)

    def _remove_worst(self, keep: str | None) -> None:
        """Remove the ranked files with the worst values beyond ``save_top_k`` (of equal
        values, the first written goes first, as in Lightning)."""
        k = self.config.save_top_k
        if not k or k < 0 or self.config.save_best_only:
            return
        while len(self.best_k_models) > k:
            worst = max(self.best_k_models, key=lambda path: self._rank(self.best_k_models[path]))
            if worst == keep:
                break
            self._remove(worst)

    def _remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        if path in self.saved:
            self.saved.remove(path)
        self.best_k_models.pop(path, None)

    @property
    def latest_ckpt_file_name(self) -> str | None:
        """The last numbered file this callback wrote (None before the first)."""
        return self.saved[-1] if self.saved else None


def _recorded_value(path: str, monitor: str) -> float | None:
    """The value of ``monitor`` that the checkpoint ``path`` recorded; None if it recorded
    none, another monitor's, or cannot be read. Memory-mapped: the tensors are not read."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # damaged, or not a zip checkpoint: not one of ours to rank
        return None
    record = state.get("monitor") if isinstance(state, dict) else None
    if isinstance(record, dict) and record.get("name") == monitor:
        value = record.get("value")
        if type(value) is float:
            return value
    return None
