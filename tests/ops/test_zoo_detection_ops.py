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
