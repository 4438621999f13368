"""Decode on the device: the pipeline ships JPEG bytes and random draws, the device decodes.

``vision.RandomCropDecodeResize(224).device("GPU")`` (or ``vision.Decode().device("GPU")``
followed by a crop op) in a ``map(..., offload=True)`` moves the decode, the crop, the resize
and any flips after it out of the pipeline. The pipeline still makes every random decision,
on the CPU and from the same per-(seed, epoch, sample, op) streams as the host ops, reading
only the JPEG header: the rows it emits are *packets* (the encoded bytes, the crop box, the flip
decisions), batched as one padded uint8 array. ``dataset.offload_module()`` then decodes each
batch's crop regions on the device it sits on — nvImageCodec's batched nvJPEG decoder on a CUDA
device, its libjpeg-turbo CPU decoder (or jisu's own decoders) elsewhere — resizes, flips, and
runs the offloaded Normalize/HWC2CHW tail. A CPU worker then only parses headers: the most
expensive op of an image pipeline leaves the host.

What the device path gives up: the pipeline no longer sees pixels, so a corrupt JPEG is noticed
when the module decodes it (the error names the sample and epoch), and nvJPEG's IDCT and
upsampling differ from libjpeg-turbo's by a few levels (``:fancy_upsampling=1`` is asked for to
stay close). Images that are not JPEG, whose crop the header alone cannot place, or whose file
is much larger than its pixels (it would widen every row of its padded batch) are decoded and
cropped in the pipeline as before and travel as pixels inside their packet. The device's side
is :mod:`.decoder`; the packets' layout is :mod:`jisu.dataset.core.packets`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.operation import TensorOperation
from ..core.packets import JPEG, PIXELS, SLACK_BYTES, pack

# ---------------------------------------------------------------- which ops can go


def _is(op: Any, *names: str) -> bool:
    return type(op).__name__ in names and type(op).__module__.startswith("jisu.dataset.vision")


_CROPS = ("RandomResizedCrop", "Crop", "CenterCrop", "ResizedCrop")
_FLIPS = ("RandomHorizontalFlip", "RandomVerticalFlip", "HorizontalFlip", "VerticalFlip")
_INTERS = ("NEAREST", "LINEAR", "BILINEAR", "CUBIC", "BICUBIC")


def device_capable(op: Any) -> bool:
    """Whether ``op.device("GPU")`` is accepted: a decode op that can run on the device."""
    return _is(op, "Decode", "RandomCropDecodeResize")


def _resize_of(op: Any) -> tuple[tuple[int, int], str] | None:
    """(output size, interpolation name) of a crop op that resizes; None for plain crops."""
    if _is(op, "RandomCropDecodeResize", "RandomResizedCrop"):
        return op._params.size, op._params.interpolation.name
    if _is(op, "ResizedCrop"):
        return tuple(op.size), op.interpolation.name
    return None


def split_device(ops: Sequence[Any]) -> tuple[list[Any], DevicePlan | None, int]:
    """(ops before the device part, the plan standing for the device decode + crop + flips, the
    index of the first op after them) — plan None when no op was set to ``device("GPU")``.

    Raises:
        ValueError: the ops after the device decode cannot all run on the device.
    """
    ops = list(ops)
    start = next(
        (k for k, op in enumerate(ops) if getattr(op, "device_target", "CPU") == "GPU"), None
    )
    if start is None:
        return ops, None, len(ops)
    head = ops[start]
    k = start + 1
    crop = None
    if _is(head, "Decode"):
        if head.to_pil:
            raise ValueError("map: Decode(to_pil=True) cannot run on the device")
        if not getattr(head, "rgb", True):
            raise ValueError("map: Decode(rgb=False) cannot run on the device")
        if k >= len(ops) or not _is(ops[k], *_CROPS):
            after = type(ops[k]).__name__ if k < len(ops) else "nothing"
            raise ValueError(
                "map: Decode().device('GPU') must be followed by a crop op "
                f"({', '.join(_CROPS)}) so that every image of a batch has one size; "
                f"it is followed by {after}"
            )
        crop = ops[k]
        k += 1
    resize = _resize_of(crop if crop is not None else head)
    if resize is not None and resize[1] not in _INTERS:
        name = type(crop if crop is not None else head).__name__
        raise ValueError(
            f"map: {name} runs on the device only with interpolation NEAREST, BILINEAR or "
            f"BICUBIC. Received: interpolation=Inter.{resize[1]}"
        )
    flips = []
    while k < len(ops) and _is(ops[k], *_FLIPS):
        flips.append(ops[k])
        k += 1
    return ops[:start], DevicePlan(head, crop, flips), k


# ---------------------------------------------------------------- the pipeline's side


class DevicePlan(TensorOperation):
    """Stands in the pipeline for the device's decode, crop and flips: reads the JPEG header,
    draws the crop and the flips from their ops' random streams, and emits a packet."""

    randomized = False  # draws from the streams of the ops it stands for (:meth:`plan`)

    def __init__(self, decode: Any, crop: Any | None, flips: list[Any]) -> None:
        self.decode = decode
        self.crop = crop
        self.flips = list(flips)
        self.name = "+".join(type(op).__name__ for op in self.ops)
        self.resize = _resize_of(crop if crop is not None else decode)

    @property
    def ops(self) -> list[Any]:
        return [self.decode, *([self.crop] if self.crop is not None else []), *self.flips]

    def apply(self, data: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Eagerly (outside a pipeline): one fresh stream for every op."""
        return self.plan(data, lambda _k: np.random.default_rng(), 0, 0)

    def plan(
        self,
        data: np.ndarray,
        rng_at: Callable[[int], np.random.Generator],
        index: int,
        epoch: int,
    ) -> np.ndarray:
        """The packet of one sample; ``rng_at(j)``: the random stream of the ``j``-th op."""
        from ..vision.decode import _buffer, check_declared_size, is_jpeg

        buf = _buffer(data)
        box = None
        op = self.crop if self.crop is not None else self.decode
        rng = rng_at(len(self.ops) - len(self.flips) - 1) if op.randomized else None
        state = rng.bit_generator.state if rng is not None else None
        if is_jpeg(buf):
            size = check_declared_size(type(self.decode).__name__, data, buf)
            # a file much larger than its pixels (metadata, trailing bytes) would widen every
            # row of its padded batch to its size: it is decoded here and ships its crop
            if size is not None and buf.size <= 3 * size[0] * size[1] + SLACK_BYTES:
                box = self._box(op, size, rng)
        if box is not None:
            packet_kind, payload, shape = JPEG, buf, (*size, 3)
        else:  # decoded here: the crop the header alone cannot place, or not a JPEG
            if rng is not None:
                rng.bit_generator.state = state
            pixels = self.decode.apply(data, rng=rng if self.crop is None else None)
            if self.crop is not None:
                pixels = self.crop.apply(pixels, rng=rng)
            if pixels.ndim == 2:
                pixels = pixels[:, :, None]
            packet_kind, payload, shape = PIXELS, np.ascontiguousarray(pixels), pixels.shape
            box = (0, 0, pixels.shape[0], pixels.shape[1])
        first_flip = len(self.ops) - len(self.flips)
        flags = [self._flip(f, rng_at(first_flip + j)) for j, f in enumerate(self.flips)]
        return pack(packet_kind, payload, index, epoch, shape, [*box, *flags])

    @staticmethod
    def _box(op: Any, size: tuple[int, int], rng: Any) -> tuple[int, int, int, int] | None:
        if _is(op, "RandomCropDecodeResize"):
            from ..vision.random_crop_resize import sample_crop

            p = op._params
            return sample_crop(size[0], size[1], p.scale, p.ratio, p.max_attempts, rng)
        return op.crop_region(size[0], size[1], rng)

    @staticmethod
    def _flip(op: Any, rng: np.random.Generator) -> int:
        if op.randomized:
            return int(rng.random() < op.prob)  # the draw the host op makes
        return 1
