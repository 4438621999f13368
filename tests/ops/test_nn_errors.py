"""Misuse of jisu's nn, image, loss and detection primitives fails where the primitive is
built (or called), naming the op and the argument, with MindSpore's error types."""

from __future__ import annotations

import pytest
import torch

from jisu.ops import operations as P


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: P.Conv2D(4, 3, pad_mode="full"), ValueError, "Conv2D: pad_mode must be one of"),
        (lambda: P.Conv2D(4, 3, pad=1), ValueError, "Conv2D: pad must be 0 when pad_mode"),
        (lambda: P.Conv2D(4, 3, group=0), ValueError, "Conv2D: group must be an int >= 1"),
        (lambda: P.Conv2D(4, 3, data_format="NHWC"), ValueError, "Conv2D: data_format must be"),
        (lambda: P.Conv3D(2, (3, 3)), ValueError, "Conv3D: kernel_size must be"),
        (lambda: P.MaxPool(2, 2, pad_mode="pad"), ValueError, "MaxPool: pad_mode must be 'same'"),
        (lambda: P.AvgPool(kernel_size=0), ValueError, "AvgPool: kernel_size must be"),
        (lambda: P.AvgPool3D(divisor_override=-1), ValueError, "divisor_override must be"),
        (lambda: P.AdaptiveAvgPool2D(1.5), TypeError, "AdaptiveAvgPool2D: output_size"),
        (lambda: P.BiasAdd("NDHWC"), ValueError, "BiasAdd: data_format must be"),
        (lambda: P.MirrorPad("EDGE"), ValueError, "MirrorPad: mode must be"),
        (lambda: P.Pad(3), TypeError, "Pad: paddings must be a tuple"),
        (lambda: P.L2Normalize(epsilon="1"), TypeError, "L2Normalize: epsilon must be a float"),
        (lambda: P.Dropout(keep_prob=1.5), ValueError, r"Dropout: keep_prob must be in \(0, 1\]"),
        (lambda: P.SmoothL1Loss(beta=0), ValueError, "SmoothL1Loss: beta must be a float > 0"),
        (lambda: P.NLLLoss(reduction="avg"), ValueError, "NLLLoss: reduction must be one of"),
        (lambda: P.CTCLoss(ctc_merge_repeated=False), NotImplementedError, "ctc_merge_repeated"),
        (lambda: P.IOU("giou"), KeyError, "IOU: mode must be"),
        (lambda: P.NMSWithMask(1), TypeError, "NMSWithMask: iou_threshold must be a float"),
        (lambda: P.BoundingBoxDecode((4, 5, 6)), ValueError, "max_shape must be"),
        (lambda: P.BoundingBoxEncode(stds=(1.0,)), ValueError, "stds must be a tuple of 4"),
        (lambda: P.ROIAlign(2, 2, 0.5, roi_end_mode=2), ValueError, "roi_end_mode must be 0"),
        (lambda: P.ROIAlign(0, 2, 0.5), ValueError, "pooled_height must be an int >= 1"),
        (lambda: P.ResizeBilinearV2(True, True), ValueError, "half_pixel_centers=True needs"),
        (lambda: P.ResizeNearestNeighbor((0, 2)), ValueError, "size must be"),
        (lambda: P.CropAndResize("bicubic"), ValueError, "CropAndResize: method must be"),
        (lambda: P.RandomChoiceWithMask(0), ValueError, "count must be an int > 0"),
        (lambda: P.Multinomial(dtype=torch.float32), TypeError, "Multinomial: dtype must be"),
        (lambda: P.ApplyMomentum(gradient_scale=1), TypeError, "gradient_scale must be a float"),
        (lambda: P.DynamicRNN(cell_type="GRU"), NotImplementedError, "only cell_type='LSTM'"),
        (lambda: P.DynamicGRUV2(gate_order="hzr"), ValueError, "gate_order must be"),
    ],
)
def test_bad_arguments_are_refused_with_the_op_and_argument(build, error, match) -> None:
    with pytest.raises(error, match=match):
        build()


def test_bad_inputs_are_refused_when_called() -> None:
    with pytest.raises(ValueError, match="Conv2D: x must be a 4-d tensor"):
        P.Conv2D(4, 3)(torch.zeros(3, 5, 5), torch.zeros(4, 3, 3, 3))
    with pytest.raises(ValueError, match="MirrorPad: the pads of dimension 2 must be <= 3"):
        P.MirrorPad()(torch.zeros(1, 1, 4, 4), torch.tensor([[0, 0], [0, 0], [4, 0], [0, 0]]))
    with pytest.raises(ValueError, match="Pad: paddings must be 2 pairs"):
        P.Pad(((1, 1),))(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="IOU: gt_boxes must be"):
        P.IOU()(torch.zeros(3, 4), torch.zeros(3))
    with pytest.raises(ValueError, match="SoftmaxCrossEntropyWithLogits: logits and labels"):
        P.SoftmaxCrossEntropyWithLogits()(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="NMSWithMask: bboxes must be"):
        P.NMSWithMask(0.5)(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="ResizeBilinearV2: x must be NCHW"):
        P.ResizeBilinearV2()(torch.zeros(2, 3, 4), (2, 2))
    with pytest.raises(ValueError, match="DropoutDoMask: mask must be"):
        P.DropoutDoMask()(torch.zeros(300), torch.zeros(16, dtype=torch.uint8), 0.5)


def test_primitives_jisu_lacks_are_refused_by_name_when_built() -> None:
    with pytest.raises(NotImplementedError, match="Dilation2D is not provided by jisu"):
        P.Dilation2D()
    with pytest.raises(AttributeError):
        P.NotAMindSporeName  # noqa: B018
