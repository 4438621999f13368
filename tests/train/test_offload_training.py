"""Model.train/eval apply the ops a pipeline's maps left to the device (``offload=True``):
the normalize tail and a device decode. The network must see what the host pipeline makes."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.dataset import vision

MEAN, STD = [120.0, 110.0, 100.0], [60.0, 55.0, 50.0]


def _jpegs(count: int = 12) -> list[np.ndarray]:
    import cv2
    from PIL import Image

    out = []
    for i in range(count):
        noise = np.random.default_rng(i).integers(0, 256, (40 + i, 52 - i, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(cv2.GaussianBlur(noise, (5, 5), 0)).save(buf, "JPEG", quality=90)
        out.append(np.frombuffer(buf.getvalue(), dtype=np.uint8))
    return out


class Recorder(nn.Module):
    """Records every input it is given (detached), and classifies by channel means."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 2)
        self.seen: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x.detach().clone())
        return self.linear(x.mean(dim=(2, 3)))


def _data(images, device_decode: bool, offload: bool) -> ds.Dataset:
    labels = np.arange(len(images), dtype=np.int32) % 2
    data = ds.GeneratorDataset(lambda: iter(zip(images, labels)), ["image", "label"])
    # 28: no crop of these <= 52-pixel images is twice as large, so the host op decodes at full
    # scale too (at 1/2 scale its pixels would differ by more than resizing rounding)
    decode = vision.RandomCropDecodeResize(28, scale=(0.3, 1.0))
    ops = [
        decode.device("GPU") if device_decode else decode,
        vision.RandomHorizontalFlip(),
        vision.Normalize(MEAN, STD),
        vision.HWC2CHW(),
    ]
    return data.map(ops, "image", offload=offload, num_parallel_workers=2).batch(4)


@pytest.mark.parametrize("sink", [False, True])
@pytest.mark.parametrize("device_decode", [False, True])
def test_train_applies_the_offloaded_ops(sink, device_decode):
    images = _jpegs()
    ds.config.set_seed(11)
    host = [
        image.clone()
        for image, _ in _data(images, False, False).create_tuple_iterator(num_epochs=1)
    ]
    ds.config.set_seed(11)
    net = Recorder()
    model = jisu.Model(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.0))
    model.train(1, _data(images, device_decode, offload=True), dataset_sink_mode=sink)
    assert len(net.seen) == len(host) == 3
    for got, want in zip(net.seen, host):
        assert got.dtype == torch.float32 and got.shape == want.shape == (4, 3, 28, 28)
        # a device decode resizes with torch, the host with OpenCV: a level, over std
        tolerance = 1.01 / min(STD) if device_decode else 1e-4
        torch.testing.assert_close(got, want, atol=tolerance, rtol=0)


def test_eval_applies_the_offloaded_ops():
    images = _jpegs(8)
    ds.config.set_seed(2)
    net = Recorder()
    model = jisu.Model(
        net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), metrics={"loss"}
    )
    result = model.eval(_data(images, True, offload=True))
    assert np.isfinite(result["loss"])
    assert [tuple(x.shape) for x in net.seen] == [(4, 3, 28, 28)] * 2
    assert all(x.dtype == torch.float32 for x in net.seen)
