"""PIL interop: ToPIL, ToTensor, and the lazy Pillow import they share.

Pillow is optional (``pip install jisu[pil]``); it is imported only when a PIL image is asked
for. Every jisu op accepts a PIL image as input (it is read as a NumPy array: an RGB image as
HWC uint8, an ``L`` image as HW); called eagerly on one PIL image, an op whose result is still
an 8-bit image returns a PIL image, as MindSpore's do. In a pipeline a PIL image in a row
becomes an array as soon as it enters the row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.error_types import PipelineTypeError
from ..core.operation import TensorOperation
from ..core.pil_images import is_pil, to_pil
from ..core.rows import to_numpy_dtype
from ..transforms.ops import TypeCast


class ToPIL(TensorOperation):
    """An HWC (or HW) array as a PIL image: uint8 with 3 channels is ``RGB``, 4 ``RGBA``,
    2 ``LA``, 1 or HW ``L``; HW bool, uint16, int32, float32 are ``1``, ``I;16``, ``I``,
    ``F``. A PIL image passes through. Needs Pillow (``jisu[pil]``).

    In a pipeline the image becomes an array again as it enters the row; use it in a
    ``Compose`` before an op (or a function) that wants a PIL image.
    """

    def __call__(self, *args: Any) -> Any:
        if len(args) == 1 and is_pil(args[0]):
            return args[0]
        return super().__call__(*args)

    def apply(self, image: np.ndarray, rng=None):
        return to_pil("ToPIL", image)


#: pixel types MindSpore's ToTensor refuses (those OpenCV has no matrix type for)
_UNSUPPORTED = (np.dtype(np.int64), np.dtype(np.uint32), np.dtype(np.uint64))


class ToTensor(TensorOperation):
    """HWC (or HW) image -> CHW ``output_type`` (float32 by default) divided by 255.

    As in MindSpore, an image of uint32, int64, uint64 or text is refused
    (:class:`PipelineTypeError`, a ``TypeError`` and a ``RuntimeError``), and any other dtype is
    divided by 255 (uint8 maps to [0, 1]; other dtypes
    are not rescaled to their own range), in float32 (``x * float32(1 / 255)``), then cast to
    ``output_type``. A PIL image is read as an array first. NHWC batches give NCHW.
    """

    def __init__(self, output_type: Any = np.float32) -> None:
        try:
            if output_type is None:  # NumPy reads None as float64; MindSpore refuses it
                raise TypeError("None is no dtype")
            self.output_type = to_numpy_dtype(output_type)
        except TypeError as exc:
            raise TypeError(
                f"ToTensor: output_type must be a NumPy or torch dtype. Received: {output_type!r}"
            ) from exc
        if self.output_type.kind not in "biuf":
            raise TypeError(
                f"ToTensor: output_type must be numeric. Received: output_type={output_type!r}"
            )

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        if image.dtype.kind not in "biuf" or image.dtype in _UNSUPPORTED:
            raise PipelineTypeError(  # MindSpore 2.10: a RuntimeError
                "ToTensor: the image's dtype must be bool, int8/16/32, uint8/16 or float "
                f"(not uint32, int64, uint64, text). Received dtype {image.dtype}"
            )
        if image.ndim == 2:
            image = image[None]
        elif image.ndim == 3:
            image = image.transpose(2, 0, 1)
        elif image.ndim == 4:
            image = image.transpose(0, 3, 1, 2)
        else:
            raise ValueError(
                f"ToTensor: expected an HW, HWC or NHWC image. Received shape {image.shape}"
            )
        out = np.multiply(image, np.float32(1 / 255), dtype=np.float32)
        return out.astype(self.output_type, copy=False)


class ToType(TypeCast):
    """Cast an image to ``data_type`` (``mindspore.dataset.vision.ToType``; the same op as
    ``transforms.TypeCast``). The values are not rescaled: uint8 255 becomes 255.0."""


class ToNumpy(TensorOperation):
    """A PIL image (or any array-like) as a NumPy array: an RGB image as HWC uint8, an ``L``
    image as HW. Every jisu op takes PIL images already; this marks, as in MindSpore, where a
    ``Compose`` leaves PIL images for arrays."""

    pil_out = False

    def apply(self, image: np.ndarray, rng=None) -> np.ndarray:
        return image
