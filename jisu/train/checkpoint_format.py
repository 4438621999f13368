"""jisu's earlier checkpoint format, read only, and the safe loader of ``torch.save`` bytes.

Before issue 46 jisu wrote its checkpoints as a ``torch.save`` zip archive of a nested dict
(``network``: a torch state dict, ``optimizer``, ``epoch`` ...) whose zip comment holds a
CRC-32 of the rest (``jisu-checkpoint v1 crc32=<8 hex digits>``). Nothing writes that format
any more (every ``.ckpt`` jisu writes is MindSpore's); :func:`read_state` still reads such
files for :func:`jisu.train.serialization.load_checkpoint`: the checksum verified (a file
without one only with ``crc_check=False``), unpickled with ``weights_only``, its structure
checked before anything uses it. :func:`safe_load` also reads the resume entry of the new
files (:mod:`jisu.train.ckpt_state`), and :func:`check_resume_fields` checks both."""

from __future__ import annotations

import os
import pickle
import random
import re
import struct
import zlib
from typing import IO, Any

import numpy as np
import torch

from ..dataset.record.validate import MalformedFileError

_MAGIC = b"jisu-checkpoint "  # the start of every jisu checksum comment, any version
_V1 = _MAGIC + b"v1 crc32="
_TRAILER_LEN = len(_V1) + 8  # the comment: _V1 and 8 lowercase hex digits
_EOCD = b"PK\x05\x06"  # zip end-of-central-directory record: 22 bytes, then the comment
_EOCD_LEN = 22
_ZIP_START = b"PK\x03\x04"  # a zip archive's first record, as torch.save writes it
_CHUNK = 1 << 20


def read_state(f: IO[bytes], path: str) -> dict[str, Any]:
    """The checkpoint dict in the open file ``f`` (jisu's earlier format): its checksum
    verified, unpickled with ``weights_only``, its structure checked.

    Raises:
        MalformedFileError: (a ValueError) damaged, without a checksum, or not a jisu
            checkpoint.
    """
    if not _verify_checksum(f, path):
        f.seek(0)
        zipped = f.read(4) == _ZIP_START
        raise MalformedFileError(
            path,
            "has no jisu checksum: it was written by plain torch.save or by a jisu without "
            "checksums, or its end is damaged. If you know it is intact, read it with "
            "torch.load(path, weights_only=True)"
            if zipped
            else "is not a checkpoint (neither MindSpore's format nor a torch.save zip archive)",
        )
    f.seek(0)
    state = safe_load(f, path, verified=True)
    _check_structure(state, path)
    return state


def _verify_checksum(f: IO[bytes], path: str) -> bool:
    """Whether ``f`` ends with a jisu checksum comment (False: it has none). One that is
    there must be well formed and match the CRC-32 of the rest, else MalformedFileError."""
    size = os.fstat(f.fileno()).st_size
    if size < _EOCD_LEN + _TRAILER_LEN:
        return False
    f.seek(size - _EOCD_LEN - _TRAILER_LEN)
    tail = f.read()
    comment = tail[_EOCD_LEN:]
    if not comment.startswith(_MAGIC):
        return False
    digits = comment[len(_V1) :]
    if not comment.startswith(_V1) or not re.fullmatch(rb"[0-9a-f]{8}", digits):
        raise MalformedFileError(path, f"has a damaged or unknown checksum record {comment!r}")
    if tail[:4] != _EOCD or tail[20:22] != struct.pack("<H", _TRAILER_LEN):
        raise MalformedFileError(path, "is damaged: its zip end record was altered")
    crc = zlib.crc32(b"\0\0", _crc_of_prefix(f, size - _TRAILER_LEN - 2, path))
    if crc != int(digits, 16):
        raise MalformedFileError(
            path,
            f"is damaged: its bytes have CRC-32 {crc:08x} but it was written with "
            f"{digits.decode()} (a changed or corrupted file); it was not loaded",
        )
    return True


def _crc_of_prefix(f: IO[bytes], length: int, path: str) -> int:
    """CRC-32 of the first ``length`` bytes of ``f``, read in chunks (no whole-file copy)."""
    f.seek(0)
    crc, left = 0, length
    while left:
        chunk = f.read(min(_CHUNK, left))
        if not chunk:
            raise MalformedFileError(path, "was truncated while it was being read")
        crc = zlib.crc32(chunk, crc)
        left -= len(chunk)
    return crc


def safe_load(f: IO[bytes], path: str, verified: bool) -> Any:
    """``torch.load(weights_only=True)`` with its failures turned into one clear error."""
    try:
        return torch.load(f, map_location="cpu", weights_only=True)
    except MemoryError:
        raise
    except Exception as exc:
        detail = _torch_reason(exc)
        if isinstance(exc, pickle.UnpicklingError) and verified:
            reason = (
                "was refused: it holds something other than tensors and plain values, and "
                f"rebuilding that could run code ({detail}). Load it with "
                "torch.load(weights_only=False) only if you trust where it came from"
            )
        elif isinstance(exc, pickle.UnpicklingError):
            reason = (
                "was refused: it is damaged, or holds something other than tensors and plain "
                f"values, whose rebuilding could run code ({detail})"
            )
        else:
            reason = f"cannot be read as a checkpoint ({type(exc).__name__}: {detail})"
        raise MalformedFileError(path, reason) from exc


def _torch_reason(exc: Exception) -> str:
    """The informative sentence of a torch.load error (its weights-only errors are long)."""
    text = str(exc)
    found = re.search(r"WeightsUnpickler error: ([^\n]*?)(?:\. |\n|$)", text)
    if found and found.group(1).strip():
        return found.group(1).strip()
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _check_structure(state: Any, path: str) -> None:
    """A loaded checkpoint must have the shape jisu wrote before anything uses it."""
    if not isinstance(state, dict) or not isinstance(state.get("network"), dict):
        raise MalformedFileError(path, "is not a jisu checkpoint (no 'network' dict)")
    check_resume_fields(state, path)


def check_resume_fields(state: dict[str, Any], path: str) -> None:
    """The position, the state dicts and the random states of a resume state (an earlier
    checkpoint's dict, or a new file's resume entry), checked before anything uses them."""
    for key in ("epoch", "step_in_epoch", "cur_step_num"):
        value = state.get(key, 0)
        if type(value) is not int or value < 0:
            raise MalformedFileError(path, f"holds a bad {key!r}: {value!r} (an int >= 0)")
    for key in ("optimizer", "loss_scale_manager", "dataset_state"):
        if state.get(key) is not None and not isinstance(state[key], dict):
            raise MalformedFileError(path, f"holds a bad {key!r}: not a dict")
    if state.get("rng_state") is not None:
        _check_rng_state(state["rng_state"], path)


def _check_rng_state(state: Any, path: str) -> None:
    """Check ``state`` by setting it on fresh generators (not the global ones), so a bad one
    is refused at load, naming the file, instead of failing when training resumes."""
    try:
        if not isinstance(state, dict):
            raise TypeError("not a dict")
        torch.Generator().set_state(state["torch"])
        random.Random().setstate(state["python"])
        np.random.RandomState().set_state(state["numpy"])
        cuda = state.get("cuda") or []
        if not isinstance(cuda, list) or not all(
            isinstance(s, torch.Tensor) and s.dtype == torch.uint8 and s.dim() == 1 for s in cuda
        ):
            raise TypeError("'cuda' is not a list of uint8 tensors")
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError, OverflowError) as exc:
        raise MalformedFileError(
            path, f"holds a bad 'rng_state' ({type(exc).__name__}: {exc})"
        ) from exc
