"""The image helpers of ``mindspore.dataset.vision.utils``: ``read_file``, ``read_image``,
``get_image_size``, ``get_image_num_channels``.

Files are read with the same checks as :class:`~jisu.dataset.vision.Decode`: the size an
image's header declares is checked against ``config.get_max_image_pixels()`` before any pixel
memory is allocated, and :func:`read_file` refuses what is not a regular file.
"""

from __future__ import annotations

import os
from enum import IntEnum
from typing import Any

import cv2
import numpy as np

from .decode import FileBytes, check_declared_size, decode_image


class ImageReadMode(IntEnum):
    """How :func:`read_image` decodes (MindSpore's names and values): UNCHANGED keeps the
    file's channels (gray stays one channel), GRAYSCALE gives one channel, COLOR three (RGB)."""

    UNCHANGED = 0
    GRAYSCALE = 1
    COLOR = 2


def read_file(filename: str) -> np.ndarray:
    """The bytes of file ``filename`` as a 1-D uint8 array (what ``Decode`` takes)."""
    if not isinstance(filename, (str, os.PathLike)):
        raise TypeError(f"read_file: filename must be a str. Received: filename={filename!r}")
    path = os.fspath(filename)
    if not os.path.isfile(path):
        raise ValueError(f"read_file: '{path}' does not exist or is not a regular file")
    return FileBytes.of(np.fromfile(path, dtype=np.uint8), path)


def read_image(filename: str, mode: ImageReadMode = ImageReadMode.UNCHANGED) -> np.ndarray:
    """The image in file ``filename`` as HWC uint8 (RGB, or one channel: see
    :class:`ImageReadMode`), refusing decompression bombs and damaged files as ``Decode`` does.
    """
    if not isinstance(mode, ImageReadMode):
        raise TypeError(f"read_image: mode must be an ImageReadMode. Received: mode={mode!r}")
    data = read_file(filename)
    if mode is ImageReadMode.COLOR:
        return decode_image("read_image", data)
    check_declared_size("read_image", data, data)
    flag = cv2.IMREAD_GRAYSCALE if mode is ImageReadMode.GRAYSCALE else cv2.IMREAD_UNCHANGED
    image = cv2.imdecode(np.asarray(data), flag)
    if image is None:
        raise ValueError(f"read_image: cannot decode '{data.path}' as an image")
    if image.ndim == 2:
        return image[..., None]
    if image.dtype != np.uint8:  # 16-bit PNG/TIFF: MindSpore's read_image gives uint8 data
        image = (image // 257).astype(np.uint8) if image.dtype == np.uint16 else image
    code = cv2.COLOR_BGRA2RGBA if image.shape[2] == 4 else cv2.COLOR_BGR2RGB
    return cv2.cvtColor(image, code)


def get_image_size(image: Any) -> list[int]:
    """``[height, width]`` of an HW/HWC array or a PIL image."""
    if isinstance(image, np.ndarray):
        if image.ndim < 2:
            raise ValueError(
                f"get_image_size: expected an image of 2 or more dimensions. Received shape "
                f"{image.shape}"
            )
        return [int(image.shape[0]), int(image.shape[1])]
    if hasattr(image, "size") and hasattr(image, "getbands"):  # a PIL image: (width, height)
        return [int(image.size[1]), int(image.size[0])]
    raise TypeError(
        f"get_image_size: image must be a NumPy array or a PIL image. Received: {type(image)}"
    )


def get_image_num_channels(image: Any) -> int:
    """Channels of an HW (1) or HWC array, or of a PIL image (its bands)."""
    if isinstance(image, np.ndarray):
        if image.ndim < 2:
            raise ValueError(
                "get_image_num_channels: expected an image of 2 or more dimensions. Received "
                f"shape {image.shape}"
            )
        return 1 if image.ndim == 2 else int(image.shape[-1])
    if hasattr(image, "getbands"):
        return len(image.getbands())
    raise TypeError(
        "get_image_num_channels: image must be a NumPy array or a PIL image. "
        f"Received: {type(image)}"
    )
