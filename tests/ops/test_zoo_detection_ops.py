"""Operator behaviours the zoo's detection/segmentation/OCR projects rely on (P2's drivers),
checked against values MindSpore printed (comments say which version)."""

import torch

from jisu import ops
from jisu.ops import operations as P


def test_tuple_to_array_takes_a_range():
    # MindSpore 2.0.0 and 2.10 (PyNative and GRAPH_MODE) print [0 1 2], int32, for
    # ops.tuple_to_array(range(3)); official/cv/YOLOv3 builds its grids this way
    out = ops.tuple_to_array(range(3))
    assert out.dtype == torch.int32 and out.tolist() == [0, 1, 2]
    assert P.TupleToArray()(range(1, 3)).tolist() == [1, 2]


def test_roi_align_gradient_matches_finite_differences():
    # ROIAlign's forward is checked against MindSpore 2.10 in test_nn_primitives; its backward
    # (FasterRCNN trains through it) against finite differences, rois in two images
    feats = torch.randn(2, 3, 6, 7, dtype=torch.float64, requires_grad=True)
    rois = torch.tensor(
        [[0, 1.0, 0.5, 9.0, 8.0], [1, -2.0, 1.0, 5.5, 11.0], [1, 3.0, 3.0, 4.0, 4.0]],
        dtype=torch.float64,
    )
    op = P.ROIAlign(2, 3, 0.5, sample_num=2)
    assert torch.autograd.gradcheck(lambda f: op(f, rois), (feats,))
    # a roi only reads its own image
    out = op(feats, rois)
    (g,) = torch.autograd.grad(out[0].sum(), feats)
    assert g[1].abs().sum() == 0 and g[0].abs().sum() > 0


def test_one_hot_of_an_out_of_range_index_is_all_off():
    # MindSpore 2.0.0 and 2.10 printed these (official/cv/DeepLabV3P's loss one-hots labels
    # holding the ignore label 255 before weighting them out)
    idx = torch.tensor([0, 2, 255, -1, 3], dtype=torch.int32)
    out = P.OneHot(axis=-1)(idx, 3, torch.tensor(1.0), torch.tensor(0.0))
    assert out.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    out = ops.one_hot(idx, 3, torch.tensor(5.0), torch.tensor(-1.0), axis=0)
    assert out.tolist() == [
        [5, -1, -1, -1, -1],
        [-1, -1, -1, -1, -1],
        [-1, 5, -1, -1, -1],
    ]
