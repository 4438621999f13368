"""Which tail of a map's ops leaves the pipeline for the device (``map(..., offload=True)``).

The tail is made of ``Rescale``, ``Normalize``, ``HWC2CHW`` and ``TypeCast`` (cheap per pixel,
heavy in bytes: batches leave the pipeline as uint8 NHWC, 4x fewer bytes than float32), or
starts at a decode op set to ``device("GPU")`` (:mod:`.decode_plan`). :mod:`.module` applies
it on the device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..transforms.ops import TypeCast
from ..vision.pixel import HWC2CHW, Normalize, Rescale
from .decode_plan import split_device

OFFLOADABLE = (Rescale, Normalize, HWC2CHW, TypeCast)


def split_offload(operations: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(ops kept in the pipeline, the offloaded tail).

    The tail is the longest run of Rescale/Normalize/HWC2CHW/TypeCast at the end; when a
    decode op was set to ``device("GPU")``, it starts at that op instead
    (:mod:`.decode_plan`): the pipeline keeps a :class:`~.decode_plan.DevicePlan` that
    draws the decode's crop and the flips, and the tail holds the same plan, which decodes.

    Raises:
        ValueError: an op after a device decode that cannot run on the device.
    """
    ops = list(operations)
    host, plan, k = split_device(ops)
    if plan is not None:
        rest = ops[k:]
        wrong = [op for op in rest if not isinstance(op, OFFLOADABLE)]
        if wrong:
            raise ValueError(
                f"map: {type(wrong[0]).__name__} follows {plan.name} on the device, where it "
                "cannot run; after a device decode only RandomHorizontalFlip/RandomVerticalFlip/"
                "HorizontalFlip/VerticalFlip and then Rescale/Normalize/HWC2CHW/TypeCast can"
            )
        return [*host, plan], [plan, *rest]
    k = len(ops)
    while k > 0 and isinstance(ops[k - 1], OFFLOADABLE):
        k -= 1
    return ops[:k], ops[k:]
