"""Image ops (``mindspore.dataset.vision``' names): kernels from OpenCV, libjpeg-turbo, NumPy."""

from .adjust import (
    AutoContrast,
    Equalize,
    Invert,
    Posterize,
    RandomAutoContrast,
    RandomEqualize,
    RandomInvert,
    RandomPosterize,
    RandomSolarize,
    Solarize,
)
from .affine import Affine, RandomAffine, RandomRotation, Rotate
from .color import RandomColorAdjust
from .decode import Decode, DecompressionBombError
from .enhance import (
    AdjustBrightness,
    AdjustContrast,
    AdjustGamma,
    AdjustHue,
    AdjustSaturation,
    ConvertColor,
    ConvertMode,
    Grayscale,
    RandomGrayscale,
)
from .filters import AdjustSharpness, GaussianBlur, RandomSharpness
from .geometry import (
    CenterCrop,
    Pad,
    RandomCrop,
    RandomHorizontalFlip,
    RandomVerticalFlip,
    Resize,
)
from .perspective import Perspective, RandomPerspective
from .pixel import HWC2CHW, Normalize, Rescale
from .random_crop_resize import RandomCropDecodeResize, RandomResizedCrop
from .transform_geometry import (
    Crop,
    HorizontalFlip,
    PadToSize,
    RandomResize,
    ResizedCrop,
    VerticalFlip,
)
from .utils import Border, Inter

__all__ = [
    "HWC2CHW",
    "AdjustBrightness",
    "AdjustContrast",
    "AdjustGamma",
    "AdjustHue",
    "AdjustSaturation",
    "AdjustSharpness",
    "Affine",
    "AutoContrast",
    "Border",
    "CenterCrop",
    "ConvertColor",
    "ConvertMode",
    "Crop",
    "Decode",
    "DecompressionBombError",
    "Equalize",
    "GaussianBlur",
    "Grayscale",
    "HorizontalFlip",
    "Inter",
    "Invert",
    "Normalize",
    "Pad",
    "PadToSize",
    "Perspective",
    "Posterize",
    "RandomAffine",
    "RandomAutoContrast",
    "RandomColorAdjust",
    "RandomCrop",
    "RandomCropDecodeResize",
    "RandomEqualize",
    "RandomGrayscale",
    "RandomHorizontalFlip",
    "RandomInvert",
    "RandomPerspective",
    "RandomPosterize",
    "RandomResize",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomSharpness",
    "RandomSolarize",
    "RandomVerticalFlip",
    "Rescale",
    "Resize",
    "ResizedCrop",
    "Rotate",
    "Solarize",
    "VerticalFlip",
]
