"""One save_checkpoint / load_checkpoint under every path (``jisu``, ``jisu.train``,
``jisu.train.serialization``, which ported zoo code imports, and ``jisu.train.checkpoint``):
official/nlp/Bert saves with ``ms.save_checkpoint`` and its run_classifier loads with the
serialization one. Files of jisu's earlier format (torch zip) still load through it."""

import os

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
    jisu.save_checkpoint(_net(), str(path), crc_check=True)  # MindSpore's CRC trailer
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedFileError, match=r"net\.ckpt"):
        serialization.load_checkpoint(str(path))


def test_safetensors_round_trip_through_the_one_save_and_load(tmp_path):
    """``format="safetensors"`` writes MindSpore-named tensors (``.safetensors`` appended, as
    MindSpore does) that load back by name, the resume entry included."""
    torch.manual_seed(0)
    net = _net()
    path = tmp_path / "net"
    jisu.save_checkpoint(net, str(path), format="safetensors")
    written = tmp_path / "net.safetensors"
    assert written.exists()
    params = jisu.load_checkpoint(str(written), format="safetensors")
    assert set(params) == set(jisu.load_checkpoint(_saved_ckpt(net, tmp_path)))
    fresh = _net()
    param_not_load, ckpt_not_load = jisu.load_param_into_net(fresh, params)
    assert param_not_load == [] and ckpt_not_load == []
    for (name, a), b in zip(net.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a, b), name


def _saved_ckpt(net, folder):
    path = str(folder / "net.ckpt")
    jisu.save_checkpoint(net, path)
    return path


def test_update_parameters_name_keeps_its_names_in_the_file(tmp_path):
    """DCGAN's tutorial: ``optimizer.update_parameters_name("optim_g.")`` renames the
    generator's parameters too, so its generator.ckpt holds ``optim_g.``-prefixed names
    (MindSpore renames the Parameter objects); the moving statistics keep theirs."""
    net = _net()
    opt = nn.Adam(net.trainable_params(), 0.1)
    opt.update_parameters_name("optim_g.")
    path = str(tmp_path / "generator.ckpt")
    jisu.save_checkpoint(net, path)
    params = jisu.load_checkpoint(path)
    assert list(params)[:-1] == [
        "optim_g.0.weight",
        "1.moving_mean",
        "1.moving_variance",
        "optim_g.1.gamma",
        "optim_g.1.beta",
    ]
    assert params["optim_g.0.weight"].name == "optim_g.0.weight"
    # the tutorial's reload: a fresh generator finds them under the prefix
    fresh = _net()
    with pytest.warns(UserWarning, match="prefix 'optim_g.'"):
        param_not_load, _ = jisu.load_param_into_net(fresh, params)
    assert param_not_load == []
    assert torch.equal(fresh[0].weight, net[0].weight)


def test_an_optimizer_passed_where_strict_load_goes_is_refused(tmp_path):
    """jisu's earlier load_checkpoint(path, net, optimizer): the third place is now
    MindSpore's strict_load, so an optimizer there is refused, not read as True."""
    net = _net()
    path = _saved_ckpt(net, tmp_path)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="strict_load must be a bool; pass an optimizer as"):
        jisu.load_checkpoint(path, net, opt)


def test_a_mindspore_train_cell_checkpoint_resumes_a_model(tmp_path):
    """MindSpore 2.10's file of TrainOneStepCell(WithLossCell(BatchNorm1d -> Dense), Momentum)
    after two steps (H2's recorded fixture) loaded with model=: the network by name and the
    optimizer's moments and step from MindSpore's entries (no resume entry: no position)."""
    from jisu.train.ckpt_state import network_entries
    from jisu.train.optimizer_names import optimizer_entries

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.dense = nn.Dense(4, 3)
            self.bn = nn.BatchNorm1d(4)

        def construct(self, x):
            return self.dense(self.bn(x))

    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_optimizer_ckpt")
    path = os.path.join(path, "momentum.ckpt")
    stored = jisu.load_checkpoint(path)
    net = Net()
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
    model = jisu.Model(net, nn.MSELoss(), opt)
    assert jisu.load_checkpoint(path, model=model) is not None
    for name, value in network_entries(net)[0]:
        assert torch.equal(value, stored[name]), name
    entries, _ = optimizer_entries(opt, network_entries(net)[1])
    moments = [(name, value) for name, value in entries if name.startswith("moments.")]
    assert moments and all(torch.equal(value, stored[name]) for name, value in moments)
    assert dict(entries)["global_step"].tolist() == stored["global_step"].tolist() == [2]
    assert "epoch" not in model.state_dict()  # MindSpore's file has no position
