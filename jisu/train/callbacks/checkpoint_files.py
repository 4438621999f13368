"""The files :class:`~jisu.train.callbacks.model_checkpoint.ModelCheckpoint` writes: their
names, the value a ranked file recorded, and :func:`latest_checkpoint`, which finds the one to
resume from.

File names: ``{prefix}-{epoch}_{step}.ckpt`` with the 1-based epoch and the step in it, as
MindSpore writes them (``CKP-10_150.ckpt``: a MindSpore script that loads
``checkpoint_lenet-1_1875.ckpt`` by name finds it), or with ``CheckpointConfig(zero_pad=True)``
zero-padded (``CKP-0010_000150.ckpt``, widths :data:`EPOCH_DIGITS` and :data:`STEP_DIGITS`) so
that a plain ``ls`` lists them in training order. Both forms are recognised: counted by
``keep_checkpoint_max``, ranked, removed and found by :func:`latest_checkpoint` alike.
``{prefix}-last.ckpt`` is ``save_last``'s file. :func:`free_prefix` is MindSpore's renaming
of a prefix whose files a folder already holds (``CKP`` -> ``CKP_1``), :func:`resumed_prefix`
tells whether a run resumed from one of them (and so continues them).
"""

from __future__ import annotations

import os
import re
from typing import Any

import torch

from ..ckpt_state import RESUME_ENTRY, unpack_resume
from ..ms_checkpoint import read_ckpt

#: Digits of the epoch and of the step in a checkpoint's name, zero-padded so that a plain
#: ``ls`` lists the files in training order (``CKP-0002_000150.ckpt`` before
#: ``CKP-0010_000150.ckpt``) up to epoch 9999 and 999999 steps an epoch. Larger numbers are
#: written in full: still read right by jisu, only ``ls`` then sorts them out of order.
EPOCH_DIGITS, STEP_DIGITS = 4, 6


def numbered_name(prefix: str, epoch: int, step: int, zero_pad: bool = False) -> str:
    if zero_pad:
        return f"{prefix}-{epoch:0{EPOCH_DIGITS}d}_{step:0{STEP_DIGITS}d}.ckpt"
    return f"{prefix}-{epoch}_{step}.ckpt"


def numbered_pattern(prefix: str) -> re.Pattern[str]:
    """The names of ``prefix``'s numbered checkpoints: the zero-padded ones and the unpadded
    ``{prefix}-{epoch}_{step}.ckpt`` of MindSpore and of earlier jisu versions."""
    return re.compile(re.escape(prefix) + r"-(\d+)_(\d+)\.ckpt")


def last_name(prefix: str) -> str:
    return f"{prefix}-last.ckpt"  # never matches the numbered pattern (no digits)


_SEPARATORS = (os.sep, os.altsep)


def free_prefix(directory: str, prefix: str) -> str:
    """``prefix``, or MindSpore's renamed ``{prefix}_{n}`` when ``directory`` already holds
    checkpoints of it (MindSpore 2.10's ``_chg_ckpt_file_name_if_same_exist``): a ``.ckpt``
    or ``.safetensors`` file (not ``*_breakpoint.ckpt``) whose name starts with ``prefix``
    followed by a character that is not a letter; ``{prefix}-...`` makes ``n`` at least 1,
    ``{prefix}_{k}-...`` at least ``k + 1``. A folder that does not exist holds none."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return prefix
    suffix, size = 0, len(prefix)
    for name in names:
        if os.path.splitext(name)[1] not in (".ckpt", ".safetensors"):
            continue
        if name.endswith("_breakpoint.ckpt") or not name.startswith(prefix):
            continue
        if len(name) <= size or name[size].isalpha():
            continue
        index = name[size:].find("-")
        if index == 0:
            suffix = max(suffix, 1)
        elif index != -1:
            number = name[size + 1 : size + index]
            if number.isascii() and number.isdigit():
                suffix = max(suffix, int(number) + 1)
    return f"{prefix}_{suffix}" if suffix else prefix


def resumed_prefix(loaded: str | None, directory: str, prefix: str) -> str | None:
    """The prefix of the run that the checkpoint ``loaded`` (the file a Model was resumed
    from) belongs to, when it is one of ``prefix``'s files in ``directory`` (numbered or
    ``-last``), or of a renamed ``{prefix}_{n}``; None otherwise (the run resumed from
    elsewhere, or did not resume)."""
    if not loaded or os.path.dirname(loaded) != os.path.realpath(directory):
        return None
    match = re.fullmatch(
        re.escape(prefix) + r"(_\d+)?-(?:\d+_\d+|last)\.ckpt", os.path.basename(loaded)
    )
    return None if match is None else prefix + (match[1] or "")


def check_prefix(owner: str, prefix: Any) -> None:
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
        ...     jisu.load_checkpoint(path, model=model)
        >>> model.train(10, data)  # from the checkpoint's position, or from the start

    Raises:
        ValueError: ``prefix`` is empty or holds a path separator.
    """
    check_prefix("latest_checkpoint", prefix)
    pattern, last = numbered_pattern(prefix), last_name(prefix)
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


def recorded_value(path: str, monitor: str) -> float | None:
    """The value of ``monitor`` that the checkpoint ``path`` recorded (in its resume entry;
    in a file of jisu's earlier format, its ``monitor``); None if it recorded none, another
    monitor's, or cannot be read (damaged, or not a checkpoint: not one of ours to rank)."""
    try:
        with open(path, "rb") as f:
            earlier = f.read(2) == b"PK"
        if earlier:  # memory-mapped: the tensors are not read
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        else:
            entries = read_ckpt(path, keep=lambda name: name == RESUME_ENTRY)
            state = unpack_resume(entries[RESUME_ENTRY], path)
    except Exception:
        return None
    record = state.get("monitor") if isinstance(state, dict) else None
    if isinstance(record, dict) and record.get("name") == monitor:
        value = record.get("value")
        if type(value) is float:
            return value
    return None
