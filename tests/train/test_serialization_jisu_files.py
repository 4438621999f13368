"""One save_checkpoint / load_checkpoint under every path (``jisu``, ``jisu.train``,
``jisu.train.serialization``, which ported zoo code imports, and ``jisu.train.checkpoint``):
official/nlp/Bert saves with ``ms.save_checkpoint`` and its run_classifier loads with the
serialization one. Files of jisu's earlier format (torch zip) still load through it."""

import pytest
import torch

import jisu
from jisu import nn
from jisu.dataset.record.validate import MalformedFileError
from jisu.train import serialization


def _net():
    return nn.SequentialCell([nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)])


def test_a_jisu_checkpoint_loads_through_the_serialization_path(tmp_path):
    torch.manual_seed(0)
    net = _net()
    for p in net.parameters():
        torch.nn.init.normal_(p)
    path = str(tmp_path / "net.ckpt")
    jisu.save_checkpoint(net, path)
    fresh = _net()
    state = serialization.load_checkpoint(path, net=fresh)
    assert set(state) == set(jisu.load_checkpoint(path))
    for (name, a), b in zip(net.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name
    other = _net()
    serialization.load_param_into_net(other, serialization.load_checkpoint(path))
    assert torch.equal(other[1].weight, net[1].weight)


def test_a_damaged_jisu_checkpoint_is_refused(tmp_path):
    path = tmp_path / "net.ckpt"
    jisu.save_checkpoint(_net(), str(path))
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match=r"net\.ckpt"):
        serialization.load_checkpoint(str(path))
