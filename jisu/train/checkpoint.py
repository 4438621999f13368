"""Checkpoints for an exact resume: ``save_checkpoint``/``load_checkpoint`` (the one pair, from
:mod:`jisu.train.serialization`, kept importable here) and the random generators' states a
checkpoint carries.

:class:`~jisu.train.callbacks.model_checkpoint.ModelCheckpoint` writes checkpoints while
training; ``save_checkpoint(model, path)`` writes one at any time. Each is a MindSpore
``.ckpt`` file (MindSpore 2.10 loads its network and optimizer entries) with one more entry,
``"_jisu.resume_state"`` (:mod:`jisu.train.ckpt_state`), holding what MindSpore's format has no
place for.

Guarantees:

- **Safe loading.** The resume entry is unpickled with ``torch.load(weights_only=True)``: only
  tensors and plain values (numbers, strings, bytes, None, torch dtypes/devices, and
  lists/tuples/sets/dicts of them) are rebuilt; anything else (a class, a function) is refused
  with :class:`MalformedFileError` and nothing in it runs. ``save_checkpoint`` refuses to write
  such values in the first place. The MindSpore entries are parsed by a bounded reader that
  checks every size before allocating.
- **Integrity.** With ``crc_check=True`` (``save_checkpoint``, ``CheckpointConfig``) jisu
  writes MindSpore's CRC-32 trailer, and a file whose bytes changed (a flipped bit, a
  truncation) is refused with :class:`MalformedFileError` naming it: CRC-32 detects every
  error burst of up to 32 bits, so every single-byte change, and misses a random larger damage
  with probability 2**-32. A trailer that is present is always verified. It is off by
  default, as in MindSpore, because MindSpore 2.0's reader cannot parse a file with it.
- **Atomic.** A checkpoint is written to a temporary file in the same folder, fsynced and
  renamed: readers see the old file or the whole new one. A full disk raises ``OSError``
  (errno ENOSPC) naming the file and its folder, and leaves the old file and no temporary one.
- **Exact resume.** After ``load_checkpoint(path, model=model)`` of a file written by
  :class:`ModelCheckpoint` (or ``save_checkpoint(model, path)``), ``model.train(epochs,
  data)`` continues on the next batch with the weights, optimizer, loss scale, schedule and
  the states of the torch (CPU, and CUDA when in use), Python ``random`` and NumPy global
  generators that the uninterrupted run had at that step, so it gives the same losses.
- **Numbering.** The resume state's ``epoch`` is the number of whole epochs done (Keras'
  ``initial_epoch``), ``step_in_epoch`` the steps done after them; the file's name and its
  ``epoch_num`` entry (with ``append_info=["epoch_num"]``) give the 1-based epoch the step
  belongs to (MindSpore's). ``run-2_24.ckpt`` (the end of the second epoch) resumes at epoch
  index 2, step 0; ``run-3_10.ckpt`` at epoch index 2, step 10.

Files of jisu's earlier format (a ``torch.save`` zip archive with a checksum comment,
:mod:`jisu.train.checkpoint_format`) still load through the same ``load_checkpoint``.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import numpy as np
import torch

from ..dataset.record.validate import MalformedFileError
from .serialization import load_checkpoint, save_checkpoint

__all__ = [
    "MalformedFileError",
    "capture_rng_state",
    "load_checkpoint",
    "restore_rng_state",
    "save_checkpoint",
]


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
