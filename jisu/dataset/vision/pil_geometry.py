"""Pillow's own resize and rotation, for a PIL image given to ``Resize`` or ``RandomRotation``.

MindSpore 2.10 runs these two ops through Pillow when they are called on a PIL image
(``Image.resize``, ``Image.rotate``) and through OpenCV on arrays. The two paths differ by
more than rounding: Pillow's rotation centre is in its own coordinates (the origin at the
top-left pixel's corner, so ``center=(5, 7)`` is half a pixel from OpenCV's), its expanded
canvas is sized differently, and its resize filters are its own. Calling Pillow itself for
a PIL image gives MindSpore's answer exactly. Pillow is present whenever a PIL image is.
"""

from __future__ import annotations

from typing import Any

from .utils import Inter

#: Pillow's filter numbers for the modes MindSpore hands to Pillow (ANTIALIAS is LANCZOS)
PIL_FILTERS = {Inter.NEAREST: 0, Inter.ANTIALIAS: 1, Inter.BILINEAR: 2, Inter.BICUBIC: 3}


def pil_output_size(width: int, height: int, size: int | tuple[int, int]) -> tuple[int, int]:
    """(width, height) of MindSpore's resize of a PIL image: ``size`` as (height, width), or
    an int for the shorter side, the other side ``int(size / aspect)`` or ``int(size *
    aspect)`` (aspect = width / height), as MindSpore computes it."""
    if isinstance(size, tuple):
        return size[1], size[0]
    aspect = width / height
    if width < height:
        return size, int(size / aspect)
    return int(size * aspect), size


def pil_resize(image: Any, size: int | tuple[int, int], inter: Inter) -> Any:
    """``image`` resized with Pillow's filter for ``inter``; an int ``size`` equal to the
    shorter side gives the image back unchanged (as MindSpore does)."""
    width, height = image.size
    if isinstance(size, int) and min(width, height) == size:
        return image
    return image.resize(pil_output_size(width, height, size), PIL_FILTERS[inter])


def _pil_fill(image: Any, fill: int | tuple[int, ...]) -> int | tuple[int, ...]:
    """Pillow's ``fillcolor`` for ``image``: one value for a one-band image (an int, or the
    first of a 3-tuple), else three (an int repeated)."""
    if len(image.getbands()) == 1:
        return fill if isinstance(fill, int) else fill[0]
    return (fill,) * 3 if isinstance(fill, int) else tuple(fill)


def pil_rotate(
    op: str,
    image: Any,
    degrees: float,
    inter: Inter,
    expand: bool,
    center: tuple[float, float] | None,
    fill: int | tuple[int, ...],
) -> Any:
    """``image.rotate`` counter-clockwise by ``degrees`` with Pillow's filter for ``inter``.

    ANTIALIAS (Lanczos) is no filter Pillow's rotation has: Pillow takes it only where it
    needs no resampling (turns by 180 degrees, or by 90 that it can transpose), and MindSpore
    refuses it with a ``center`` or an angle that is not a multiple of 90; both are a
    ``ValueError`` naming the op.
    """
    angle = degrees % 360.0
    if inter is Inter.ANTIALIAS and (angle not in (0.0, 90.0, 180.0, 270.0) or center):
        raise ValueError(
            f"{op}: Inter.ANTIALIAS rotates only by multiples of 90 degrees about the image "
            f"centre (center=None). Received: angle={degrees}, center={center}"
        )
    try:
        return image.rotate(
            angle, PIL_FILTERS[inter], expand, center, fillcolor=_pil_fill(image, fill)
        )
    except ValueError as exc:  # Pillow's refusal of LANCZOS where it must resample
        raise ValueError(
            f"{op}: Inter.ANTIALIAS cannot rotate this image by {degrees} degrees (Pillow "
            f"transposes only square images, or with expand=True): {exc}"
        ) from exc
