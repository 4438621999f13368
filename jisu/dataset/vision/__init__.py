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
    RandomColor,
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
from .mixing import CutMixBatch, CutOut, ImageBatchFormat, MixUp, MixUpBatch, RandomErasing
from .perspective import Perspective, RandomPerspective
from .pil import ToPIL, ToTensor, ToType
from .pixel import HWC2CHW, Normalize, Rescale
from .policies import (
    AutoAugment,
    AutoAugmentPolicy,
    RandAugment,
    RandomSelectSubpolicy,
    TrivialAugmentWide,
    UniformAugment,
)
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
    "AutoAugment",
    "AutoAugmentPolicy",
    "AutoContrast",
    "Border",
    "CenterCrop",
    "ConvertColor",
    "ConvertMode",
    "Crop",
    "CutMixBatch",
    "CutOut",
    "Decode",
    "DecompressionBombError",
    "Equalize",
    "GaussianBlur",
    "Grayscale",
    "HorizontalFlip",
    "ImageBatchFormat",
    "Inter",
    "Invert",
    "MixUp",
    "MixUpBatch",
    "Normalize",
    "Pad",
    "PadToSize",
    "Perspective",
    "Posterize",
    "RandAugment",
    "RandomAffine",
    "RandomAutoContrast",
    "RandomColor",
    "RandomColorAdjust",
    "RandomCrop",
    "RandomCropDecodeResize",
    "RandomEqualize",
    "RandomErasing",
    "RandomGrayscale",
    "RandomHorizontalFlip",
    "RandomInvert",
    "RandomPerspective",
    "RandomPosterize",
    "RandomResize",
    "RandomResizedCrop",
    "RandomRotation",
    "RandomSelectSubpolicy",
    "RandomSharpness",
    "RandomSolarize",
    "RandomVerticalFlip",
    "Rescale",
    "Resize",
    "ResizedCrop",
    "Rotate",
    "Solarize",
    "ToPIL",
    "ToTensor",
    "ToType",
    "TrivialAugmentWide",
    "UniformAugment",
    "VerticalFlip",
]
