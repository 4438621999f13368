"""PIL images as op inputs and outputs, with the lazy Pillow import they share.

Pillow is optional (``pip install jisu[pil]``); it is imported only when a PIL image is asked
for. The op base (:mod:`.operation`) uses :func:`is_pil` and :func:`to_pil` to return a PIL
image for a PIL input, as MindSpore's ops do; :mod:`jisu.dataset.vision.pil` builds ``ToPIL``
and ``ToTensor`` on them.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def pil_image_module():
    """``PIL.Image``, or an ImportError that says how to install it."""
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "PIL images need Pillow, which is not installed: pip install 'jisu[pil]' "
            "(or pip install pillow)"
        ) from exc
    return Image


def is_pil(value: Any) -> bool:
    """Whether ``value`` is a PIL image (without importing Pillow when it is not loaded)."""
    module = sys.modules.get("PIL.Image")
    return module is not None and isinstance(value, module.Image)


def to_pil(op: str, image: np.ndarray):
    """An HW / HWC (1-4 channels) array as a PIL image (Pillow's mode for its dtype)."""
    Image = pil_image_module()
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 3:
        if not 2 <= image.shape[2] <= 4:
            raise ValueError(
                f"{op}: expected at most 4 channels (HWC). Received shape {image.shape}"
            )
        if image.dtype != np.uint8:
            raise TypeError(
                f"{op}: a {image.shape[2]}-channel image must be uint8 for PIL. "
                f"Received dtype {image.dtype}"
            )
    elif image.ndim != 2:
        raise ValueError(f"{op}: expected an HW or HWC image. Received shape {image.shape}")
    elif image.dtype not in (np.bool_, np.uint8, np.uint16, np.int32, np.float32):
        raise TypeError(
            f"{op}: PIL takes bool, uint8, uint16, int32 or float32 single-channel images. "
            f"Received dtype {image.dtype}"
        )
    return Image.fromarray(np.ascontiguousarray(image))
