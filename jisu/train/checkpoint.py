"""Checkpoints: network, optimizer, loss scale, epoch/step, the dataset iterator state and the
random generators' states, for a resume that continues exactly where the run stopped.
:class:`~jisu.train.callbacks.model_checkpoint.ModelCheckpoint` writes them while training.

Guarantees:

- **Safe loading.** :func:`load_checkpoint` unpickles with ``torch.load(weights_only=True)``:
  only tensors and plain values (numbers, strings, bytes, None, torch dtypes/devices, and
  lists/tuples/sets/dicts of them) are rebuilt; a file that needs anything else (a class, a
  function) is refused with :class:`MalformedFileError` and nothing in it runs.
  :func:`save_checkpoint` refuses to write such values in the first place.
- **Integrity.** Every checkpoint carries the CRC-32 of its bytes; a file whose bytes changed
  (a flipped bit, a truncation) is refused with :class:`MalformedFileError` naming it, before
  anything is unpickled. CRC-32 detects every error burst of up to 32 bits, so every
  single-byte change, and misses a random larger damage with probability 2**-32 (the record
  format's shards use the same).
- **Atomic.** A checkpoint is written to a temporary file in the same folder, fsynced and
  renamed: readers see the old file or the whole new one. A full disk raises ``OSError``
  (errno ENOSPC) naming the file and its folder, and leaves the old file and no temporary one.
- **Exact resume.** A checkpoint written by :class:`ModelCheckpoint` and loaded with
  ``load_checkpoint(path, model=model)`` makes ``model.train(..., initial_epoch=state["epoch"])``
  continue on the next batch with the weights, optimizer, loss scale and the states of the
  torch (CPU, and CUDA when in use), Python ``random`` and NumPy global generators that the
  uninterrupted run had at that step, so it gives the same losses.
- **Numbering.** ``state["epoch"]`` is the number of whole epochs done (Keras'
  ``initial_epoch``), ``state["step_in_epoch"]`` the steps done after them; the file's name
  and ``state["epoch_num"]`` give the 1-based epoch the step belongs to (MindSpore's). At an
  epoch's end they agree: ``run-2_24.ckpt`` (the end of the second epoch) holds ``epoch`` 2
  and ``step_in_epoch`` 0; inside an epoch, ``run-3_10.ckpt`` holds ``epoch`` 2 and
  ``step_in_epoch`` 10. An older file that holds an epoch's end as ``epoch`` N - 1 with
  ``step_in_epoch`` equal to the epoch's steps resumes the same, at epoch N.

File format: a checkpoint is a ``torch.save`` zip archive whose zip comment (the archive's
last bytes, a standard zip field that zip tools and ``torch.load`` ignore) is
``jisu-checkpoint v1 crc32=XXXXXXXX``, the CRC-32 of the archive as torch wrote it (with an
empty comment). The file stays an ordinary torch file: ``torch.load(path, weights_only=True)``
reads it too, without the check.
"""

from __future__ import annotations

import contextlib
import os
import random
import struct
import warnings
import zlib
from collections import OrderedDict
from typing import IO, Any

import numpy as np
import torch
from torch import nn

from ..dataset.record.validate import MalformedFileError  # noqa: F401 (what load_checkpoint raises)
from ..files import atomic_write
from .checkpoint_format import _EOCD, _EOCD_LEN, _TRAILER_LEN, _V1, read_state
from .ms_checkpoint import looks_like_ckpt

# What a checkpoint may hold: torch.load(weights_only=True) rebuilds exactly these (and more).
_PLAIN_LEAVES = (bool, int, float, complex, str, bytes, type(None), torch.dtype, torch.device)
_CONTAINERS = (dict, OrderedDict, list, tuple, set, torch.Size)
_TENSORS = (torch.Tensor, nn.Parameter)


# --------------------------------------------------------------------------- saving
def _train_step_state(step: Any) -> dict[str, Any]:
    """A train step's network (and optimizer) state: the model zoo's
    ``save_checkpoint(cb_params.train_network, ...)`` saves the wrapped network, as
    MindSpore's ``TrainOneStepCell`` holds its network's parameters and its optimizer's."""
    state = {"network": step.network.state_dict()}
    optimizer = getattr(step, "optimizer", None)
    if isinstance(optimizer, torch.optim.Optimizer):
        state["optimizer"] = optimizer.state_dict()
    return state


def save_checkpoint(save_obj: nn.Module | dict[str, Any], ckpt_file_name: str) -> None:
    """Save ``save_obj`` (a module: its state_dict under ``"network"``; or a dict) to
    ``ckpt_file_name`` atomically, with a CRC-32 of its bytes.

    Args:
        save_obj: an ``nn.Module``; a train step (``Model.train_network``,
            ``cb_params.train_network``: its network under ``"network"``, its optimizer's
            state under ``"optimizer"``); or a dict of tensors and plain values (numbers,
            strings, bytes, None, torch dtypes/devices, lists/tuples/sets/dicts of them).
        ckpt_file_name: the file to write; its folder is created if needed.

    Raises:
        TypeError: ``save_obj`` holds another type (a NumPy number, an object): such a file
            could not be loaded safely. The message gives the key path.
        OSError: the file could not be written; errno ENOSPC when the disk is full (the
            message names the file and its folder). The previous file is left intact.
    """
    if isinstance(save_obj, nn.Module):
        save_obj = {"network": save_obj.state_dict()}
    elif isinstance(getattr(save_obj, "network", None), nn.Module):
        save_obj = _train_step_state(save_obj)
    if not isinstance(save_obj, dict):
        raise TypeError(
            "save_checkpoint: save_obj must be an nn.Module or a dict. "
            f"Received: save_obj of type {type(save_obj).__name__}"
        )
    if not isinstance(ckpt_file_name, (str, os.PathLike)):
        raise TypeError(
            f"save_checkpoint: ckpt_file_name must be a path. Received: {ckpt_file_name!r}"
        )
    _check_plain(save_obj, "save_obj")
    with atomic_write(ckpt_file_name) as f:
        _write_with_checksum(save_obj, f)


def _check_plain(obj: Any, where: str) -> None:
    """Raise TypeError naming the first value under ``obj`` that ``weights_only`` loading
    would refuse (exact types: a NumPy float64 is a float subclass, yet refused)."""
    kind = type(obj)
    if kind in _TENSORS or kind in _PLAIN_LEAVES:
        return
    if kind not in _CONTAINERS:
        raise TypeError(
            f"save_checkpoint: {where} is a {kind.__module__}.{kind.__qualname__}; a checkpoint "
            "holds only tensors, numbers, strings, bytes, None, torch dtypes/devices and "
            "lists, tuples, sets and dicts of them, so that loading it cannot run code. "
            "Convert it (e.g. float(x) for a NumPy number, x.tolist() for an array)"
        )
    if isinstance(obj, dict):
        for key, value in obj.items():
            _check_plain(key, f"a key of {where}")
            _check_plain(value, f"{where}[{key!r}]")
    else:
        for i, value in enumerate(obj):
            _check_plain(value, f"{where}[{i}]")


class _ChecksumWriter:
    """The file object torch.save writes to: it passes the bytes on to ``file``, keeping
    their CRC-32 and the last zip-record's worth of them. It also keeps the first OSError of
    ``file`` itself: torch's zip writer hides it behind "unexpected pos ..." when it then
    writes the archive's end anyway."""

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file
        self.crc = 0
        self.tail = b""
        self.error: OSError | None = None

    def write(self, data: Any) -> int:
        with self._noting_errors():
            written = self._file.write(data)
        self.crc = zlib.crc32(data, self.crc)
        self.tail = (self.tail + bytes(memoryview(data)[-_EOCD_LEN:]))[-_EOCD_LEN:]
        return written

    def flush(self) -> None:
        with self._noting_errors():
            self._file.flush()

    @contextlib.contextmanager
    def _noting_errors(self):
        try:
            yield
        except OSError as exc:
            self.error = self.error or exc
            raise


def _write_with_checksum(obj: dict[str, Any], f: IO[bytes]) -> None:
    """torch.save ``obj`` into ``f``, then turn the archive's empty zip comment into the
    checksum comment (the last two bytes torch wrote are the comment's length, 0)."""
    writer = _ChecksumWriter(f)
    try:
        torch.save(obj, writer)
    except Exception:
        if writer.error is not None:  # the real cause, e.g. ENOSPC: atomic_write words it
            raise writer.error from None
        raise
    if writer.tail[:4] != _EOCD or writer.tail[-2:] != b"\0\0":
        raise RuntimeError(
            "save_checkpoint: torch.save did not end the file with an empty zip comment; "
            "this torch version writes a format jisu does not know"
        )
    f.seek(-2, os.SEEK_END)
    f.write(struct.pack("<H", _TRAILER_LEN) + _V1 + b"%08x" % writer.crc)


# --------------------------------------------------------------------------- loading
def load_checkpoint(
    ckpt_file_name: str,
    net: nn.Module | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    model: Any = None,
    *,
    crc_check: bool = True,
) -> dict[str, Any]:
    """Read a checkpoint, after checking its CRC-32, with ``weights_only`` unpickling.

    Load it into ``net``/``optimizer``, or into a :class:`jisu.Model` with its
    ``load_state_dict`` (network, optimizer, loss scale; and, for a checkpoint written by
    :class:`ModelCheckpoint`, where to resume and the random generators' states, restored when
    ``model.train`` starts with ``initial_epoch`` = the checkpoint's ``epoch``: the whole
    epochs done, so a file written at the end of epoch N, named ``{prefix}-N_{steps}``, holds
    ``epoch`` N and the resumed run begins epoch N + 1, 1-based).

    Args:
        ckpt_file_name: the checkpoint file.
        net, optimizer: where to load ``"network"`` and ``"optimizer"``.
        model: a :class:`jisu.Model` to resume (instead of ``net``/``optimizer``).
        crc_check: whether a checksum must be present (default True). A checksum that is
            present is always verified; ``False`` only lets a file without one (written by
            jisu before checksums, or by plain ``torch.save``) load unverified, still with
            ``weights_only``. (MindSpore's argument of that name defaults to False; jisu
            writes checksums always, so it requires them by default.)

    A MindSpore ``.ckpt`` file (recognised by its first bytes: a protobuf message, where a
    jisu checkpoint is a zip archive) is read by
    :func:`jisu.train.serialization.load_checkpoint` instead, and loaded into ``net`` (or
    ``model``'s network) by MindSpore's parameter names; ``crc_check`` does not apply (a
    MindSpore CRC trailer that is present is always verified).

    Returns:
        The checkpoint's dict; for a MindSpore file, what MindSpore's ``load_checkpoint``
        returns: an ``OrderedDict`` name -> tensor (or str).

    Raises:
        FileNotFoundError: no such file.
        MalformedFileError: (a ValueError) the file is damaged (checksum mismatch, no
            checksum while ``crc_check``), holds something other than tensors and plain
            values (refused without running it), or is not a jisu checkpoint.
    """
    path = os.fspath(ckpt_file_name)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_checkpoint: no such file: {path}")
    with open(path, "rb") as f:
        if looks_like_ckpt(f.read(16)):
            return _load_mindspore(path, net, optimizer, model)
        state = read_state(f, path, crc_check)
    if model is not None:
        model.load_state_dict(state)
        return state
    if net is not None:
        net.load_state_dict(state["network"])
    if optimizer is not None and "optimizer" in state:
        optimizer.load_state_dict(state["optimizer"])
    return state


def _load_mindspore(path: str, net: Any, optimizer: Any, model: Any) -> dict[str, Any]:
    """A MindSpore ``.ckpt`` file: what ``mindspore.load_checkpoint`` returns (name -> tensor
    or str), loaded into ``net`` (or ``model``'s network) by MindSpore's names."""
    from .serialization import load_checkpoint as load_mindspore

    if optimizer is not None:
        raise ValueError(
            f"load_checkpoint: '{path}' is a MindSpore checkpoint, which holds no jisu "
            "optimizer state; load it without optimizer="
        )
    if model is not None:
        net = model.network
    return load_mindspore(path, net=net)


# --------------------------------------------------------------------------- random state
def capture_rng_state() -> dict[str, Any]:
    """The states of the global random generators a training step may draw from: torch's
    CPU generator (dropout, random init), every CUDA device's when CUDA is in use, Python's
    ``random`` and NumPy's global ``np.random`` (user code in the network or loss).

    Only tensors and plain values, so a checkpoint holding it loads with ``weights_only``.
    Under ``torchrun`` each rank has its own states; rank 0 writes checkpoints, so a resume
    gives every rank rank 0's states (exact when the ranks were seeded alike).
    """
    kind, key, pos, has_gauss, gauss = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "python": random.getstate(),
        "numpy": (kind, key.tolist(), int(pos), int(has_gauss), float(gauss)),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Set the global generators to ``state`` (from :func:`capture_rng_state`). CUDA states
    are restored when CUDA is available; those of devices this machine lacks are skipped
    with a warning (the run cannot then be exact)."""
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    cuda = state.get("cuda") or []
    usable = torch.cuda.device_count() if cuda and torch.cuda.is_available() else 0
    for device, device_state in enumerate(cuda[:usable]):
        torch.cuda.set_rng_state(device_state, device)
    if len(cuda) > usable:
        warnings.warn(
            f"the checkpoint holds the random states of {len(cuda)} CUDA devices; "
            f"{usable} available here, so the resumed run's CUDA randomness differs",
            stacklevel=2,
        )
