"""MindSpore's ``mindspore.ops.op_info_register``: the registration of custom kernels (Ascend
TBE, AKG, AICPU, ``ops.Custom``'s ``CustomRegOp``) as chainable records.

A model-zoo module registers its kernels when it is imported (``TBERegOp("X").input(...)
.dtype_format(DataType.F32_None, ...).get_op_info()`` under ``@op_info_register(...)``), so
the builders here record what they are told and the decorators hand back the function as it
is: the module imports, and the registration has no effect, since jisu runs no TBE/AKG/AICPU
kernels. What would run such a kernel, ``ops.Custom``, is refused by name when it is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "AiCPURegOp",
    "AkgAscendRegOp",
    "AkgCpuRegOp",
    "AkgGpuRegOp",
    "CpuRegOp",
    "CustomRegOp",
    "DataType",
    "RegOp",
    "TBERegOp",
    "custom_info_register",
    "op_info_register",
]

_DTYPES = {
    "None": "", "BOOL": "bool", "I8": "int8", "U8": "uint8", "I16": "int16", "U16": "uint16",
    "I32": "int32", "U32": "uint32", "I64": "int64", "U64": "uint64", "F16": "float16",
    "F32": "float32", "F64": "float64", "BF16": "bfloat16", "C64": "complex64",
    "C128": "complex128",
}  # fmt: skip
_FORMATS = {
    "None": "", "Default": "DefaultFormat", "5HD": "NC1HWC0", "FracZ": "FRACTAL_Z",
    "FracNZ": "FRACTAL_NZ", "C1HWNCoC0": "C1HWNCoC0", "NCHW": "NCHW", "NHWC": "NHWC",
    "HWCN": "HWCN", "NDHWC": "NDHWC", "ChannelLast": "ChannelLast", "NCDHW": "NCDHW",
    "NDC1HWC0": "NDC1HWC0", "NC1HWC0": "NC1HWC0", "DHWCN": "DHWCN",
    "FRACTAL_Z_3D": "FRACTAL_Z_3D", "FracZNLSTM": "FRACTAL_ZN_LSTM",
    "FracZNRNN": "FRACTAL_ZN_RNN", "ND_RNNBIAS": "ND_RNN_BIAS",
}  # fmt: skip


class _DataTypeMeta(type):
    def __getattr__(cls, name: str) -> tuple[str, ...]:
        dtype, _, layout = name.partition("_")
        for suffix in ("_Tuple", "_List"):
            if layout.endswith(suffix) and layout[: -len(suffix)] in _FORMATS:
                return (_DTYPES[dtype], _FORMATS[layout[: -len(suffix)]], suffix[1:].lower())
        if dtype in _DTYPES and layout in _FORMATS:
            return (_DTYPES[dtype], _FORMATS[layout])
        raise AttributeError(f"type object 'DataType' has no attribute {name!r}")


class DataType(metaclass=_DataTypeMeta):
    """MindSpore's ``(dtype, format)`` pairs by name: ``DataType.F32_None`` is
    ``("float32", "")``, ``DataType.F16_5HD`` is ``("float16", "NC1HWC0")``."""


class RegOp:
    """A kernel registration being built: every builder method (``input``, ``output``,
    ``attr``, ``dtype_format``, ``fusion_type``, ``kernel_name`` ...) records its arguments
    and returns the builder; ``get_op_info()`` returns the record."""

    def __init__(self, op_name: str = "") -> None:
        self.op_name = op_name
        self.calls: list[tuple[str, tuple, dict]] = []

    def __getattr__(self, name: str) -> Callable[..., RegOp]:
        if name.startswith("_"):
            raise AttributeError(name)

        def record(*args: Any, **kwargs: Any) -> RegOp:
            self.calls.append((name, args, kwargs))
            return self

        return record

    def get_op_info(self) -> dict[str, Any]:
        """The registration as a dict: ``op_name``, ``imply_type`` and the recorded calls."""
        return {"op_name": self.op_name, "imply_type": type(self).__name__, "calls": self.calls}


class CpuRegOp(RegOp):
    """A CPU kernel registration (recorded, no effect)."""


class AiCPURegOp(CpuRegOp):
    """An AICPU kernel registration (recorded, no effect)."""


class AkgGpuRegOp(RegOp):
    """An AKG GPU kernel registration (recorded, no effect)."""


class AkgAscendRegOp(RegOp):
    """An AKG Ascend kernel registration (recorded, no effect)."""


class AkgCpuRegOp(RegOp):
    """An AKG CPU kernel registration (recorded, no effect)."""


class TBERegOp(RegOp):
    """An Ascend TBE kernel registration (recorded, no effect)."""


class CustomRegOp(RegOp):
    """``ops.Custom``'s kernel registration (recorded, no effect: ``ops.Custom`` is refused)."""

    def __init__(self, op_name: str = "Custom") -> None:
        super().__init__(op_name)


def op_info_register(op_info: Any) -> Callable[[Callable], Callable]:
    """A decorator that registers nothing and returns the function unchanged."""
    return lambda func: func


def custom_info_register(*reg_info: Any) -> Callable[[Callable], Callable]:
    """A decorator that registers nothing and returns the function unchanged."""
    return lambda func: func
