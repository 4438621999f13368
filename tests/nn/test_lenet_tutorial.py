"""MindSpore's LeNet tutorial runs on jisu with only its imports changed
(``tests/nn/lenet_tutorial.py``), on the handwritten digits (jisu's embedded copy) written in
MNIST's idx format in the tutorial's folder layout (``MNIST_Data/train`` and
``MNIST_Data/test``)."""

from __future__ import annotations

import os
import struct

import cv2
import numpy as np
import pytest

import jisu
from jisu.job_data import load_digits
from tests.nn import lenet_tutorial


def write_idx(folder, split: str, images: np.ndarray, labels: np.ndarray) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{split}-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, len(images), 28, 28) + images.tobytes())
    with open(os.path.join(folder, f"{split}-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 0x801, len(labels)) + labels.tobytes())


@pytest.fixture
def mnist_data(tmp_path):
    digits, targets = load_digits()
    images = np.stack(
        [cv2.resize((img.astype(np.int32) * 16).clip(0, 255).astype(np.uint8), (28, 28))
         for img in digits]
    )  # fmt: skip
    labels = targets.astype(np.uint8)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(images))
    train, test = order[:1440], order[1440:]
    # the tutorial's settings (lr 0.01, Normal(0.02) weights) need a few hundred steps before
    # the loss leaves 2.30: 8 copies of the training digits, each shifted by up to 2 pixels
    shifts = [(dy, dx) for dy in (-2, 0, 2) for dx in (-2, 0, 2) if (dy, dx) != (0, 0)]
    train_images = np.concatenate(
        [np.roll(images[train], s, axis=(1, 2)) for s in shifts[:7]] + [images[train]]
    )
    train_labels = np.tile(labels[train], 8)
    root = tmp_path / "MNIST_Data"
    write_idx(root / "train", "train", train_images, train_labels)
    write_idx(root / "test", "t10k", images[test], labels[test])
    return str(root)


@pytest.mark.timeout(300)
def test_mindspores_lenet_tutorial_trains_saves_loads_and_evaluates(mnist_data, tmp_path):
    jisu.set_seed(0)
    try:
        acc = lenet_tutorial.main(
            mnist_data, str(tmp_path / "ckpt"), mode=jisu.context.PYNATIVE_MODE, epoch_size=2
        )
    finally:
        jisu.context.set_context(mode=jisu.context.PYNATIVE_MODE)
    assert set(acc) == {"Accuracy"}
    assert acc["Accuracy"] > 0.8  # 2 epochs of 360 steps on 11,520 digits
    names = sorted(os.listdir(tmp_path / "ckpt"))
    assert names == [f"checkpoint_lenet-{e}_360.ckpt" for e in (1, 2)]


def test_a_lenet5_trained_and_saved_by_mindspore_gives_mindspores_logits():
    # tests/fixtures/ms_lenet: MindSpore 2.10 trained the tutorial's LeNet5 a few steps and
    # saved its TrainOneStepCell (the model-zoo idiom: parameters keep the network's names)
    here = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ms_lenet")
    net = lenet_tutorial.LeNet5()
    params = jisu.load_checkpoint(os.path.join(here, "lenet.ckpt"))
    param_not_load, ckpt_not_load = jisu.load_param_into_net(net, params)
    assert param_not_load == []
    assert set(ckpt_not_load) == {"global_step", "learning_rate", "momentum"} | {
        f"moments.{n}" for n, _ in net.parameters_and_names()
    }
    recorded = np.load(os.path.join(here, "logits.npz"))
    net.set_train(False)
    logits = net(jisu.Tensor(recorded["x"]))
    np.testing.assert_allclose(logits.detach().numpy(), recorded["logits"], rtol=1e-5, atol=1e-6)
