"""What the levels share: the op and module lists, the low-precision dtype rules, and the
casts (inputs, outputs, fp32-list functions, mixed-type norms) that the precision types of
:mod:`jisu.amp.levels` compose. Imports nothing else of jisu.amp.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map

LOW_DTYPES = (torch.float16, torch.bfloat16)

_WHITE_LIST: tuple[type[nn.Module], ...] = (
    nn.Conv1d,
    nn.Conv2d,
    nn.Conv3d,
    nn.ConvTranspose1d,
    nn.ConvTranspose2d,
    nn.ConvTranspose3d,
    nn.Linear,
    nn.Bilinear,
    nn.LSTMCell,
    nn.RNNCell,
    nn.GRUCell,
)
_BLACK_LIST: tuple[type[nn.Module], ...] = (
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.SyncBatchNorm,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.InstanceNorm1d,
    nn.InstanceNorm2d,
    nn.InstanceNorm3d,
)

F = nn.functional
#: run in fp32 at O1 on every device (CUDA autocast's fp32 list; CPU autocast keeps these in
#: the input's low precision, so jisu upcasts their inputs itself)
_FP32_FUNCTIONS = frozenset(
    {
        F.softmax, F.log_softmax, F.softmin, torch.softmax, torch.log_softmax,
        torch.Tensor.softmax, torch.Tensor.log_softmax,
        F.layer_norm, F.group_norm, F.batch_norm, F.instance_norm, F.normalize,
        F.cross_entropy, F.nll_loss, F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss,
        F.binary_cross_entropy, F.binary_cross_entropy_with_logits, F.kl_div,
        F.poisson_nll_loss, F.cosine_embedding_loss, F.margin_ranking_loss,
        F.soft_margin_loss, F.multilabel_soft_margin_loss, F.triplet_margin_loss, F.softplus,
        torch.exp, torch.log, torch.log2, torch.log10, torch.log1p, torch.expm1, torch.pow,
        torch.reciprocal, torch.rsqrt, torch.sum, torch.prod, torch.cumsum, torch.cumprod,
        torch.norm, torch.dist, torch.cdist, torch.erfinv, torch.acos, torch.asin,
        torch.cosh, torch.sinh, torch.tan,
        torch.Tensor.exp, torch.Tensor.log, torch.Tensor.log2, torch.Tensor.log10,
        torch.Tensor.log1p, torch.Tensor.expm1, torch.Tensor.pow, torch.Tensor.reciprocal,
        torch.Tensor.rsqrt, torch.Tensor.sum, torch.Tensor.prod, torch.Tensor.cumsum,
        torch.Tensor.cumprod, torch.Tensor.norm,
    }
)  # fmt: skip


def get_white_list() -> list[type[nn.Module]]:
    """Module types that run in low precision under ``custom_mixed_precision(white_list=...)``
    by default (MindSpore's list with PyTorch's names). A new list each call."""
    return list(_WHITE_LIST)


def get_black_list() -> list[type[nn.Module]]:
    """Module types kept in fp32 at O2 (normalization layers). A new list each call."""
    return list(_BLACK_LIST)


def default_low_dtype(network: nn.Module) -> torch.dtype:
    """fp16 on CUDA/NPU, bf16 on CPU (fp16 matmuls on CPUs are 100-200x slower than fp32)."""
    device = next((p.device for p in network.parameters()), torch.device("cpu"))
    return torch.bfloat16 if device.type == "cpu" else torch.float16


def _check_dtype(
    op: str, network: nn.Module, dtype: torch.dtype | None, stacklevel: int = 3
) -> torch.dtype:
    """``dtype`` checked, or the default low dtype for ``network``. ``stacklevel`` is
    ``warnings.warn``'s as seen from here (3: the caller of this function's caller)."""
    if dtype is None:
        return default_low_dtype(network)
    if dtype not in LOW_DTYPES:
        raise ValueError(f"{op}: dtype must be torch.float16 or torch.bfloat16. Received {dtype}")
    on_cpu = all(p.device.type == "cpu" for p in network.parameters())
    if dtype == torch.float16 and on_cpu:
        warnings.warn(
            f"{op}: float16 on CPU is very slow (100-200x slower than float32 measured); "
            "use torch.bfloat16 (the CPU default) unless you need float16 numerics",
            stacklevel=stacklevel,
        )
    return dtype


def _cast(value: Any, dtype: torch.dtype) -> Any:
    """Floating tensors in ``value`` (nested tuples/lists/dicts) cast to ``dtype``."""
    return tree_map(
        lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t,
        value,
    )


class _Fp32Functions(TorchFunctionMode):
    """Upcasts the floating inputs of the fp32-list functions (O1)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FP32_FUNCTIONS:
            args, kwargs = _cast(args, torch.float32), _cast(kwargs, torch.float32)
        return func(*args, **kwargs)


_MIXED_KERNELS: dict[tuple, bool] = {}


def _computes_fp32_on_low_input(module: nn.Module, dtype: torch.dtype) -> bool:
    """Whether ``module`` (a normalization layer with fp32 weights) can take a low-precision
    input directly. PyTorch's mixed-type norm kernels compute in fp32 (weights, statistics
    and arithmetic) and return the input's dtype: exactly "compute in fp32, hand low
    precision on", without two extra passes over the activations to cast them (measured
    ~12 % of an O2 ResNet step on CPU). Probed once per kind, device and dtype."""
    kinds = {
        nn.modules.batchnorm._BatchNorm: "batch_norm",
        nn.LayerNorm: "layer_norm",
        nn.GroupNorm: "group_norm",
    }
    kind = next((k for t, k in kinds.items() if isinstance(module, t)), None)
    params = list(module.parameters())
    if kind is None or any(p.dtype != torch.float32 for p in params):
        return False
    tensors = [*params, *module.buffers()]
    device = tensors[0].device if tensors else torch.device("cpu")
    key = (kind, device.type, dtype)
    if key not in _MIXED_KERNELS:
        x = torch.randn(2, 4, 3, device=device).to(dtype)
        w, b = torch.ones(4, device=device), torch.zeros(4, device=device)
        try:
            with torch.no_grad():
                if kind == "batch_norm":
                    out = F.batch_norm(
                        x, torch.zeros(4, device=device), torch.ones(4, device=device), w, b, True
                    )
                elif kind == "layer_norm":
                    out = F.layer_norm(x.transpose(1, 2), (4,), w, b)
                else:
                    out = F.group_norm(x, 2, w, b)
            _MIXED_KERNELS[key] = out.dtype == dtype
        except RuntimeError:  # this torch/device wants matching dtypes
            _MIXED_KERNELS[key] = False
    return _MIXED_KERNELS[key]


def _short(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}.get(
        dtype, str(dtype).replace("torch.", "")
    )


def _modules_of(network: nn.Module, types: Iterable[type]) -> list[nn.Module]:
    types = tuple(types)
    return [m for m in network.modules() if types and isinstance(m, types)]
