"""MindSpore's ``BatchNorm1d``/``BatchNorm2d`` and ``LayerNorm`` as subclasses of torch's
(so AMP keeps them in float32 and ``Cell`` names their tensors gamma/beta/moving_mean/
moving_variance).

MindSpore's ``momentum`` weighs the old moving statistic (moving = momentum·moving +
(1 − momentum)·batch); torch's weighs the new one, so torch's momentum is 1 − MindSpore's.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ..cell import Cell
from ._padding import check_nchw
from .basic import init_parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm"]


class _MindSporeBatchNorm(Cell):
    """MindSpore's BatchNorm arguments on top of a torch ``_BatchNorm``."""

    _ndims: tuple[int, ...] = ()

    def _build(
        self,
        num_features: int,
        eps: float,
        momentum: float,
        affine: bool,
        gamma_init: Any,
        beta_init: Any,
        moving_mean_init: Any,
        moving_var_init: Any,
        use_batch_statistics: bool | None,
        data_format: str,
        dtype: torch.dtype,
    ) -> None:
        owner = type(self).__name__
        _checks.positive_int(owner, "num_features", num_features)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
            raise TypeError(f"{owner}: momentum must be a float. Received momentum={momentum!r}")
        if not 0 <= momentum <= 1:
            raise ValueError(f"{owner}: momentum must be in [0, 1]. Received momentum={momentum}")
        _checks.a_bool(owner, "affine", affine)
        if use_batch_statistics is not None and not isinstance(use_batch_statistics, bool):
            raise ValueError(
                f"{owner}: use_batch_statistics must be a bool or None. "
                f"Received use_batch_statistics={use_batch_statistics!r}"
            )
        check_nchw(owner, data_format)
        # gamma/beta always exist (MindSpore keeps them, frozen, when affine=False)
        torch_kind = next(c for c in type(self).__mro__ if c.__module__.startswith("torch."))
        torch_kind.__init__(
            self, num_features, eps=eps, momentum=1.0 - momentum, affine=True, dtype=dtype
        )
        self._auto_prefix = True
        self.affine = affine
        self.use_batch_statistics = use_batch_statistics
        self.ms_momentum = momentum
        self.data_format = data_format
        for tensor, init, name in (
            (self.weight, gamma_init, "gamma_init"),
            (self.bias, beta_init, "beta_init"),
            (self.running_mean, moving_mean_init, "moving_mean_init"),
            (self.running_var, moving_var_init, "moving_var_init"),
        ):
            init_parameter(tensor, init, owner, name, None)
        self.weight.requires_grad_(affine)
        self.bias.requires_grad_(affine)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in self._ndims:
            raise ValueError(
                f"{type(self).__name__}: the input must have {' or '.join(map(str, self._ndims))} "
                f"dims. Received shape={tuple(x.shape)}"
            )
        use_batch = (
            self.training if self.use_batch_statistics is None else self.use_batch_statistics
        )
        return F.batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_batch,
            self.momentum,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"num_features={self.num_features}, eps={self.eps}, momentum={self.ms_momentum}, "
            f"affine={self.affine}, use_batch_statistics={self.use_batch_statistics}"
        )


_BN_DOC = """Batch normalization with MindSpore's arguments.

    Args:
        num_features: channels.
        eps: added to the variance. Default 1e-5.
        momentum: MindSpore's (weight of the old moving statistic). Default 0.9.
        affine: whether gamma/beta learn (they exist either way). Default True.
        gamma_init, beta_init, moving_mean_init, moving_var_init: initializers. Defaults
            "ones", "zeros", "zeros", "ones".
        use_batch_statistics: None (default): batch statistics in training, moving ones in
            eval; True: always batch statistics (moving ones still updated); False: always
            the moving ones.
        data_format: "NCHW" only.
    """


class BatchNorm2d(_MindSporeBatchNorm, nn.BatchNorm2d):
    __doc__ = _BN_DOC + "\n    Input: (N, C, H, W).\n"
    _ndims = (4,)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.9,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        moving_mean_init: Any = "zeros",
        moving_var_init: Any = "ones",
        use_batch_statistics: bool | None = None,
        data_format: str = "NCHW",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self._build(
            num_features, eps, momentum, affine, gamma_init, beta_init, moving_mean_init,
            moving_var_init, use_batch_statistics, data_format, dtype,
        )  # fmt: skip


class BatchNorm1d(_MindSporeBatchNorm, nn.BatchNorm1d):
    __doc__ = _BN_DOC + "\n    Input: (N, C) or (N, C, L).\n"
    _ndims = (2, 3)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.9,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        moving_mean_init: Any = "zeros",
        moving_var_init: Any = "ones",
        use_batch_statistics: bool | None = None,
        data_format: str = "NCHW",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self._build(
            num_features, eps, momentum, affine, gamma_init, beta_init, moving_mean_init,
            moving_var_init, use_batch_statistics, data_format, dtype,
        )  # fmt: skip


class LayerNorm(Cell, nn.LayerNorm):
    """Layer normalization with MindSpore's arguments: normalize over the axes from
    ``begin_norm_axis`` on, then scale by gamma and shift by beta, whose shape
    ``normalized_shape`` is the input's from ``begin_params_axis`` on.

    Args:
        normalized_shape: tuple/list, the shape of gamma and beta.
        begin_norm_axis: first normalized axis. Default -1.
        begin_params_axis: first axis gamma/beta cover. Default -1.
        gamma_init, beta_init: initializers. Defaults "ones", "zeros".
        epsilon: added to the variance. Default 1e-7 (MindSpore's, not torch's 1e-5).
    """

    def __init__(
        self,
        normalized_shape: tuple[int, ...] | list[int],
        begin_norm_axis: int = -1,
        begin_params_axis: int = -1,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        epsilon: float = 1e-7,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        if not isinstance(normalized_shape, (tuple, list)):
            raise TypeError(
                "LayerNorm: normalized_shape must be a tuple or list of ints. "
                f"Received normalized_shape={normalized_shape!r}"
            )
        if not normalized_shape:
            raise ValueError("LayerNorm: normalized_shape must not be empty. Received ()")
        for name, axis in (
            ("begin_norm_axis", begin_norm_axis),
            ("begin_params_axis", begin_params_axis),
        ):
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise TypeError(f"LayerNorm: {name} must be an int. Received {name}={axis!r}")
        nn.LayerNorm.__init__(self, tuple(normalized_shape), eps=epsilon, dtype=dtype)
        self._auto_prefix = True
        self.begin_norm_axis, self.begin_params_axis, self.epsilon = (
            begin_norm_axis, begin_params_axis, epsilon,
        )  # fmt: skip
        init_parameter(self.weight, gamma_init, "LayerNorm", "gamma_init", None)
        init_parameter(self.bias, beta_init, "LayerNorm", "beta_init", None)
        from ...ops.operations import LayerNorm as LayerNormOp  # (jisu.ops imports jisu.nn)

        # MindSpore's primitive attribute: subclasses call self.layer_norm(x, gamma, beta)
        # (mindcv's ConvNextLayerNorm)
        self.layer_norm = LayerNormOp(begin_norm_axis, begin_params_axis, epsilon)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        ndim = x.dim()
        norm_axis = self.begin_norm_axis % ndim
        params_axis = self.begin_params_axis % ndim
        if tuple(x.shape[params_axis:]) != tuple(self.weight.shape):
            raise ValueError(
                f"LayerNorm: the input's shape from begin_params_axis={self.begin_params_axis} "
                f"must be normalized_shape={tuple(self.weight.shape)}. Received shape="
                f"{tuple(x.shape)}"
            )
        weight, bias = self.weight.to(x.dtype), self.bias.to(x.dtype)
        if norm_axis == params_axis:
            return F.layer_norm(x, x.shape[norm_axis:], weight, bias, self.eps)
        dims = tuple(range(norm_axis, ndim))
        var, mean = torch.var_mean(x, dim=dims, keepdim=True, correction=0)
        return (x - mean) * torch.rsqrt(var + self.eps) * weight + bias

    def extra_repr(self) -> str:
        return (
            f"normalized_shape={tuple(self.weight.shape)}, begin_norm_axis="
            f"{self.begin_norm_axis}, begin_params_axis={self.begin_params_axis}"
        )
