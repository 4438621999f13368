"""MindSpore's ``Cell`` settings on jisu's ``Cell`` (:mod:`jisu.nn.cell_settings`).

The expected values were recorded from MindSpore 2.10 and 2.0.0 with this net (a ``Cell``
built with ``flags={"custom": 3}`` around ``nn.Dense(3, 2)``): ``get_flags()`` gives
``{"custom": 3}`` and the attribute is set; ``phase`` is "train", "predict" after
``set_train(False)``; after ``add_flags_recursive(fp16=True)`` the output is float16 and the
flags hold ``fp16``; ``init_parameters_data()`` gives a dict of the 2 parameters;
``get_inputs()`` is None; 2.0.0's ``set_param_ps`` without a parameter server raises
RuntimeError (2.10 dropped the method).
"""

from __future__ import annotations

import pytest
import torch

import jisu.nn as nn


class Net(nn.Cell):
    def __init__(self) -> None:
        super().__init__(flags={"custom": 3})
        self.d = nn.Dense(3, 2)
        self.calls = 0

    def construct(self, x):
        self.calls += 1
        return self.d(x)


def test_flags_set_attributes_and_read_back_as_mindspore():
    net = Net()
    assert net.get_flags() == {"custom": 3}
    assert net.custom == 3
    net.add_flags(other="x")
    assert net.get_flags() == {"custom": 3, "other": "x"} and net.other == "x"


def test_phase_follows_set_train():
    net = Net()
    assert net.phase == "train"
    net.set_train(False)
    assert net.phase == "predict"
    net.set_train(True)
    assert net.phase == "train"


def test_fp16_flag_recursive_runs_the_cells_in_float16():
    net = Net()
    net.add_flags_recursive(fp16=True)
    out = net(torch.ones(1, 3))
    assert out.dtype == torch.float16
    assert net.get_flags()["fp16"] is True and net.d.get_flags()["fp16"] is True


def test_init_parameters_data_maps_each_parameter_to_itself():
    net = Net()
    mapping = net.init_parameters_data()
    params = list(net.get_parameters())
    assert len(mapping) == len(params) == 2
    assert all(mapping[p] is p for p in params)


def test_recompute_gives_the_same_gradients_and_runs_the_forward_again():
    torch.manual_seed(0)
    plain, recomputed = Net(), Net()
    recomputed.load_state_dict(plain.state_dict())
    recomputed.recompute()
    x = torch.randn(4, 3)
    for net in (plain, recomputed):
        net(x).square().sum().backward()
    for a, b in zip(plain.parameters(), recomputed.parameters()):
        torch.testing.assert_close(a.grad, b.grad)
    assert plain.calls == 1
    assert recomputed.calls == 2  # once forward, once again in the backward pass
    with torch.no_grad():
        recomputed(x)
    assert recomputed.calls == 3  # no recomputation where nothing is kept for backward


def test_recorded_settings_read_back_and_unknown_arguments_fail():
    net = Net()
    assert net.get_inputs() is None
    x = torch.ones(1, 3)
    net.set_inputs(x)
    assert net.get_inputs() == (x,)
    net.shard(((1, 1),))
    net.set_comm_fusion(2)
    assert all(p.comm_fusion == 2 for p in net.get_parameters())
    with pytest.raises(TypeError, match="fusion_type"):
        net.set_comm_fusion(-1)
    with pytest.raises(TypeError, match="unknown arguments"):
        net.recompute(bogus=True)


def test_parameter_server_training_is_refused_with_the_reason():
    with pytest.raises(RuntimeError, match="parameter-server training is not provided"):
        Net().set_param_ps()


def test_a_torch_layers_tensors_answer_to_their_mindspore_names():
    bn, norm = nn.BatchNorm2d(3), nn.LayerNorm((4,))
    assert bn.gamma is bn.weight and bn.beta is bn.bias
    assert bn.moving_mean is bn.running_mean and bn.moving_variance is bn.running_var
    assert norm.gamma is norm.weight
    with pytest.raises(AttributeError):
        bn.not_a_name  # noqa: B018


def test_setting_a_mindspore_name_sets_the_torch_tensor():
    bn = nn.BatchNorm2d(3)
    new = torch.nn.Parameter(torch.full((3,), 2.0))
    bn.gamma = new
    assert bn.weight is new


def test_get_activation_of_none_is_none_and_set_context_takes_mindspores_keywords():
    import jisu

    assert nn.get_activation(None) is None
    jisu.set_context(mempool_block_size="1GB", deterministic="ON", runtime_num_threads=2)
    assert jisu.get_context("mempool_block_size") == "1GB"
    with pytest.raises(ValueError, match="unknown argument"):
        jisu.set_context(mempol_block_size="1GB")
    jisu.set_context(mempool_block_size=None, deterministic=None, runtime_num_threads=None)


def test_a_generator_of_per_step_rates_is_a_learning_rate():
    w = torch.nn.Parameter(torch.zeros(1))
    opt = nn.SGD([w], learning_rate=(0.1 * i for i in (1, 2)))
    for _ in range(2):
        opt((torch.ones(1),))
    torch.testing.assert_close(w, torch.tensor([-0.3]))
