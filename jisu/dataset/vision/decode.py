"""Decode: encoded image bytes to an HWC uint8 RGB array."""

from __future__ import annotations

import cv2
import numpy as np
import simplejpeg

from ..transforms.base import TensorOperation


class FileBytes(np.ndarray):
    """Encoded bytes that remember the file they came from, so decode errors can name it."""

    path: str | None = None

    @classmethod
    def of(cls, data: np.ndarray, path: str) -> FileBytes:
        out = data.view(cls)
        out.path = path
        return out

    def __array_finalize__(self, obj: object) -> None:
        self.path = getattr(obj, "path", None)

    def __reduce__(self):
        return (FileBytes.of, (np.asarray(self), self.path))


def describe(data: np.ndarray) -> str:
    path = getattr(data, "path", None)
    return f"'{path}'" if path else f"{data.size} bytes"


def _buffer(data: np.ndarray) -> np.ndarray:
    if data.dtype == np.uint8 and data.ndim == 1:
        return data
    if data.dtype.kind == "S" and data.ndim == 0:
        return np.frombuffer(data.item(), dtype=np.uint8)
    raise TypeError(
        "Decode: expected encoded image bytes (a 1-D uint8 array or bytes). "
        f"Received dtype {data.dtype} and shape {data.shape}"
    )


class Decode(TensorOperation):
    """Decode JPEG (libjpeg-turbo via simplejpeg), PNG, BMP, ... (OpenCV) to HWC uint8 RGB.

    Both decoders release the GIL. Grayscale images come out with 3 identical channels.

    Raises:
        ValueError: the bytes are not a decodable image (truncated or corrupt).
    """

    def apply(self, data: np.ndarray, rng=None) -> np.ndarray:
        buf = _buffer(data)
        if buf.size >= 3 and buf[0] == 0xFF and buf[1] == 0xD8:
            try:
                return simplejpeg.decode_jpeg(buf, colorspace="RGB")
            except ValueError:
                pass  # unusual JPEG flavours: let OpenCV try
        image = cv2.imdecode(np.asarray(buf), cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(
                f"Decode: cannot decode {describe(data)} as an image "
                "(corrupt, truncated or unsupported format)"
            )
        return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
