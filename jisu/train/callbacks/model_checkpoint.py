"""``ModelCheckpoint``, the callback that saves checkpoints while training.

MindSpore's names and defaults (``{prefix}-{epoch}_{step}.ckpt`` every
``save_checkpoint_steps`` steps, the newest ``keep_checkpoint_max`` kept), with Lightning's
and Keras' choice by a monitored value (``monitor``, ``mode``, ``save_top_k``,
``save_best_only``, ``save_last``), as its :class:`~.checkpoint_config.CheckpointConfig` says.
The files' names and :func:`~.checkpoint_files.latest_checkpoint` are in
:mod:`~jisu.train.callbacks.checkpoint_files`; the file format in :mod:`jisu.train.ckpt_state`
and :mod:`jisu.train.serialization`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from typing import Any

from ...distributed import checkpoint_writer
from ...files import host_tag, remove_dead_temporaries
from ..ckpt_state import model_entries, object_entries
from ..serialization import write_checkpoint
from .base import Callback, RunContext, loss_value
from .checkpoint_config import CheckpointConfig, appended_entries
from .checkpoint_files import (
    check_prefix,
    free_prefix,
    last_name,
    numbered_name,
    numbered_pattern,
    recorded_value,
    resumed_prefix,
)

logger = logging.getLogger("jisu.train")


class ModelCheckpoint(Callback):
    """Saves checkpoints named ``{prefix}-{epoch}_{step}.ckpt`` (MindSpore's names, e.g.
    ``CKP-3_150.ckpt``: the 1-based epoch and the step in it; ``CheckpointConfig(zero_pad=True)``
    pads them, ``CKP-0003_000150.ckpt``) into ``directory``, as :class:`CheckpointConfig` says.
    Under ``torchrun`` every rank writes, as in MindSpore, when each has its own
    ``directory`` (the zoo's ``ckpt_dir + "ckpt_" + str(rank)``); where ranks share one, only
    the lowest of them writes (:func:`jisu.distributed.checkpoint_writer`).

    Without a ``monitor``: every ``save_checkpoint_steps`` steps (or seconds) and at the end
    of training. In sink mode a checkpoint is written at the end of the sink in which it fell
    due (the weights and random states then match the last step). One that falls due at an
    epoch's last step is written at the epoch's end (``on_train_epoch_end``: after
    ``Model.fit``'s evaluation and the learning-rate schedule's epoch step), so that it is
    exactly where the next epoch starts. With a ``monitor``: at epoch ends whose value
    qualifies (``save_top_k``, ``save_best_only``); each such file also records the value
    (in its resume state: ``{"monitor": {"name", "value"}}``).

    Each file is a MindSpore ``.ckpt`` (with MindSpore's CRC trailer when the config's
    ``crc_check``) that MindSpore loads
    (the network and the optimizer under MindSpore's names, ``append_info``'s ``epoch_num``/
    ``step_num`` as Int64 scalars, as MindSpore's ModelCheckpoint writes them), and holds what
    an exact resume needs (``cb_params.model``'s state: loss scale, schedule, position, the
    dataset iterator's and the random generators' states) in its ``"_jisu.resume_state"``
    entry: ``jisu.load_checkpoint(path, model=model)`` then ``model.train(epochs, data)``
    continues where the file was written (:func:`latest_checkpoint` finds the newest file).

    The numbers: the name's epoch is the 1-based epoch the step belongs to (MindSpore's;
    also the ``epoch_num`` entry with ``append_info=["epoch_num"]``), the name's step the
    steps done in that epoch. The resume state's ``epoch`` is the number of whole epochs
    done (Keras' ``initial_epoch``), ``step_in_epoch`` the steps done after them. At an
    epoch's end the two agree: ``run-2_24.ckpt``, written at the end of epoch 2 (24 steps),
    resumes at epoch index 2, step 0 (the third epoch). Inside an epoch they differ by one:
    ``run-3_10.ckpt`` resumes at epoch index 2, step 10 (the third epoch's 11th step).

    Each run writes, rotates and ranks only its own files. When training begins, a folder
    that already holds checkpoints of this prefix (``CKP-...``, ``CKP_1-...``) belongs to
    another run, unless the Model was resumed from one of them
    (``jisu.load_checkpoint(path, model=model)`` of a file of this prefix in ``directory``,
    as :func:`latest_checkpoint` finds it): a restart continues its run's prefix (a
    renamed one too), numbering and rotation; any other run gets a fresh prefix by
    MindSpore's rule (``CKP`` -> ``CKP_1``, after ``CKP_1`` -> ``CKP_2``; ``self.prefix``
    then says which), with a warning, and never removes or overwrites the other run's files.

    ``keep_checkpoint_max`` (0: keep all) counts every numbered file in ``directory`` for this
    exact prefix (padded or not), also those the resumed run wrote before the restart, and
    removes the oldest by modification time (as MindSpore does), ties broken by (epoch, step).
    Modification time rather than the numbers in the name: after a restart from an earlier
    checkpoint, the files the new run writes are the ones to keep even where an abandoned run
    got further. ``save_top_k`` instead ranks the files by value, counting the resumed run's
    earlier files that recorded a value of the same monitor (files without one are left alone). The
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
        check_prefix("ModelCheckpoint", prefix)
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
        self._own_name = numbered_pattern(prefix)
        self._last_time = time.monotonic()
        self._last_step = 0  # cur_step_num of the last numbered save
        self._last_file_step = -1  # cur_step_num of the last write of the -last file
        self._due = False
        self._recalled = False  # best_k_models holds the earlier runs' ranked files
        self._cleaned = False  # the killed runs' temporaries were removed
        self._told_no_metrics = False
        self._writes: object = True  # this rank writes (decided by checkpoint_writer)
        self._claimed = False  # the prefix was checked against the folder's files
        self._model: Any = None  # the Model being trained (set at train begin)

    # ------------------------------------------------------------------ hooks
    def on_train_begin(self, run_context: RunContext) -> None:
        # registered now, asked at the first save: by then the training steps' all-reduces
        # have made sure every rank of the job has registered (asking here could race)
        self._writes = checkpoint_writer(self.directory)
        self._model = run_context.original_args().get("model")

    def _writing(self) -> bool:
        """Whether this rank writes; the first time it does, the prefix is claimed."""
        if not self._writes:
            return False
        if not self._claimed:
            self._claimed = True
            self._claim_prefix(self._model)
        return True

    def _claim_prefix(self, model: Any) -> None:
        """Make sure this run writes, rotates and ranks only its own files: those of the run
        the Model was resumed from (``load_checkpoint(path, model=...)`` of one of this
        prefix's files in the folder: that run's prefix, renamed or not, is continued), or
        else, when the folder holds another run's files of this prefix, a fresh prefix by
        MindSpore's rule (``CKP`` -> ``CKP_1``), said in a warning."""
        loaded = getattr(model, "_checkpoint_path", None)
        resumed = resumed_prefix(loaded, self.directory, self.prefix)
        if resumed is not None:
            if resumed != self.prefix:
                logger.warning(
                    "ModelCheckpoint: the model resumed from '%s', so this run continues that "
                    "run's files, with prefix %r (instead of %r)",
                    loaded,
                    resumed,
                    self.prefix,
                )
            self._use_prefix(resumed)
            return
        fresh = free_prefix(self.directory, self.prefix)
        if fresh != self.prefix:
            logger.warning(
                "ModelCheckpoint: '%s' already holds checkpoints with prefix %r of another "
                "run; this run writes its own as %r (%s-...ckpt), as MindSpore does, and "
                "leaves those untouched. To continue that run instead, resume from one of its "
                "files first: jisu.load_checkpoint(jisu.latest_checkpoint(%r, %r), model=model)",
                self.directory,
                self.prefix,
                fresh,
                fresh,
                self.directory,
                self.prefix,
            )
            self._use_prefix(fresh)

    def _use_prefix(self, prefix: str) -> None:
        self.prefix = prefix
        self._own_name = numbered_pattern(prefix)

    def on_train_step_end(self, run_context: RunContext) -> None:
        params = run_context.original_args()
        steps, seconds = self.config.save_checkpoint_steps, self.config.save_checkpoint_seconds
        if steps and params.cur_step_num % steps == 0:
            self._due = True
        if seconds and time.monotonic() - self._last_time >= seconds:
            self._due = True
        if not self._due or not params.get("weights_current", True):
            return
        if params.get("epoch_ended", False):
            return  # the epoch's last step: written at its end, where the next epoch starts
        if self.config.monitor is None:
            self._save(params)
        elif self.config.save_last:
            self._write_last(params)
        else:
            self._due = False

    def on_train_epoch_end(self, run_context: RunContext) -> None:
        config = self.config
        params = run_context.original_args()
        if config.monitor is None:
            if self._due:  # fell due at the epoch's last step
                self._save(params)
            return
        self._due = False  # a save_last refresh due at the last step: written below
        value = self._monitored(params)  # on every rank, so that an error stops them all
        if value is not None and self._writing():
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
                value = recorded_value(path, self.config.monitor)
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
        if not self._writing():
            return
        self._before_first_save()
        in_epoch = params.get("step_in_epoch", params.cur_step_num)
        name = numbered_name(self.prefix, params.cur_epoch_num, in_epoch, self.config.zero_pad)
        path = os.path.join(self.directory, name)
        extra = (
            None if value is None else {"monitor": {"name": self.config.monitor, "value": value}}
        )
        entries = self._entries(params, extra)
        write_checkpoint(path, *entries, crc_check=self.config.crc_check)
        if path in self.saved:
            self.saved.remove(path)
        self.saved.append(path)
        self.best_k_models.pop(path, None)  # a rewritten file (a restart) has its new value
        if value is not None:
            self.best_k_models[path] = value
        if self.config.save_last:
            self._last_file_step = params.cur_step_num
            self._replace_last(path, entries)
        if self.config.monitor is None or self.config.save_best_only:
            self._remove_old(keep=path)
        else:
            self._remove_worst(keep=path)

    def _write_last(self, params: Any) -> None:
        """Write ``{prefix}-last.ckpt`` alone (no numbered file at this point)."""
        self._due = False
        self._last_time = time.monotonic()
        self._last_file_step = params.cur_step_num
        if not self._writing():
            return
        self._before_first_save()
        path = os.path.join(self.directory, last_name(self.prefix))
        write_checkpoint(path, *self._entries(params, None), crc_check=self.config.crc_check)
        self.last_model_path = path

    def _entries(self, params: Any, extra: dict[str, Any] | None) -> tuple[list, dict]:
        """What a file written at ``params``' step holds: the Model's entries (network and
        optimizer under MindSpore's names), the ``append_info`` entries, and the resume
        state (with ``extra``, the monitored value); or, with ``saved_network``, that
        network's entries (its resume state: its torch-only buffers, and ``extra``)."""
        if self.config.saved_network is not None:
            items, resume = object_entries(self.config.saved_network)
            if extra:
                resume = dict(resume or {}, **extra)
        else:
            items, resume = model_entries(params.model, extra)
        return items + appended_entries(self.config.append_info, params), resume

    def _replace_last(self, source: str, entries: tuple[list, dict]) -> None:
        """Make ``{prefix}-last.ckpt`` a copy of the numbered file just written: a hard link
        renamed over it (atomic, and no second write of a model-sized file), or where the
        file system has no hard links, a second atomic write."""
        path = os.path.join(self.directory, last_name(self.prefix))
        link = os.path.join(self.directory, f".tmp-{os.getpid()}-{host_tag()}link.ckpt")
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(link)  # this process's own, from an interrupted call
            os.link(source, link)
        except OSError:
            write_checkpoint(path, *entries, crc_check=self.config.crc_check)
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
