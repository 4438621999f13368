"""Mixed-precision levels O0-O3 (MindSpore's semantics) for PyTorch modules.

| level | low precision (fp16/bf16)                                  | weights                 |
|-------|------------------------------------------------------------|-------------------------|
| O0    | nothing                                                    | fp32                    |
| O1    | matmul/conv/linear (autocast); softmax, norms, reductions, | fp32                    |
|       | losses forced to fp32 on every device                      |                         |
| O2    | everything except the black list (norms), which computes   | fp32 masters, cast to   |
|       | in fp32 and hands low-precision outputs on                 | low precision per step  |
| O3    | everything (norms too unless keep_batchnorm_fp32)          | low precision (pure)    |

Weights stay fp32 at O1/O2: the forward uses low-precision copies made on the fly (a cast is
differentiable), so gradients and optimizer updates are fp32 and updates smaller than the
low-precision epsilon are not lost. The converted network's floating outputs are fp32.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map

LEVELS = ("O0", "O1", "O2", "O3", "auto")
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


def _check_dtype(op: str, network: nn.Module, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is None:
        return default_low_dtype(network)
    if dtype not in LOW_DTYPES:
        raise ValueError(f"{op}: dtype must be torch.float16 or torch.bfloat16. Received {dtype}")
    on_cpu = all(p.device.type == "cpu" for p in network.parameters())
    if dtype == torch.float16 and on_cpu:
        warnings.warn(
            f"{op}: float16 on CPU is very slow (100-200x slower than float32 measured); "
            "use torch.bfloat16 (the CPU default) unless you need float16 numerics",
            stacklevel=3,
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


class _Switch:
    """Hooks act only while the converted network runs, so the original stays usable."""

    def __init__(self) -> None:
        self.depth = 0


class MixedPrecisionNetwork(nn.Module):
    """A network running at a mixed-precision level; made by :func:`auto_mixed_precision`
    or :func:`custom_mixed_precision`. ``state_dict``/``load_state_dict`` are the wrapped
    network's own (same keys), so checkpoints load into the plain network too."""

    def __init__(
        self,
        network: nn.Module,
        level: str,
        dtype: torch.dtype,
        fp32_modules: Iterable[nn.Module] = (),
        white_modules: Iterable[nn.Module] = (),
    ) -> None:
        super().__init__()
        self.network, self.level, self.dtype = network, level, dtype
        self.fp32_modules = list(fp32_modules)  # compute in fp32, hand low precision on
        self.white_modules = list(white_modules)  # compute in low precision, hand fp32 on
        self._switch = _Switch()
        self._hooks = []
        for module in self.fp32_modules:
            if not _computes_fp32_on_low_input(module, dtype):
                self._hook(module, torch.float32, dtype)
        for module in self.white_modules:
            self._hook(module, dtype, torch.float32)
        # Weights never cast: those of fp32 layers, and those of normalization layers even
        # when they run in low precision (their running statistics stay fp32 and PyTorch's
        # norms take a low-precision input with fp32 weights and statistics).
        norms = _modules_of(network, _BLACK_LIST)
        self._kept = {id(p) for m in [*self.fp32_modules, *norms] for p in m.parameters()}
        if level == "O2" or level == "black_list":
            fp32_ids = {id(p) for m in self.fp32_modules for p in m.parameters()}
            for module in network.modules():  # layers fed fp32 (e.g. by a buffer) recast
                own = list(module.parameters(recurse=False))
                if own and not any(id(p) in fp32_ids for p in own):
                    self._hook(module, dtype, None)
        network._jisu_amp = level

    def _hook(self, module: nn.Module, compute: torch.dtype, out: torch.dtype | None) -> None:
        switch = self._switch

        def before(_module, args, kwargs):
            if switch.depth:
                return _cast(args, compute), _cast(kwargs, compute)
            return None

        def after(_module, _args, output):
            if switch.depth and out is not None:
                return _cast(output, out)
            return None

        self._hooks.append(module.register_forward_pre_hook(before, with_kwargs=True))
        self._hooks.append(module.register_forward_hook(after))

    def _low_parameters(self) -> dict[str, torch.Tensor]:
        """The parameters the forward sees in low precision (fp32 masters cast, O2/custom)."""
        if self.level == "O2" or self.level == "black_list":
            named = self.network.named_parameters()
            chosen = ((n, p) for n, p in named if id(p) not in self._kept)
        elif self.level == "white_list":
            low = {id(p) for m in self.white_modules for p in m.parameters()}
            chosen = ((n, p) for n, p in self.network.named_parameters() if id(p) in low)
        else:
            return {}
        return {n: p.to(self.dtype) for n, p in chosen if p.is_floating_point()}

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        self._switch.depth += 1
        try:
            if self.level in ("O1", "auto"):
                device = next((p.device.type for p in self.network.parameters()), "cpu")
                with torch.autocast(device, dtype=self.dtype), _Fp32Functions():
                    output = self.network(*args, **kwargs)
            else:
                if self.level != "white_list":
                    args, kwargs = _cast(args, self.dtype), _cast(kwargs, self.dtype)
                low = self._low_parameters()
                if low:
                    output = torch.func.functional_call(
                        self.network, low, args, kwargs, strict=False
                    )
                else:
                    output = self.network(*args, **kwargs)
        finally:
            self._switch.depth -= 1
        return _cast(output, torch.float32)

    def state_dict(self, *args: Any, **kwargs: Any) -> dict:
        return self.network.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return self.network.load_state_dict(state_dict, strict=strict, assign=assign)

    def cast_plan(self) -> list[tuple[str, str, str, str]]:
        """(module name, type, compute dtype, weight dtype) per leaf module."""
        low = _short(self.dtype)
        fp32_ids = {id(m) for root in self.fp32_modules for m in root.modules()}
        white_ids = {id(m) for root in self.white_modules for m in root.modules()}
        rows = []
        for name, module in self.network.named_modules():
            if any(True for _ in module.children()):
                continue
            weights = {_short(p.dtype) for p in module.parameters(recurse=False)}
            if self.level in ("O2", "black_list"):
                compute = "fp32" if id(module) in fp32_ids else low
                weights = {
                    "fp32 (masters)" if w == "fp32" and compute != "fp32" else w for w in weights
                }
            elif self.level == "O3":
                compute = "fp32" if id(module) in fp32_ids else low
            elif self.level == "white_list":
                compute = low if id(module) in white_ids else "fp32"
            else:  # O1: per op
                if isinstance(module, _WHITE_LIST):
                    compute = f"{low} (autocast)"
                elif (
                    isinstance(module, (*_BLACK_LIST, nn.Softmax, nn.LogSoftmax))
                    or "Loss" in type(module).__name__
                ):
                    compute = "fp32"
                else:
                    compute = "as its input"
            rows.append(
                (
                    name or "(network)",
                    type(module).__name__,
                    compute,
                    ", ".join(sorted(weights)) or "-",
                )
            )
        return rows


def _short(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}.get(
        dtype, str(dtype).replace("torch.", "")
    )


def describe(network: nn.Module) -> str:
    """A table of which module runs in which dtype (for a network converted by jisu.amp)."""
    if not isinstance(network, MixedPrecisionNetwork):
        return f"{type(network).__name__}: not converted (O0): everything runs as its input (fp32)"
    name, low = type(network.network).__name__, _short(network.dtype)
    header = f"{name} at {network.level}, low precision {low}"
    rows = [("module", "type", "computes in", "weights"), *network.cast_plan()]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [header] + ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    if network.level in ("O1", "auto"):
        lines.append(
            "O1: matmul/conv/linear ops in low precision, softmax/norms/reductions/losses in fp32"
        )
    lines.append("network output: fp32")
    return "\n".join(lines)


def print_cast_plan(network: nn.Module) -> None:
    """Print :func:`describe`."""
    print(describe(network))


def _refuse_converted(op: str, network: nn.Module) -> None:
    if not isinstance(network, nn.Module):
        raise TypeError(
            f"{op}: network must be a torch.nn.Module. Received {type(network).__name__}"
        )
    level = getattr(network, "_jisu_amp", None) or (
        network.level if isinstance(network, MixedPrecisionNetwork) else None
    )
    if level is not None:
        raise ValueError(
            f"{op}: this network was already converted (level {level}); convert the original "
            "network once (converting twice would cast twice and hide which level runs)"
        )


def _modules_of(network: nn.Module, types: Iterable[type]) -> list[nn.Module]:
    types = tuple(types)
    return [m for m in network.modules() if types and isinstance(m, types)]


def auto_mixed_precision(
    network: nn.Module,
    amp_level: str = "O0",
    dtype: torch.dtype | None = None,
    keep_batchnorm_fp32: bool | None = None,
) -> nn.Module:
    """Return ``network`` running at ``amp_level`` (see the module docstring for the levels).

    Args:
        network: a torch module (its parameters on the device it will run on).
        amp_level: "O0", "O1" (or "auto"), "O2", "O3".
        dtype: torch.float16 or torch.bfloat16; None: fp16 on CUDA/NPU, bf16 on CPU.
        keep_batchnorm_fp32: run the black-list (normalization) layers in fp32; default True
            at O2, False at O3 (MindSpore's defaults).

    O0 returns ``network`` itself. O3 converts the network's weights in place (pure low
    precision, no fp32 masters); O1/O2 leave them fp32.
    """
    _refuse_converted("auto_mixed_precision", network)
    if amp_level not in LEVELS:
        raise ValueError(
            f"auto_mixed_precision: amp_level must be one of {LEVELS}. Received {amp_level!r}"
        )
    if amp_level == "O0":
        return network
    dtype = _check_dtype("auto_mixed_precision", network, dtype)
    if amp_level in ("O1", "auto"):
        return MixedPrecisionNetwork(network, amp_level, dtype)
    keep = (amp_level == "O2") if keep_batchnorm_fp32 is None else bool(keep_batchnorm_fp32)
    fp32_modules = _modules_of(network, _BLACK_LIST) if keep else []
    if amp_level == "O3":
        network.to(dtype)
        for module in fp32_modules:
            module.float()
    return MixedPrecisionNetwork(network, amp_level, dtype, fp32_modules=fp32_modules)


def custom_mixed_precision(
    network: nn.Module,
    *,
    white_list: Iterable[type[nn.Module]] | None = None,
    black_list: Iterable[type[nn.Module]] | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """Low precision by module type: only the ``white_list`` types (their inputs and weights
    cast, their outputs cast back to fp32), or everything but the ``black_list`` types (which
    compute in fp32). Exactly one list must be given. Weights stay fp32 masters."""
    _refuse_converted("custom_mixed_precision", network)
    if (white_list is None) == (black_list is None):
        raise ValueError("custom_mixed_precision: give exactly one of white_list and black_list")
    dtype = _check_dtype("custom_mixed_precision", network, dtype)
    if white_list is not None:
        return MixedPrecisionNetwork(
            network, "white_list", dtype, white_modules=_modules_of(network, white_list)
        )
    return MixedPrecisionNetwork(
        network, "black_list", dtype, fp32_modules=_modules_of(network, black_list)
    )
