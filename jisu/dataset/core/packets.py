"""Device-decode packets: the rows a device decode leaves in the pipeline (the wire format).

A map with a decode op set to ``device("GPU")`` (:mod:`jisu.dataset.device`) emits, instead of
pixels, one packet per sample: the encoded bytes (or pixels decoded in the pipeline), the crop
box and the flip decisions. The batch assembly pads such rows (:func:`is_packet_column`), and
the offload module parses them (:class:`Packet`). The format lives in ``core`` because both the
engine and the device side read it.

Packet layout (little-endian): 8 magic bytes, 8 int64 ``(kind, payload bytes, sample, epoch,
height, width, channels, params)``, ``params`` int64 (crop top, left, height, width, then one
0/1 per flip op), then the payload: the JPEG bytes (kind 0; height/width/channels describe the
source) or HWC uint8 pixels after the crop (kind 1). The module validates every packet before
it trusts a length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

MAGIC = np.frombuffer(b"\x93JISUDV1", dtype=np.uint8)
_HEADER = MAGIC.size + 8 * 8
JPEG, PIXELS = 0, 1  # packet kinds: encoded bytes, or pixels decoded in the pipeline
_MAX_PARAMS = 64
SLACK_BYTES = 1 << 20  # a JPEG's bytes beyond its raw pixel size (3 per pixel) that it ships


def is_packet_column(values: Sequence[Any]) -> bool:
    """Whether every value is a device-decode packet (the batch pads such rows)."""
    return all(
        isinstance(v, np.ndarray)
        and v.dtype == np.uint8
        and v.ndim == 1
        and v.size >= _HEADER
        and np.array_equal(v[: MAGIC.size], MAGIC)
        for v in values
    )


def pack(kind: int, payload: np.ndarray, index: int, epoch: int, shape, params) -> np.ndarray:
    header = np.array([kind, payload.size, index, epoch, *shape, len(params)], dtype="<i8").view(
        np.uint8
    )
    tail = np.asarray(params, dtype="<i8").view(np.uint8)
    return np.concatenate([MAGIC, header, tail, payload.reshape(-1)])


class Packet:
    """One parsed packet (see the module docstring); raises ValueError for a malformed one."""

    __slots__ = ("channels", "epoch", "height", "index", "kind", "params", "payload", "width")

    def __init__(self, row: np.ndarray) -> None:
        if row.size < _HEADER or not np.array_equal(row[: MAGIC.size], MAGIC):
            raise ValueError(
                "offload_module: a row of the device-decoded column is not a jisu packet; "
                "pass the batch as the pipeline made it"
            )
        head = row[MAGIC.size : _HEADER].view("<i8")
        kind, size, index, epoch, height, width, channels, count = (int(v) for v in head)
        start = _HEADER + 8 * count
        if (
            kind not in (JPEG, PIXELS)
            or not 0 <= count <= _MAX_PARAMS
            or size < 0
            or start + size > row.size
            or min(height, width, channels) < 0
            or (kind == PIXELS and height * width * channels != size)
        ):
            raise ValueError(
                f"offload_module: a malformed packet (sample {index}, epoch {epoch}): its "
                "header does not fit its bytes"
            )
        self.kind, self.index, self.epoch = kind, index, epoch
        self.height, self.width, self.channels = height, width, channels
        self.params = [int(v) for v in row[_HEADER:start].view("<i8")]
        self.payload = row[start : start + size]

    def where(self) -> str:
        return f"sample {self.index} of epoch {self.epoch}"
