"""MindSpore's other norm layers: ``BatchNorm3d``, ``SyncBatchNorm``, ``GroupNorm`` and
``InstanceNorm1d/2d/3d``, on torch's, with MindSpore's arguments and parameter names.

- ``BatchNorm3d`` holds its statistics in a child ``bn2d`` (MindSpore's layout, so a
  checkpoint's names are ``bn.bn2d.gamma`` ...);
- ``SyncBatchNorm`` is torch's ``SyncBatchNorm`` (statistics across the processes of a
  ``torch.distributed`` run) and plain batch normalization in a single process;
- ``InstanceNorm*`` always normalize each sample by its own statistics (training or not, as
  MindSpore's); their ``moving_mean``/``moving_variance`` exist for the checkpoint's sake and
  are updated in training.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .. import _checks
from ..cell import MINDSPORE_NAMES, Cell
from .basic import init_parameter
from .normalization import _BN_DOC, _MindSporeBatchNorm

__all__ = [
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "SyncBatchNorm",
]

MINDSPORE_NAMES.append(
    (
        nn.modules.instancenorm._InstanceNorm,
        {
            "weight": "gamma",
            "bias": "beta",
            "running_mean": "moving_mean",
            "running_var": "moving_variance",
        },
    )
)


class _BatchNorm3dInner(_MindSporeBatchNorm, nn.BatchNorm3d):
    """BatchNorm3d's child ``bn2d`` (the name MindSpore gives it): batch norm of (N, C, D, H, W)."""

    _ndims = (5,)

    def __init__(self, *args: Any) -> None:
        self._build(*args)


class BatchNorm3d(Cell):
    __doc__ = (
        _BN_DOC
        + """
    Input: (N, C, D, H, W). The parameters live in the child ``bn2d`` (MindSpore's names:
    ``bn2d.gamma``, ``bn2d.beta``, ``bn2d.moving_mean``, ``bn2d.moving_variance``).
"""
    )

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
        data_format: str = "NCDHW",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.bn2d = _BatchNorm3dInner(
            num_features, eps, momentum, affine, gamma_init, beta_init, moving_mean_init,
            moving_var_init, use_batch_statistics, data_format, dtype,
        )  # fmt: skip

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2d(x)


class SyncBatchNorm(_MindSporeBatchNorm, nn.SyncBatchNorm):
    __doc__ = (
        _BN_DOC
        + """
    Input: (N, C, ...). In a ``torch.distributed`` run (initialized) training uses the
    statistics of the whole global batch (torch's ``SyncBatchNorm``); ``process_groups``
    (MindSpore's lists of ranks that sync together) becomes torch subgroups, made when the
    layer is built (every process must build it). In one process it is ``BatchNorm``.
"""
    )

    _ndims = (2, 3, 4, 5)

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
        process_groups: list[list[int]] | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        self._build(
            num_features, eps, momentum, affine, gamma_init, beta_init, moving_mean_init,
            moving_var_init, use_batch_statistics, "NCHW", dtype,
        )  # fmt: skip
        if process_groups is not None:
            if not isinstance(process_groups, list) or not all(
                isinstance(g, list) for g in process_groups
            ):
                raise TypeError(
                    "SyncBatchNorm: process_groups must be a list of lists of ranks. "
                    f"Received process_groups={process_groups!r}"
                )
            if _distributed():
                group, _ = torch.distributed.new_subgroups_by_enumeration(process_groups)
                self.process_group = group
        self.process_groups = process_groups

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        use_batch = (
            self.training if self.use_batch_statistics is None else self.use_batch_statistics
        )
        if use_batch and self.training and _distributed():
            if x.device.type in ("cuda", "xpu", "hpu") or x.device.type == _private_use():
                return nn.SyncBatchNorm.forward(self, x)
            return self._sync_on_host(x)  # torch syncs accelerator tensors only
        return _MindSporeBatchNorm.construct(self, x)

    def _sync_on_host(self, x: torch.Tensor) -> torch.Tensor:
        """Batch statistics over every process of the group, by a differentiable all-reduce
        of the per-channel count, sum and sum of squares (for CPU tensors under gloo)."""
        dims = [0, *range(2, x.dim())]
        xf = x.float()
        count = torch.tensor(x.numel() / x.shape[1], dtype=torch.float32, device=x.device)
        stats = torch.cat([count.reshape(1), xf.sum(dims), (xf * xf).sum(dims)])
        stats = _AllReduceSum.apply(stats, self.process_group or torch.distributed.group.WORLD)
        n, c = stats[0], x.shape[1]
        mean, meansq = stats[1 : 1 + c] / n, stats[1 + c :] / n
        var = meansq - mean * mean
        with torch.no_grad():  # torch's rule: the moving variance takes the unbiased variance
            self.running_mean.lerp_(mean.detach(), self.momentum)
            self.running_var.lerp_(var.detach() * n / (n - 1), self.momentum)
        shape = (1, c, *[1] * (x.dim() - 2))
        out = (xf - mean.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)
        return (out * self.weight.view(shape) + self.bias.view(shape)).to(x.dtype)


class _AllReduceSum(torch.autograd.Function):
    """The sum over the group's processes; its gradient is the sum of theirs (every process's
    loss depends on the sum)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, group: Any) -> torch.Tensor:
        ctx.group = group
        out = tensor.clone()
        torch.distributed.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        grad = grad.clone()
        torch.distributed.all_reduce(grad, group=ctx.group)
        return grad, None


def _private_use() -> str:
    return torch._C._get_privateuse1_backend_name()


def _distributed() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


class GroupNorm(Cell, nn.GroupNorm):
    """Group normalization of (N, C, ...) over ``num_groups`` groups of channels, then a
    per-channel ``gamma``/``beta``.

    Args:
        num_groups: groups (divides ``num_channels``).
        num_channels: the input's channels.
        eps: added to the variance. Default 1e-5.
        affine: whether gamma/beta learn (they exist either way). Default True.
        gamma_init, beta_init: initializers. Defaults "ones", "zeros".
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        _checks.positive_int("GroupNorm", "num_groups", num_groups)
        _checks.positive_int("GroupNorm", "num_channels", num_channels)
        _checks.a_bool("GroupNorm", "affine", affine)
        if num_channels % num_groups:
            raise ValueError(
                "GroupNorm: num_channels must be divisible by num_groups. Received "
                f"num_channels={num_channels}, num_groups={num_groups}"
            )
        _checks.a_float("GroupNorm", "eps", eps, low=0.0)
        nn.GroupNorm.__init__(self, num_groups, num_channels, eps=eps, affine=True, dtype=dtype)
        self._auto_prefix = True
        self.affine = affine
        init_parameter(self.weight, gamma_init, "GroupNorm", "gamma_init", None)
        init_parameter(self.bias, beta_init, "GroupNorm", "beta_init", None)
        self.weight.requires_grad_(affine)
        self.bias.requires_grad_(affine)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() < 2 or x.shape[1] != self.num_channels:
            raise ValueError(
                f"GroupNorm: the input's channels (axis 1) must be num_channels="
                f"{self.num_channels}. Received shape={tuple(x.shape)}"
            )
        return F.group_norm(
            x, self.num_groups, self.weight.to(x.dtype), self.bias.to(x.dtype), self.eps
        )


class _MindSporeInstanceNorm(Cell):
    """MindSpore's InstanceNorm arguments on a torch ``_InstanceNorm`` (running statistics
    kept, never used to normalize)."""

    _ndim = 4

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        gamma_init: Any = "ones",
        beta_init: Any = "zeros",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        owner = type(self).__name__
        _checks.positive_int(owner, "num_features", num_features)
        _checks.a_float(owner, "eps", eps)
        _checks.a_float(owner, "momentum", momentum)
        _checks.a_bool(owner, "affine", affine)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{owner}: momentum must be in [0, 1]. Received momentum={momentum}")
        torch_kind = next(c for c in type(self).__mro__ if c.__module__.startswith("torch."))
        torch_kind.__init__(
            self,
            num_features,
            eps=eps,
            momentum=1.0 - momentum,  # torch's weighs the batch; MindSpore's the old value
            affine=True,
            track_running_stats=True,
            dtype=dtype,
        )
        self._auto_prefix = True
        self.affine, self.ms_momentum = affine, momentum
        init_parameter(self.weight, gamma_init, owner, "gamma_init", None)
        init_parameter(self.bias, beta_init, owner, "beta_init", None)
        self.weight.requires_grad_(affine)
        self.bias.requires_grad_(affine)

    def construct(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != self._ndim:
            raise ValueError(
                f"{type(self).__name__}: the input must have {self._ndim} dims. "
                f"Received shape={tuple(x.shape)}"
            )
        return F.instance_norm(
            x,
            self.running_mean if self.training else None,
            self.running_var if self.training else None,
            self.weight.to(x.dtype),
            self.bias.to(x.dtype),
            use_input_stats=True,
            momentum=self.momentum,
            eps=self.eps,
        )


_IN_DOC = """Instance normalization of {shape} with MindSpore's arguments: each sample and
    channel normalized by its own mean and variance, in training and in eval.

    Args:
        num_features: channels.
        eps: added to the variance. Default 1e-5.
        momentum: MindSpore's documented rule for ``moving_mean``/``moving_variance`` (updated
            in training, never used to normalize): moving = momentum·moving + (1 −
            momentum)·batch. Default 0.1.
        affine: whether gamma/beta learn. Default True.
        gamma_init, beta_init: initializers. Defaults "ones", "zeros".
    """


class InstanceNorm1d(_MindSporeInstanceNorm, nn.InstanceNorm1d):
    __doc__ = _IN_DOC.format(shape="(N, C, L)")
    _ndim = 3


class InstanceNorm2d(_MindSporeInstanceNorm, nn.InstanceNorm2d):
    __doc__ = _IN_DOC.format(shape="(N, C, H, W)")
    _ndim = 4


class InstanceNorm3d(_MindSporeInstanceNorm, nn.InstanceNorm3d):
    __doc__ = _IN_DOC.format(shape="(N, C, D, H, W)")
    _ndim = 5
