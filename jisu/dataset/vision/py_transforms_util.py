"""MindSpore's ``dataset.vision.py_transforms_util``: the PIL helpers behind its Python
transforms, which model-zoo augmentation code (AutoAugment) calls directly: ``is_pil``,
``augment_error_message``, ``pad``, ``crop``, ``random_crop``, ``rotate`` and
``adjust_brightness``/``adjust_contrast``/``adjust_saturation`` (PIL's enhancers), with
MindSpore's arguments and errors. Random positions come from Python's ``random``, as in
MindSpore."""

from __future__ import annotations

import numbers
import random
from typing import Any

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "adjust_saturation",
    "augment_error_message",
    "crop",
    "is_pil",
    "pad",
    "random_crop",
    "rotate",
]

augment_error_message = (
    "img should be PIL image. Got {}. Use Decode() for encoded data or ToPIL() for decoded data."
)


def is_pil(img: Any) -> bool:
    """Whether ``img`` is a PIL image."""
    return isinstance(img, Image.Image)


def _check(img: Any) -> None:
    if not is_pil(img):
        raise TypeError(augment_error_message.format(type(img)))


def _mode_name(mode: Any) -> str:
    return str(getattr(mode, "value", mode))


def pad(img: Any, padding: Any, fill_value: Any, padding_mode: Any) -> Any:
    """``img`` padded by ``padding`` (a number, ``(left/right, top/bottom)`` or ``(left, top,
    right, bottom)``) in ``padding_mode`` (constant/edge/reflect/symmetric, or a ``Border``)."""
    _check(img)
    if isinstance(padding, numbers.Number):
        left = top = right = bottom = int(padding)
    elif isinstance(padding, (tuple, list)) and len(padding) in (2, 4):
        left, top, right, bottom = (
            (padding[0], padding[1], padding[0], padding[1]) if len(padding) == 2 else padding
        )
    elif isinstance(padding, (tuple, list)):
        raise ValueError("The size of the padding list or tuple should be 2 or 4.")
    else:
        raise TypeError("Padding can be any of: a number, a tuple or list of size 2 or 4.")
    fill_value = tuple(fill_value) if isinstance(fill_value, list) else fill_value
    if not isinstance(fill_value, (numbers.Number, str, tuple)):
        raise TypeError("fill_value can be any of: an integer, a string or a tuple.")
    mode = _mode_name(padding_mode)
    if mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be 'constant', 'edge', 'reflect', or 'symmetric'.")
    palette = img.getpalette() if img.mode == "P" else None
    if mode == "constant":
        if isinstance(fill_value, tuple) and img.mode in ("L", "1"):
            fill_value = fill_value[0]
        out = ImageOps.expand(img, border=(left, top, right, bottom), fill=fill_value)
    else:
        array = np.asarray(img)
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (array.ndim - 2)
        out = Image.fromarray(np.pad(array, widths, mode))
    if palette is not None:
        out.putpalette(palette)
    return out


def crop(img: Any, top: int, left: int, height: int, width: int) -> Any:
    """The ``height`` x ``width`` region of ``img`` at ``(top, left)``."""
    _check(img)
    return img.crop((left, top, left + width, top + height))


def random_crop(img: Any, size: Any, padding: Any, pad_if_needed: bool, fill_value: Any,
                padding_mode: Any) -> Any:  # fmt: skip
    """A ``size`` (``(height, width)`` or an int) crop at a random place, after ``padding``
    and, with ``pad_if_needed``, padding up to ``size``."""
    _check(img)
    if isinstance(size, int):
        size = (size, size)
    elif not (isinstance(size, (tuple, list)) and len(size) == 2):
        raise TypeError("Size should be a single integer or a list/tuple (h, w) of length 2.")
    fill_value = tuple(fill_value) if isinstance(fill_value, list) else fill_value
    if padding is not None:
        img = pad(img, padding, fill_value, padding_mode)
    if pad_if_needed and img.size[0] < size[1]:
        img = pad(img, (size[1] - img.size[0], 0), fill_value, padding_mode)
    if pad_if_needed and img.size[1] < size[0]:
        img = pad(img, (0, size[0] - img.size[1]), fill_value, padding_mode)
    img_width, img_height = img.size
    height, width = size
    if height > img_height or width > img_width:
        raise ValueError(
            f"Crop size {tuple(size)} is larger than input image size {(img_height, img_width)}."
        )
    if (height, width) == (img_height, img_width):
        return crop(img, 0, 0, img_height, img_width)
    top = random.randint(0, img_height - height)
    left = random.randint(0, img_width - width)
    return crop(img, top, left, height, width)


def rotate(img: Any, angle: float, resample: Any, expand: bool, center: Any,
           fill_value: Any) -> Any:  # fmt: skip
    """``img`` rotated by ``angle`` degrees counter-clockwise (PIL's ``rotate``); an int
    ``fill_value`` fills all three channels."""
    _check(img)
    if isinstance(fill_value, int):
        fill_value = (fill_value,) * 3
    elif isinstance(fill_value, list):
        fill_value = tuple(fill_value)
    resample = getattr(resample, "value", resample)
    return img.rotate(angle % 360.0, resample, expand, center, fillcolor=fill_value)


def adjust_brightness(img: Any, brightness_factor: float) -> Any:
    """PIL's brightness enhancer by ``brightness_factor`` (1: unchanged)."""
    _check(img)
    return ImageEnhance.Brightness(img).enhance(brightness_factor)


def adjust_contrast(img: Any, contrast_factor: float) -> Any:
    """PIL's contrast enhancer by ``contrast_factor`` (1: unchanged)."""
    _check(img)
    return ImageEnhance.Contrast(img).enhance(contrast_factor)


def adjust_saturation(img: Any, saturation_factor: float) -> Any:
    """PIL's color enhancer by ``saturation_factor`` (1: unchanged)."""
    _check(img)
    return ImageEnhance.Color(img).enhance(saturation_factor)
