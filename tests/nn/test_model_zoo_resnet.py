"""The model zoo's ResNet on jisu with only its imports changed (``tests/nn/model_zoo_resnet.py``,
``tests/nn/resnet_cifar_train.py``): the networks have MindSpore's parameter names and shapes,
a ResNet-50 trained and saved by MindSpore 2.10 loads and gives MindSpore's logits and its next
training steps, and the model zoo's CIFAR-10 training runs on CIFAR-10 binary files
(recorded by ``tests/fixtures/ms_resnet/make_fixtures.py``; MindSpore is not needed here)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import jisu
from jisu import nn
from jisu.train.serialization import load_checkpoint, load_param_into_net
from tests.nn import model_zoo_resnet as zoo
from tests.nn import resnet_cifar_train

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_resnet")


@pytest.mark.parametrize("net_name", ["resnet50", "resnet18"])
def test_the_networks_have_mindspores_parameter_names_shapes_and_order(net_name):
    with open(os.path.join(FIXTURES, "names.json")) as f:
        want = json.load(f)[net_name]
    net = getattr(zoo, net_name)(10)
    trainable = {id(p) for p in net.trainable_params()}
    got = [[name, list(p.shape), id(p) in trainable] for name, p in net.parameters_and_names()]
    assert got == want
    # the model zoo splits its optimizer groups by param.name
    assert [p.name for p in net.trainable_params()] == [n for n, _, t in want if t]


def _mindspore_resnet():
    record = np.load(os.path.join(FIXTURES, "resnet50_narrow.npz"))
    net = zoo.resnet50(10, width=0.125)
    params = load_checkpoint(os.path.join(FIXTURES, "resnet50_narrow.ckpt"))
    assert load_param_into_net(net, params) == ([], [])
    return net, record


def test_a_resnet50_saved_by_mindspore_loads_and_gives_mindspores_logits():
    net, record = _mindspore_resnet()
    # the file holds float16 values; load_param_into_net casts them to the net's float32
    assert net.conv1.weight.dtype == torch.float32
    net.set_train(False)
    logits = net(jisu.Tensor(record["x_eval"])).detach().numpy()
    np.testing.assert_allclose(logits, record["logits"], rtol=1e-3, atol=1e-4)


def test_the_loaded_resnet50_trains_as_mindspore_trains_it():
    """Two TrainOneStepCell steps (Momentum with weight decay, BatchNorm in training mode
    updating its moving statistics): MindSpore's losses and moving statistics (the fixture
    script says why two)."""
    net, record = _mindspore_resnet()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9, weight_decay=1e-4)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    net.set_train(True)
    losses = []
    for images, y in zip(record["train_x"], record["train_y"]):
        x = ((images.astype(np.float32) / 255.0 - 0.5) / 0.25).astype(np.float32)
        losses.append(float(step(jisu.Tensor(x), jisu.Tensor(y))))
    np.testing.assert_allclose(losses, record["losses"], rtol=1e-4)
    moving = {n: p for n, p in net.parameters_and_names() if "moving_" in n}
    assert sorted(moving) == sorted(k[len("after/") :] for k in record.files if "after/" in k)
    for name, value in moving.items():  # momentum 0.9 (MindSpore's) = torch's 0.1
        want = record[f"after/{name}"]  # within the drift of step 1's float32 gradients
        assert np.abs(value.numpy() - want).max() <= 2e-3 * np.abs(want).max(), name


def _write_cifar(path, n: int, rng: np.random.Generator) -> None:
    """``n`` CIFAR-10 binary records (a label byte, then 3x32x32 CHW pixels); the class is
    drawn into the image as a bright band, so the data can be learnt."""
    labels = rng.integers(0, 10, n).astype(np.uint8)
    images = rng.integers(0, 60, (n, 3, 32, 32)).astype(np.uint8)
    for image, label in zip(images, labels):
        image[label % 3, 3 * label : 3 * label + 3, :] = 250
    np.concatenate([labels[:, None], images.reshape(n, -1)], axis=1).tofile(path)


def optimizer_or_info(name):
    """Whether a checkpoint name is Momentum's (MindSpore's names) or append_info's."""
    fixed = ("global_step", "learning_rate", "momentum", "epoch_num", "step_num")
    return name in fixed or name.startswith("moments.")


@pytest.mark.timeout(300)
def test_the_model_zoo_cifar10_training_runs_with_its_imports_changed(tmp_path):
    rng = np.random.default_rng(0)
    train, verify = tmp_path / "cifar-10-batches-bin", tmp_path / "cifar-10-verify-bin"
    train.mkdir()
    verify.mkdir()  # the model zoo's eval folder holds test_batch.bin alone
    for k in range(1, 6):
        _write_cifar(train / f"data_batch_{k}.bin", 8, rng)
    _write_cifar(verify / "test_batch.bin", 16, rng)
    config = resnet_cifar_train.Config(str(train), str(verify), str(tmp_path / "ckpt"))

    net, opt, loss_cb, eval_cb = resnet_cifar_train.train_net(
        config, lambda class_num: zoo.resnet50(class_num, width=config.width)
    )

    steps = 2 * 40 // 8
    assert [(e, s) for e, s, _, _ in loss_cb.log] == [(e, s) for e in (1, 2) for s in range(1, 6)]
    assert all(np.isfinite(loss) for *_, loss in loss_cb.log)
    # one per-step rate of the warm-up + cosine list per step (sink mode: 5 steps per sink)
    assert int(opt.global_step) == steps and len(loss_cb.lr) == steps

    # MindSpore's file names; append_info's epoch and step; the last one holds the net
    ckpt = tmp_path / "ckpt"
    assert sorted(os.listdir(ckpt)) == ["best_acc.ckpt", "resnet50-1_5.ckpt", "resnet50-2_5.ckpt"]
    last = jisu.load_checkpoint(str(ckpt / "resnet50-2_5.ckpt"))
    assert int(last["epoch_num"].asnumpy().item()) == 2
    assert int(last["step_num"].asnumpy().item()) == steps
    fresh = zoo.resnet50(10, width=config.width)
    # the file also holds the optimizer's entries (MindSpore's TrainOneStepCell names) and
    # append_info's, which MindSpore's load_param_into_net lists as not loaded too
    param_not_load, ckpt_not_load = load_param_into_net(fresh, last)
    assert param_not_load == [] and ckpt_not_load and all(map(optimizer_or_info, ckpt_not_load))
    x = torch.from_numpy(rng.standard_normal((4, 3, 32, 32)).astype(np.float32))
    fresh.set_train(False)
    net.set_train(False)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), net(x).detach().numpy())

    # the eval callback's accuracies are the share of right answers, counted here
    data = resnet_cifar_train.create_dataset1(str(verify), False, 8, 32)
    right = total = 0
    for image, label in data.create_tuple_iterator(output_numpy=True):
        right += int((net(torch.from_numpy(image)).argmax(1).numpy() == label).sum())
        total += len(label)
    assert total == 16 and eval_cb.results[-1] == (2, right / total)
    # best_acc.ckpt, saved from cb_params.train_network, loads into a fresh network
    best = zoo.resnet50(10, width=config.width)
    param_not_load, ckpt_not_load = load_param_into_net(
        best, jisu.load_checkpoint(str(ckpt / "best_acc.ckpt"))
    )
    assert param_not_load == [] and all(map(optimizer_or_info, ckpt_not_load))
