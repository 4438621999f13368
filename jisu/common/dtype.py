"""MindSpore's data type names (``from mindspore import dtype as mstype``) as torch dtypes.

``mstype.float32`` is ``torch.float32``, so ``TypeCast(mstype.int32)``, ``Tensor(x,
mstype.float16)`` and ``ops.Cast()(x, mstype.float32)`` take them as they are. ``mstype.string``
(torch has no text tensors) stands for NumPy's ``str`` dtype in the data pipeline.
"""

import enum

import numpy as np
import torch

bool_ = torch.bool
int8 = torch.int8
int16 = torch.int16
int32 = torch.int32
int64 = torch.int64
uint8 = torch.uint8
uint16 = torch.uint16
uint32 = torch.uint32
uint64 = torch.uint64
float16 = torch.float16
bfloat16 = torch.bfloat16
float32 = torch.float32
float64 = torch.float64
complex64 = torch.complex64
complex128 = torch.complex128
# MindSpore's short names
int_ = torch.int64
float_ = torch.float32
half = torch.float16
single = torch.float32
double = torch.float64


class String:
    """MindSpore's text type, ``mstype.string`` (its only instance): torch has no string
    tensors, so it stands for NumPy's ``str`` dtype wherever the data pipeline takes a dtype
    (``TypeCast(mstype.string)``, ``Schema.add_column(..., de_type=mstype.string)``);
    ``np.dtype(mstype.string)`` is ``np.dtype(str)``. Text columns come out as NumPy arrays."""

    dtype = np.dtype(np.str_)  # read by np.dtype(): how NumPy sees this type

    def __repr__(self) -> str:
        return "String"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, String)

    def __hash__(self) -> int:
        return hash(String)


string = String()

#: MindSpore's groupings, as tuples of dtypes
int_type = (int8, int16, int32, int64)
uint_type = (uint8, uint16, uint32, uint64)
float_type = (float16, float32, float64, bfloat16)
number_type = (*int_type, *uint_type, *float_type)


def dtype_to_nptype(dtype: torch.dtype):
    """The NumPy type of a dtype (MindSpore's ``mstype.dtype_to_nptype``)."""
    if dtype is torch.bfloat16:
        raise TypeError("dtype_to_nptype: NumPy has no bfloat16")
    return np.dtype(torch.empty((), dtype=dtype).numpy().dtype).type


def pytype_to_dtype(obj: type) -> torch.dtype:
    """The dtype of a Python type (``int`` -> int64, ``float`` -> float32, ``bool``)."""
    table = {bool: torch.bool, int: torch.int64, float: torch.float32}
    if obj not in table:
        raise TypeError(f"pytype_to_dtype: no dtype for {obj!r}")
    return table[obj]


class QuantDtype(enum.Enum):
    """MindSpore's quantisation bit widths (``QuantDtype.INT8`` ...), with MindSpore's values
    (signed ``INT1``-``INT16`` are 0-15, unsigned ``UINT1``-``UINT16`` are 100-115), read with
    ``.value()`` as in MindSpore. jisu has no quantisation-aware training; the names are for
    scripts that pass them around."""

    INT1, INT2, INT3, INT4, INT5, INT6, INT7, INT8 = range(8)
    INT9, INT10, INT11, INT12, INT13, INT14, INT15, INT16 = range(8, 16)
    UINT1, UINT2, UINT3, UINT4, UINT5, UINT6, UINT7, UINT8 = range(100, 108)
    UINT9, UINT10, UINT11, UINT12, UINT13, UINT14, UINT15, UINT16 = range(108, 116)

    def __str__(self) -> str:
        return self.name

    def value(self) -> int:  # type: ignore[override]  (a method in MindSpore)
        """The member's int value."""
        return self._value_


class _FloatMeta(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.dtype) and obj.is_floating_point


class Float(metaclass=_FloatMeta):
    """MindSpore's float type family: ``Float(32)`` is ``float32``, and
    ``isinstance(mstype.float16, mstype.Float)`` is True for every floating dtype."""

    def __new__(cls, bits: int = 32) -> torch.dtype:  # type: ignore[misc]
        table = {16: torch.float16, 32: torch.float32, 64: torch.float64}
        if bits not in table:
            raise ValueError(f"Float: bits must be 16, 32 or 64. Received: bits={bits!r}")
        return table[bits]
