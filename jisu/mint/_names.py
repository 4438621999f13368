"""Which torch object each ``mindspore.mint`` name is (MindSpore 2.10's ``mint`` mirrors torch's
names and arguments). Names are looked up in the order given; names torch lacks are refused."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


def _words(text: str) -> list[str]:
    return text.split()


# mindspore.mint's functions (2.10), torch's under the same names
FUNCTIONS = _words(
    """
    abs acos acosh adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
    adaptive_max_pool1d adaptive_max_pool2d add addbmm addcdiv addmm addmv all allclose amax
    amin any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin
    argsort asin asinh atan atan2 atanh avg_pool1d avg_pool2d avg_pool3d baddbmm batch_norm
    batch_norm_elemt batch_norm_gather_stats_with_counts batch_norm_stats bernoulli
    binary_cross_entropy binary_cross_entropy_with_logits bincount bitwise_and bitwise_not
    bitwise_or bitwise_xor bmm broadcast_to cat cdist ceil chunk clamp clone concat conv1d
    conv2d conv3d conv_tbc conv_transpose2d cos cosh cosine_embedding_loss count_nonzero
    cross cross_entropy cummax cummin cumprod cumsum diag diff div divide dot dropout
    dropout2d dstack einsum elu elu_ embedding empty empty_like eq erf erfc erfinv exp exp2
    expm1 eye flatten flip float_power floor floor_divide fmod fold frac full full_like
    gather gcd gelu glu greater greater_equal grid_sample group_norm gt hardtanh hardtanh_
    histc hstack imag index_add index_select interpolate inverse isclose isfinite isinf
    isnan isneginf kl_div kthvalue layer_norm le leaky_relu lerp less less_equal linear log
    log10 log1p log2 log_softmax logaddexp logaddexp2 logical_and logical_not logical_or
    logical_xor logsigmoid logsumexp lt masked_select matmul matrix_norm max max_pool2d
    max_unpool2d maximum mean median meshgrid min minimum mm mse_loss mul multinomial mv
    nan_to_num nansum narrow ne neg negative nll_loss nonzero norm normal normalize
    not_equal one_hot ones_like outer pad permute pixel_shuffle polar pow prelu prod qr rand
    rand_like randint randint_like randn randn_like randperm ravel real reciprocal relu
    relu6 relu_ remainder repeat_interleave reshape roll round rsqrt scatter scatter_add
    searchsorted select sigmoid sigmoid_ sign silu sin sinc sinh soft_margin_loss softmax
    sort split sqrt square squeeze stack std std_mean sub sum swapaxes t take tan tanh
    threshold threshold_ tile topk trace transpose triangular_solve tril triu unbind unfold
    unique_consecutive unsqueeze upsample var var_mean vdot vector_norm where xlogy zeros
    zeros_like
    """
)

# mindspore.mint.nn.functional's functions (2.10)
FUNCTIONAL = _words(
    """
    adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d adaptive_max_pool1d
    adaptive_max_pool2d avg_pool1d avg_pool2d avg_pool3d batch_norm binary_cross_entropy
    binary_cross_entropy_with_logits conv1d conv2d conv3d conv_transpose2d
    cosine_embedding_loss cross_entropy dropout dropout2d elu elu_ embedding flatten fold
    gelu glu grid_sample group_norm hardtanh hardtanh_ interpolate kl_div layer_norm
    leaky_relu linear log_softmax logsigmoid max_pool2d max_unpool2d mse_loss nll_loss
    normalize one_hot pad pixel_shuffle prelu relu relu6 relu_ sigmoid sigmoid_ silu
    soft_margin_loss softmax tanh threshold threshold_ unfold upsample
    """
)

# mindspore.mint.nn's layers (2.10)
LAYERS = _words(
    """
    AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d
    AdaptiveMaxPool2d AvgPool1d AvgPool2d AvgPool3d BCELoss BCEWithLogitsLoss BatchNorm1d
    BatchNorm2d BatchNorm3d ConstantPad1d ConstantPad2d ConstantPad3d Conv1d Conv2d Conv3d
    ConvTranspose2d CosineEmbeddingLoss ELU Flatten Fold GELU GroupNorm Hardshrink
    Hardsigmoid Hardswish Hardtanh Identity KLDivLoss L1Loss Linear LogSigmoid LogSoftmax
    MSELoss MaxUnpool2d Mish PReLU PixelShuffle ReLU ReLU6 ReflectionPad1d ReflectionPad2d
    ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d SELU SiLU Sigmoid
    SmoothL1Loss SoftMarginLoss Softmax SyncBatchNorm Tanh Threshold Unfold Upsample
    UpsamplingBilinear2d UpsamplingNearest2d ZeroPad1d ZeroPad2d ZeroPad3d
    """
)

#: mint names jisu refuses: collective communication (use ``jisu.communication`` or
#: ``torch.distributed``) and Ascend-only kernels
REFUSED = frozenset(
    _words(
        """
    P2POp addr_ all_gather all_gather_into_tensor all_gather_into_tensor_uneven
    all_gather_object all_reduce all_to_all all_to_all_single barrier batch_isend_irecv
    broadcast broadcast_object_list destroy_process_group gather_object get_backend
    get_global_rank get_group_rank get_process_group_ranks get_rank get_world_size
    init_process_group irecv is_available is_initialized isend new_group npu_gelu recv
    recv_object_list reduce reduce_scatter reduce_scatter_tensor
    reduce_scatter_tensor_uneven scatter_object_list send send_object_list
        """
    )
)

# F's sigmoid/tanh are deprecated aliases of torch's; everything else in F first (torch's
# top-level dropout/embedding/batch_norm/... take other arguments or orders)
_TORCH_FIRST = {"sigmoid", "tanh", "sigmoid_"}


def lookup(name: str, functional_first: bool = True) -> Any:
    """The torch function a mint function name stands for."""
    sources: tuple[Any, ...] = (F, torch) if functional_first else (torch, F)
    if name in _TORCH_FIRST:
        sources = (torch, F)
    for source in (*sources, torch.linalg):
        if hasattr(source, name):
            return getattr(source, name)
    raise AttributeError(f"jisu.mint: torch has no {name!r}")


def refused(module: str, name: str) -> AttributeError:
    """The error for a mint name jisu does not provide."""
    if name in REFUSED:
        return AttributeError(
            f"{module}.{name} is collective communication or an Ascend kernel, which jisu.mint "
            "does not provide: use jisu.communication or torch.distributed"
        )
    return AttributeError(f"module {module!r} has no attribute {name!r}")
