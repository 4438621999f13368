"""Primitives of ``mindspore.ops.operations`` that single model-zoo projects use: ``identity``,
``Mish``, ``Gelu`` (MindSpore's deprecated name of ``GeLU``), ``LRN``, ``LayerNorm``, ``PadV3``,
``TensorShape``, ``RmsNorm``, ``Dropout3D``, ``RandomCategorical``, ``Randperm`` and ``LSTM``
(MindSpore's flat-weight LSTM, on torch's); ``Custom``, ``Pull`` and ``Push`` are refused by name.
Each follows MindSpore 2.10's documented contract and recorded answers
(tests/fixtures/ms_gaps)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..._unprovided import refused_class
from ..primitive import Primitive
from ._nn_activation_ops import GeLU
from ._nn_rng import SeededStream, check_seed

__all__ = [
    "LRN",
    "Custom",
    "Dropout3D",
    "FusedCastAdamWeightDecay",
    "Gelu",
    "LayerNorm",
    "Mish",
    "PadV3",
    "Pull",
    "Push",
    "RandomCategorical",
    "Randperm",
    "RmsNorm",
    "TensorShape",
    "identity",
]


class identity(Primitive):
    """``x`` itself (MindSpore's deprecated ``P.identity``; ``nn.Identity`` is the cell)."""

    def __call__(self, x: Any) -> Any:
        return x


class Mish(Primitive):
    """``x * tanh(softplus(x))``."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(x)


class Gelu(GeLU):
    """MindSpore's deprecated name of :class:`GeLU` (the same tanh form)."""


class LRN(Primitive):
    """Local response normalisation across channels of an NCHW tensor:
    ``x / (bias + alpha * sum(x[c-r..c+r] ** 2)) ** beta`` with ``r = depth_radius`` (alpha
    multiplies the plain sum, as in MindSpore and TensorFlow; torch's divides it by the window
    size, so jisu passes ``alpha * (2r + 1)``)."""

    def __init__(self, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
                 beta: float = 0.5, norm_region: str = "ACROSS_CHANNELS") -> None:  # fmt: skip
        if isinstance(depth_radius, bool) or not isinstance(depth_radius, int):
            raise TypeError(f"LRN: depth_radius must be an int. Received: {depth_radius!r}")
        if depth_radius < 0:
            raise ValueError(f"LRN: depth_radius must be >= 0. Received: {depth_radius}")
        for name, value in (("bias", bias), ("alpha", alpha), ("beta", beta)):
            if isinstance(value, bool) or not isinstance(value, float):
                raise TypeError(f"LRN: {name} must be a float. Received: {name}={value!r}")
        if norm_region != "ACROSS_CHANNELS":
            raise ValueError(
                f"LRN: norm_region must be 'ACROSS_CHANNELS'. Received: norm_region={norm_region!r}"
            )
        self.depth_radius, self.bias, self.alpha, self.beta = depth_radius, bias, alpha, beta
        self.norm_region = norm_region

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"LRN: x must be 4-D (NCHW). Received: shape {tuple(x.shape)}")
        size = 2 * self.depth_radius + 1
        return F.local_response_norm(x, size, alpha=self.alpha * size, beta=self.beta, k=self.bias)


class LayerNorm(Primitive):
    """Normalises over the axes from ``begin_norm_axis`` on, scaled by ``gamma`` and shifted by
    ``beta`` (whose axes start at ``begin_params_axis``): ``LayerNorm(...)(x, gamma, beta)``
    returns ``(y, mean, variance)``, the last two of shape ``x.shape[:begin_norm_axis]``
    followed by ones (the variance without ``epsilon``, as MindSpore 2.0 and 2.10 return it)."""

    def __init__(self, begin_norm_axis: int = 1, begin_params_axis: int = 1,
                 epsilon: float = 1e-7) -> None:  # fmt: skip
        for name, value in (("begin_norm_axis", begin_norm_axis),
                            ("begin_params_axis", begin_params_axis)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"LayerNorm: {name} must be an int. Received: {name}={value!r}")
        self.begin_norm_axis, self.begin_params_axis = begin_norm_axis, begin_params_axis
        self.epsilon = float(epsilon)

    def __call__(self, x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> tuple:
        axis = self.begin_norm_axis % x.dim()
        dims = tuple(range(axis, x.dim()))
        mean = x.mean(dim=dims, keepdim=True)
        var = (x - mean).square().mean(dim=dims, keepdim=True)
        rstd = torch.rsqrt(var + self.epsilon)
        params_axis = self.begin_params_axis % x.dim()
        shape = (1,) * params_axis + tuple(x.shape[params_axis:])
        y = (x - mean) * rstd * gamma.reshape(shape) + beta.reshape(shape)
        return y, mean, var


class RmsNorm(Primitive):
    """``x / sqrt(mean(x ** 2) + epsilon) * gamma``, the mean over ``gamma``'s trailing axes;
    returns ``(y, rstd)``, ``rstd`` of ``x``'s shape with those axes reduced to 1."""

    def __init__(self, epsilon: float = 1e-6) -> None:
        if not 0 < float(epsilon) <= 1:
            raise ValueError(f"RmsNorm: epsilon must be in (0, 1]. Received: {epsilon!r}")
        self.epsilon = float(epsilon)

    def __call__(self, x: torch.Tensor, gamma: torch.Tensor) -> tuple:
        dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
        rstd = torch.rsqrt(x.float().square().mean(dim=dims, keepdim=True) + self.epsilon)
        return (x.float() * rstd).to(x.dtype) * gamma, rstd


class TensorShape(Primitive):
    """The shape of ``x`` as an int64 tensor."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tensor(tuple(x.shape), dtype=torch.int64)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "circular": "circular"}  # fmt: skip


class PadV3(Primitive):
    """Pads ``x`` by ``paddings`` (``[begin, end]`` pairs from the last axis backwards, as
    ``torch.nn.functional.pad``; with ``paddings_contiguous=False`` all begins come first):
    ``PadV3(mode)(x, paddings, constant_value=0)``; modes ``constant``, ``reflect``, ``edge``,
    ``circular``."""

    def __init__(self, mode: str = "constant", paddings_contiguous: bool = True) -> None:
        if mode not in _PAD_MODES:
            raise ValueError(f"PadV3: mode must be one of {list(_PAD_MODES)}. Received: {mode!r}")
        if not isinstance(paddings_contiguous, bool):
            raise TypeError(
                f"PadV3: paddings_contiguous must be a bool. Received: {paddings_contiguous!r}"
            )
        self.mode, self.paddings_contiguous = mode, paddings_contiguous

    def __call__(self, x: torch.Tensor, paddings: Any, constant_value: Any = None) -> torch.Tensor:
        pads = [int(p) for p in (paddings.tolist() if torch.is_tensor(paddings) else paddings)]
        if len(pads) % 2:
            raise ValueError(f"PadV3: paddings must have an even length. Received: {pads}")
        if not self.paddings_contiguous:
            half = len(pads) // 2
            pads = [p for pair in zip(pads[:half], pads[half:], strict=True) for p in pair]
        if self.mode == "constant":
            value = 0 if constant_value is None else constant_value
            value = value.item() if torch.is_tensor(value) else value  # host sync: a Python pad
            return F.pad(x, pads, mode="constant", value=value)
        return F.pad(x, pads, mode=_PAD_MODES[self.mode])


class Dropout3D(Primitive):
    """Zeroes whole channels of an NCDHW tensor with probability ``1 - keep_prob`` and scales
    the rest by ``1 / keep_prob``; returns ``(output, mask)``, the bool mask of ``x``'s shape."""

    def __init__(self, keep_prob: float = 0.5) -> None:
        if isinstance(keep_prob, bool) or not isinstance(keep_prob, float):
            raise TypeError(f"Dropout3D: keep_prob must be a float. Received: {keep_prob!r}")
        if not 0.0 <= keep_prob <= 1.0:
            raise ValueError(f"Dropout3D: keep_prob must be in [0, 1]. Received: {keep_prob}")
        self.keep_prob = keep_prob

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if x.dim() != 5:
            raise ValueError(f"Dropout3D: x must be 5-D (NCDHW). Received: shape {tuple(x.shape)}")
        keep = torch.rand((*x.shape[:2], 1, 1, 1), device=x.device) < self.keep_prob
        mask = keep.expand(x.shape)
        scale = 0.0 if self.keep_prob == 0 else 1.0 / self.keep_prob
        return x * mask.to(x.dtype) * scale, mask


class RandomCategorical(Primitive):
    """Samples from categorical distributions given by the rows of ``logits``:
    ``RandomCategorical(dtype)(logits, num_sample, seed=0)`` gives ``(batch, num_sample)``
    class indices (drawn with replacement)."""

    def __init__(self, dtype: torch.dtype = torch.int64) -> None:
        if dtype not in (torch.int16, torch.int32, torch.int64):
            raise TypeError(f"RandomCategorical: dtype must be int16/32/64. Received: {dtype}")
        self.dtype = dtype
        self._streams: dict[int, SeededStream] = {}

    def __call__(self, logits: torch.Tensor, num_sample: int, seed: int = 0) -> torch.Tensor:
        seed = check_seed("RandomCategorical", "seed", seed)
        stream = self._streams.setdefault(seed, SeededStream("RandomCategorical", seed, 0))
        probs = torch.softmax(logits.float(), dim=-1)
        gen = stream.generator(logits.device)
        out = torch.multinomial(probs, int(num_sample), replacement=True, generator=gen)
        return out.to(self.dtype)


class Randperm(Primitive):
    """``Randperm(max_length, pad, dtype)(n)``: a random permutation of ``0 .. n-1`` followed
    by ``pad`` up to ``max_length`` values (``n`` a one-element int tensor)."""

    def __init__(
        self, max_length: int = 1, pad: int = -1, dtype: torch.dtype = torch.int32
    ) -> None:
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"Randperm: max_length must be an int >= 1. Received: {max_length!r}")
        if isinstance(pad, bool) or not isinstance(pad, int):
            raise TypeError(f"Randperm: pad must be an int. Received: {pad!r}")
        self.max_length, self.pad, self.dtype = max_length, pad, dtype

    def __call__(self, n: torch.Tensor) -> torch.Tensor:
        count = int(n.reshape(-1)[0]) if torch.is_tensor(n) else int(n)  # host sync: a length
        if not 0 <= count <= self.max_length:
            raise ValueError(
                f"Randperm: n must be in [0, max_length={self.max_length}]. Received: {count}"
            )
        device = n.device if torch.is_tensor(n) else None
        out = torch.full((self.max_length,), self.pad, dtype=self.dtype, device=device)
        out[:count] = torch.randperm(count, device=device).to(self.dtype)
        return out


class FusedCastAdamWeightDecay(Primitive):
    """AdamWeightDecay in float32 for float16 or float32 weights, in place:
    ``(var, m, v, lr, beta1, beta2, epsilon, decay, gradient, global_norm)``; the gradient is
    divided by ``global_norm`` first, ``decay * var`` is added to the update when ``decay >
    0``, and ``(var, m, v)`` are returned (the same tensors, updated)."""

    def __init__(self, use_locking: bool = False) -> None:
        if not isinstance(use_locking, bool):
            raise TypeError(
                f"FusedCastAdamWeightDecay: use_locking must be a bool. Received: {use_locking!r}"
            )
        self.use_locking = use_locking

    def __call__(self, var: torch.Tensor, m: torch.Tensor, v: torch.Tensor, lr: Any,
                 beta1: Any, beta2: Any, epsilon: Any, decay: Any, gradient: torch.Tensor,
                 global_norm: Any = 1.0) -> tuple:  # fmt: skip
        with torch.no_grad():
            g = gradient.float() / global_norm
            m.mul_(beta1).add_(g * (1 - beta1))
            v.mul_(beta2).add_(g * g * (1 - beta2))
            w = var.float()
            update = m / (v.sqrt() + epsilon)
            if decay > 0:  # host sync if decay is a tensor: MindSpore's branch on its value
                update = update + decay * w
            var.copy_(w - lr * update)
        return var, m, v


Custom = refused_class(
    "ops.Custom",
    "it runs a user kernel (AOT/TBE/AKG/pyfunc) through MindSpore's kernel registry; write "
    "the computation with torch ops in a Cell (or a torch.autograd.Function) instead",
    base=Primitive,
)
Pull = refused_class(
    "ops.Pull",
    "it reads weights from MindSpore's parameter server, which jisu does not have; train "
    "data-parallel with torch.distributed",
    base=Primitive,
)
Push = refused_class(
    "ops.Push",
    "it sends gradients to MindSpore's parameter server, which jisu does not have; train "
    "data-parallel with torch.distributed",
    base=Primitive,
)
