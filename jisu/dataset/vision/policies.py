"""Augmentation policies (``mindspore.dataset.vision``' names): AutoAugment, RandAugment,
TrivialAugmentWide, UniformAugment, RandomSelectSubpolicy.

The policies apply jisu's kernels (:mod:`.adjust`, :mod:`.enhance`, :mod:`.filters`,
:mod:`.affine`) with the magnitudes they draw. Every random policy has a ``draw(rng, ...)``
that returns the ops it chose, so ``apply`` is ``apply_augment`` of that draw.

Op list and magnitude tables: MindSpore's documented AutoAugment policies (the
``AutoAugmentPolicy`` docstring), and torchvision's augmentation spaces, which MindSpore's
RandAugment / TrivialAugmentWide / AutoAugment follow (magnitude bins ``linspace(0, max, bins)``;
signed ops get a random sign). A shear magnitude is the shear factor (turned into the angle
``degrees(atan(m))`` about the image centre), a translation is in pixels. MindSpore 2.10 shears
by ``tan(m)`` instead (torchvision's old bug), translates by ``m`` x the image size, and its
AutoAugment's Solarize leaves the pixel at the rounded-up threshold; every other output of its
policies is one of jisu's (``tests/dataset/vision/test_vision_parity.py``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.operation import TensorOperation, apply_op
from .adjust import autocontrast, check_number, check_uint8, equalize, posterize, solarize
from .affine import WARP_INTERS, affine_matrix, rotation_matrix, warp
from .enhance import adjust_brightness, adjust_contrast, adjust_saturation
from .filters import adjust_sharpness
from .transform_geometry import check_fill, check_inter
from .utils import AutoAugmentPolicy, Inter

#: ops whose magnitude gets a random sign
SIGNED = frozenset(
    ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color", "Contrast",
     "Sharpness")
)  # fmt: skip


def apply_augment(
    image: np.ndarray, name: str, magnitude: float, interpolation: Inter, fill: Any
) -> np.ndarray:
    """One augmentation op ``name`` with ``magnitude`` on a uint8 RGB HWC image."""
    h, w = image.shape[:2]
    if name in ("ShearX", "ShearY", "TranslateX", "TranslateY"):
        shear = math.degrees(math.atan(magnitude)) if name.startswith("Shear") else 0.0
        shift = magnitude if name.startswith("Translate") else 0.0
        matrix = affine_matrix(
            h, w, 0.0,
            (shift, 0.0) if name == "TranslateX" else (0.0, shift),
            1.0,
            (shear, 0.0) if name == "ShearX" else (0.0, shear),
        )  # fmt: skip
        return warp(image, matrix, (h, w), interpolation, fill)
    if name == "Rotate":
        matrix, size = rotation_matrix(h, w, magnitude, None, False)
        return warp(image, matrix, size, interpolation, fill)
    if name == "Brightness":
        return adjust_brightness(image, 1.0 + magnitude)
    if name == "Color":
        return adjust_saturation(image, 1.0 + magnitude)
    if name == "Contrast":
        return adjust_contrast(image, 1.0 + magnitude)
    if name == "Sharpness":
        return adjust_sharpness(image, 1.0 + magnitude)
    if name == "Posterize":
        return posterize(image, int(magnitude))
    if name == "Solarize":
        return solarize(image, float(magnitude), 255.0)
    if name == "AutoContrast":
        return autocontrast(image, 0.0, ())
    if name == "Equalize":
        return equalize(image)
    if name == "Invert":
        return 255 - image
    if name == "Identity":
        return image
    raise ValueError(f"unknown augmentation op {name!r}")


def augmentation_space(num_bins: int, height: int, width: int, wide: bool = False) -> dict:
    """name -> (magnitudes of the bins, signed): RandAugment's space, or TrivialAugmentWide's
    with ``wide`` (torchvision's tables)."""
    lin = np.linspace
    bins = np.arange(num_bins)
    if wide:
        shear, tx, ty, rot, enh = lin(0, 0.99, num_bins), lin(0, 32.0, num_bins), None, 135.0, 0.99
        ty = tx
        rot = lin(0, rot, num_bins)
        post = 8 - np.round(bins / ((num_bins - 1) / 6)).astype(int)
    else:
        shear = lin(0, 0.3, num_bins)
        tx = lin(0, 150.0 / 331.0 * width, num_bins)
        ty = lin(0, 150.0 / 331.0 * height, num_bins)
        rot, enh = lin(0, 30.0, num_bins), 0.9
        post = 8 - np.round(bins / ((num_bins - 1) / 4)).astype(int)
    enhance = lin(0, enh, num_bins)
    return {
        "Identity": None,
        "ShearX": shear,
        "ShearY": shear,
        "TranslateX": tx,
        "TranslateY": ty,
        "Rotate": rot,
        "Brightness": enhance,
        "Color": enhance,
        "Contrast": enhance,
        "Sharpness": enhance,
        "Posterize": post,
        "Solarize": lin(255.0, 0.0, num_bins),
        "AutoContrast": None,
        "Equalize": None,
    }


def _check_int(op: str, name: str, value: Any, low: int) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be an int. Received: {name}={value!r}")
    if value < low:
        raise ValueError(f"{op}: {name} must be >= {low}. Received: {name}={value!r}")
    return int(value)


class _Policy(TensorOperation):
    randomized = True

    def _init_warp(self, interpolation: Inter, fill_value: Any) -> None:
        op = type(self).__name__
        self.interpolation = check_inter(op, "interpolation", interpolation, WARP_INTERS)
        self.fill_value = check_fill(op, fill_value)

    def apply(self, image: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        op = type(self).__name__
        check_uint8(op, image)
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"{op}: expected an RGB HWC image. Received shape {image.shape}")
        for name, magnitude in self.draw(rng, image.shape[0], image.shape[1]):
            image = apply_augment(image, name, magnitude, self.interpolation, self.fill_value)
        return image

    def _signed(self, rng: np.random.Generator, name: str, magnitude: float) -> float:
        if name in SIGNED and rng.random() < 0.5:
            return -magnitude
        return magnitude


class RandAugment(_Policy):
    """Apply ``num_ops`` ops drawn uniformly (with replacement) from RandAugment's 14, all at
    magnitude bin ``magnitude`` of ``num_magnitude_bins``; signed ops take a random sign.
    uint8 RGB HWC images; warps use ``interpolation`` and ``fill_value``."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(
        self,
        num_ops: int = 2,
        magnitude: int = 9,
        num_magnitude_bins: int = 31,
        interpolation: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        self.num_ops = _check_int("RandAugment", "num_ops", num_ops, 0)
        self.num_magnitude_bins = _check_int(
            "RandAugment", "num_magnitude_bins", num_magnitude_bins, 2
        )
        self.magnitude = _check_int("RandAugment", "magnitude", magnitude, 0)
        if self.magnitude >= self.num_magnitude_bins:
            raise ValueError(
                f"RandAugment: magnitude must be < num_magnitude_bins ({num_magnitude_bins}). "
                f"Received: magnitude={magnitude!r}"
            )
        self._init_warp(interpolation, fill_value)

    def draw(self, rng: np.random.Generator, height: int, width: int) -> list[tuple[str, float]]:
        """The (op name, signed magnitude) pairs of one application, in order."""
        space = augmentation_space(self.num_magnitude_bins, height, width)
        names = list(space)
        ops = []
        for _ in range(self.num_ops):
            name = names[int(rng.integers(len(names)))]
            table = space[name]
            magnitude = 0.0 if table is None else float(table[self.magnitude])
            ops.append((name, self._signed(rng, name, magnitude)))
        return ops


class TrivialAugmentWide(_Policy):
    """Apply one op drawn uniformly from TrivialAugmentWide's 14 at a magnitude bin drawn
    uniformly from ``num_magnitude_bins``; signed ops take a random sign. uint8 RGB HWC."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(
        self, num_magnitude_bins: int = 31, interpolation: Inter = Inter.NEAREST, fill_value=0
    ) -> None:
        self.num_magnitude_bins = _check_int(
            "TrivialAugmentWide", "num_magnitude_bins", num_magnitude_bins, 2
        )
        self._init_warp(interpolation, fill_value)

    def draw(self, rng: np.random.Generator, height: int, width: int) -> list[tuple[str, float]]:
        space = augmentation_space(self.num_magnitude_bins, height, width, wide=True)
        names = list(space)
        name = names[int(rng.integers(len(names)))]
        table = space[name]
        magnitude = 0.0 if table is None else float(table[int(rng.integers(len(table)))])
        return [(name, self._signed(rng, name, magnitude))]


# (op, probability, magnitude bin of 10) pairs: MindSpore's documented tables
_N = None
POLICIES: dict[AutoAugmentPolicy, list] = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, _N)),
        (("Equalize", 0.8, _N), ("Equalize", 0.6, _N)),
        (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, _N), ("Solarize", 0.2, 4)),
        (("Equalize", 0.4, _N), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, _N)),
        (("Posterize", 0.8, 5), ("Equalize", 1.0, _N)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
        (("Equalize", 0.6, _N), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
        (("Rotate", 0.4, 9), ("Equalize", 0.6, _N)),
        (("Equalize", 0.0, _N), ("Equalize", 0.8, _N)),
        (("Invert", 0.6, _N), ("Equalize", 1.0, _N)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
        (("Sharpness", 0.4, 7), ("Invert", 0.6, _N)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, _N)),
        (("Color", 0.4, 0), ("Equalize", 0.6, _N)),
        (("Equalize", 0.4, _N), ("Solarize", 0.2, 4)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, _N)),
        (("Invert", 0.6, _N), ("Equalize", 1.0, _N)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, _N), ("Equalize", 0.6, _N)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, _N), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, _N), ("Equalize", 0.9, _N)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, _N), ("Equalize", 0.5, _N)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.8, _N), ("Invert", 0.1, _N)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, _N)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("Equalize", 0.2, _N), ("Equalize", 0.6, _N)),
        (("Color", 0.9, 9), ("Equalize", 0.6, _N)),
        (("AutoContrast", 0.8, _N), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, _N)),
        (("AutoContrast", 0.9, _N), ("Solarize", 0.8, 3)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, _N)),
        (("Equalize", 0.3, _N), ("AutoContrast", 0.4, _N)),
        (("Equalize", 0.2, _N), ("AutoContrast", 0.6, _N)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, _N)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, _N)),
        (("Equalize", 0.6, _N), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, _N), ("Equalize", 0.6, _N)),
        (("Equalize", 0.6, _N), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, _N)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, _N)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, _N), ("AutoContrast", 0.8, _N)),
        (("Equalize", 0.6, _N), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, _N)),
        (("Equalize", 0.9, _N), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, _N), ("Equalize", 0.6, _N)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, _N), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, _N), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, _N)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, _N)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, _N)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, _N)),
    ],
}


def auto_augment_space(height: int, width: int) -> dict:
    """AutoAugment's magnitude bins (10 of them; torchvision's table)."""
    space = augmentation_space(10, height, width)
    space["Invert"] = None
    return space


class AutoAugment(_Policy):
    """Apply one of the 25 sub-policies of ``policy`` (drawn uniformly): each of its two ops
    runs with its probability at its magnitude bin; signed ops take a random sign.
    uint8 RGB HWC images; warps use ``interpolation`` and ``fill_value``."""

    pil_out = False  # MindSpore's returns an array for a PIL image

    def __init__(
        self,
        policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
        interpolation: Inter = Inter.NEAREST,
        fill_value: Any = 0,
    ) -> None:
        if not isinstance(policy, AutoAugmentPolicy):
            raise TypeError(
                f"AutoAugment: policy must be an AutoAugmentPolicy. Received: {policy!r}"
            )
        self.policy = policy
        self._init_warp(interpolation, fill_value)

    def draw(self, rng: np.random.Generator, height: int, width: int) -> list[tuple[str, float]]:
        subs = POLICIES[self.policy]
        sub = subs[int(rng.integers(len(subs)))]
        space = auto_augment_space(height, width)
        ops = []
        for name, prob, bin_ in sub:
            if rng.random() < prob:
                magnitude = 0.0 if bin_ is None else float(space[name][bin_])
                ops.append((name, self._signed(rng, name, magnitude)))
        return ops


def _check_op(op: str, name: str, value: Any) -> None:
    if not (isinstance(value, TensorOperation) or callable(value)):
        raise TypeError(f"{op}: {name} must be an op or a callable. Received: {value!r}")


class UniformAugment(TensorOperation):
    """Pick ``num_ops`` of ``transforms`` uniformly without replacement and apply each (in
    list order) with probability 1/2 (``mindspore.dataset.vision.UniformAugment``)."""

    randomized = True

    def __init__(self, transforms: list, num_ops: int = 2) -> None:
        if not isinstance(transforms, (list, tuple)) or not transforms:
            raise TypeError(
                f"UniformAugment: transforms must be a non-empty list. Received: {transforms!r}"
            )
        for i, t in enumerate(transforms):
            _check_op("UniformAugment", f"transforms[{i}]", t)
        self.transforms = list(transforms)
        self.num_ops = _check_int("UniformAugment", "num_ops", num_ops, 1)
        if self.num_ops > len(self.transforms):
            raise ValueError(
                f"UniformAugment: num_ops must be <= len(transforms) ({len(transforms)}). "
                f"Received: num_ops={num_ops!r}"
            )

    def draw(self, rng: np.random.Generator) -> list[int]:
        """Indices of the transforms applied, in order."""
        chosen = np.sort(rng.choice(len(self.transforms), self.num_ops, replace=False))
        return [int(i) for i in chosen if rng.random() < 0.5]

    def apply(self, *arrays: np.ndarray, rng: np.random.Generator | None = None) -> Any:
        return _run([self.transforms[i] for i in self.draw(rng)], arrays, rng)


def _run(ops: list, arrays: tuple, rng: np.random.Generator) -> Any:
    for op in ops:
        result = apply_op(op, arrays, lambda: rng)
        arrays = result if isinstance(result, tuple) else (result,)
    return arrays[0] if len(arrays) == 1 else arrays


class RandomSelectSubpolicy(TensorOperation):
    """Pick one sub-policy of ``policy`` uniformly and apply its ``(op, prob)`` pairs in order,
    each with its probability (``mindspore.dataset.vision.RandomSelectSubpolicy``)."""

    randomized = True

    def __init__(self, policy: list) -> None:
        op = "RandomSelectSubpolicy"
        if not isinstance(policy, list) or not policy:
            raise TypeError(f"{op}: policy must be a non-empty list. Received: {policy!r}")
        for i, sub in enumerate(policy):
            if not isinstance(sub, list) or not sub:
                raise TypeError(f"{op}: policy[{i}] must be a non-empty list. Received: {sub!r}")
            for j, pair in enumerate(sub):
                if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                    raise TypeError(
                        f"{op}: policy[{i}][{j}] must be (op, prob). Received: {pair!r}"
                    )
                _check_op(op, f"policy[{i}][{j}]", pair[0])
                check_number(op, f"prob of policy[{i}][{j}]", pair[1], 0.0, 1.0)
        self.policy = [[(t, float(p)) for t, p in sub] for sub in policy]

    def draw(self, rng: np.random.Generator) -> tuple[int, list[int]]:
        """(sub-policy index, indices of its ops that run)."""
        k = int(rng.integers(len(self.policy)))
        return k, [j for j, (_, p) in enumerate(self.policy[k]) if rng.random() < p]

    def apply(self, *arrays: np.ndarray, rng: np.random.Generator | None = None) -> Any:
        k, run = self.draw(rng)
        return _run([self.policy[k][j][0] for j in run], arrays, rng)
