"""Decode on the device (``.device("GPU")`` + ``offload=True``): the pipeline ships packets of
JPEG bytes and random draws, ``offload_module()`` decodes, crops, resizes and flips. On this
machine the module runs on the CPU (nvImageCodec's CPU decoder or jisu's own); the expectation
is always the host pipeline with the same seed, whose ops draw from the same streams."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset import vision
from jisu.dataset.core.packets import MAGIC, Packet, is_packet_column
from jisu.dataset.device.decode_plan import DevicePlan
from jisu.dataset.vision import Inter

MEAN, STD = [123.7, 116.3, 103.5], [58.4, 57.1, 57.4]


def _photo(height: int, width: int, seed: int) -> np.ndarray:
    import cv2

    noise = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return cv2.GaussianBlur(noise, (7, 7), 0)


def _jpeg(image: np.ndarray, **options) -> np.ndarray:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(image).save(out, "JPEG", quality=90, **options)
    return np.frombuffer(out.getvalue(), dtype=np.uint8)


def _png(image: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.imencode(".png", image[:, :, ::-1])[1].reshape(-1)


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    """JPEGs of different sizes, subsamplings and a progressive one, and a PNG (decoded in the
    pipeline and shipped as pixels)."""
    out = []
    for i in range(11):
        h, w = 60 + 7 * i, 90 - 3 * i
        photo = _photo(h, w, i)
        if i == 3:
            out.append(_png(photo))
        else:
            out.append(_jpeg(photo, subsampling=i % 3, progressive=i == 5))
    return out


def _source(images: list[np.ndarray]) -> ds.Dataset:
    labels = np.arange(len(images), dtype=np.int64)
    return ds.GeneratorDataset(lambda: iter(zip(images, labels)), ["image", "label"], shuffle=False)


def _run(pipeline: ds.Dataset, module: torch.nn.Module | None = None) -> list[np.ndarray]:
    out = []
    for image, _label in pipeline.create_tuple_iterator(num_epochs=1):
        if module is not None:
            image = module({"image": image})["image"]
        out.append(image.numpy())
    return out


def _pipelines(images, head, host_head, tail=(), workers=2, batch=4):
    ds.config.set_seed(7)
    device = _source(images).map(
        [*head, *tail], "image", offload=True, num_parallel_workers=workers
    )
    device = device.batch(batch)
    host = _source(images).map([*host_head, *tail], "image", num_parallel_workers=workers)
    host = host.batch(batch)
    return device, host


def _close(a: np.ndarray, b: np.ndarray, levels: float) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    assert diff.max() <= levels, diff.max()


@pytest.mark.parametrize("workers", [1, 3])
def test_random_crop_decode_resize_and_flips_match_the_host_pipeline(images, workers):
    # 66: no crop of these <= 130-pixel images is twice as large, so the host op decodes at
    # full scale too (at 1/2 scale its pixels would differ by more than resizing rounding)
    head = [
        vision.RandomCropDecodeResize(66, scale=(0.2, 1.0)).device("GPU"),
        vision.RandomHorizontalFlip(),
        vision.RandomVerticalFlip(0.3),
    ]
    host_head = [
        vision.RandomCropDecodeResize(66, scale=(0.2, 1.0)),
        vision.RandomHorizontalFlip(),
        vision.RandomVerticalFlip(0.3),
    ]
    tail = [vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    device, host = _pipelines(images, head, host_head, tail, workers)
    module = device.offload_module()
    got, want = _run(device, module), _run(host)
    assert len(got) == len(want) == 3
    for a, b in zip(got, want):
        assert a.shape == (len(b), 3, 66, 66)
        # OpenCV's fixed-point bilinear weights vs torch's float ones: 1 level, over std
        _close(a, b, levels=1.01 / min(STD))


@pytest.mark.parametrize(
    "crop",
    [
        vision.RandomResizedCrop((24, 40), interpolation=Inter.NEAREST),
        vision.RandomResizedCrop(28, interpolation=Inter.BICUBIC),
        vision.CenterCrop(50),
        vision.Crop((3, 5), (40, 30)),
        vision.ResizedCrop(2, 4, 40, 50, (20, 30)),
    ],
    ids=lambda op: type(op).__name__,
)
def test_decode_then_crop_ops_match_the_host_pipeline(images, crop):
    kept = [im for k, im in enumerate(images) if k != 3]  # a 40x30 crop at (3, 5) fits all
    device, host = _pipelines(kept, [vision.Decode().device("GPU"), crop], [vision.Decode(), crop])
    got, want = _run(device, device.offload_module()), _run(host)
    bicubic = getattr(getattr(crop, "_params", None), "interpolation", None) is Inter.BICUBIC
    for a, b in zip(got, want):
        _close(a, b, levels=2 if bicubic else 1)  # nearest and plain crops: exact but for IDCT
    if not bicubic and isinstance(crop, (vision.CenterCrop, vision.Crop)):
        for a, b in zip(got, want):  # no resize: the same decoder bytes, bit-exact
            np.testing.assert_array_equal(a, b)


def test_the_batch_carries_bytes_not_pixels(images):
    ds.config.set_seed(1)
    data = _source(images).map(
        [vision.RandomCropDecodeResize(224).device("GPU"), vision.HWC2CHW()],
        "image",
        offload=True,
    )
    data = data.batch(3)
    batches = [b for b, _ in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    first = batches[0]  # three JPEGs
    assert first.dtype == np.uint8 and first.ndim == 2
    packets = [Packet(row) for row in first]
    assert [p.payload.size for p in packets] == [im.size for im in images[:3]]
    # padded to the longest: 8 magic bytes, 8 int64 of header, 4 of crop box, then the JPEG
    assert first.shape[1] == 8 + 8 * 8 + 4 * 8 + max(im.size for im in images[:3])
    assert first.nbytes < 3 * 224 * 224 * 3 / 4  # bytes, not pixels, cross to the device
    png = Packet(batches[1][0])  # images[3]: decoded and resized in the pipeline
    assert png.kind == 1 and (png.height, png.width, png.channels) == (224, 224, 3)
    module = data.offload_module()
    for batch in batches:
        image = module({"image": torch.from_numpy(batch)})["image"]
        assert tuple(image.shape) == (len(batch), 3, 224, 224) and image.dtype == torch.uint8


def test_same_output_for_any_worker_count(images):
    head = [vision.RandomCropDecodeResize(20).device("GPU"), vision.RandomHorizontalFlip()]
    ds.config.set_seed(3)
    runs = []
    for workers in (1, 4):
        data = _source(images).map(head, "image", offload=True, num_parallel_workers=workers)
        runs.append(_run(data.batch(5), data.batch(5).offload_module()))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


def test_device_rejects_what_cannot_run_there():
    with pytest.raises(ValueError, match=r"Resize\.device: only Decode"):
        vision.Resize(10).device("GPU")
    with pytest.raises(ValueError, match="'CPU' or 'GPU'"):
        vision.Decode().device("Ascend")
    with pytest.raises(TypeError, match="device_target must be a str"):
        vision.Decode().device(1)
    source = _source([_jpeg(_photo(20, 20, 0))])
    with pytest.raises(ValueError, match="must be followed by a crop op"):
        source.map([vision.Decode().device("GPU"), vision.Resize(10)], "image", offload=True)
    with pytest.raises(ValueError, match="Rotate follows"):
        source.map(
            [vision.RandomCropDecodeResize(8).device("GPU"), vision.Rotate(10)],
            "image",
            offload=True,
        )
    with pytest.raises(ValueError, match="interpolation NEAREST, BILINEAR or BICUBIC"):
        source.map(
            [vision.RandomCropDecodeResize(8, interpolation=Inter.AREA).device("GPU")],
            "image",
            offload=True,
        )
    with pytest.raises(ValueError, match="takes offload=True"):
        source.map([vision.RandomCropDecodeResize(8).device("GPU")], "image")
    assert vision.Decode().device("GPU").device("CPU").device_target == "CPU"


def test_a_corrupt_jpeg_names_its_sample_when_the_module_decodes(images):
    bad = images[0].copy()
    bad[len(bad) // 2 :] = 0  # entropy data gone, no end-of-image marker
    data = _source([images[1], bad]).map(
        [vision.Decode().device("GPU"), vision.CenterCrop(20)], "image", offload=True
    )
    data = data.batch(2)
    module = data.offload_module()
    ((batch, _),) = list(data.create_tuple_iterator(num_epochs=1))
    with pytest.raises(ValueError, match="sample 1 of epoch 0"):
        module({"image": batch})


def test_packets_refuse_rows_that_are_not_packets():
    assert not is_packet_column([np.zeros(100, np.uint8)])
    with pytest.raises(ValueError, match="not a jisu packet"):
        Packet(np.zeros(100, np.uint8))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=0, max_size=200), st.integers(0, 199), st.integers(0, 255))
def test_packet_parsing_never_trusts_a_length(tail, position, value):
    """Any bytes after the magic: a parsed packet's payload lies inside the row."""
    row = np.concatenate([MAGIC, np.frombuffer(tail, np.uint8)])
    if row.size > MAGIC.size + position:
        row[MAGIC.size + position] = value
    try:
        packet = Packet(row)
    except ValueError:
        return
    start = packet.payload.__array_interface__["data"][0] - row.__array_interface__["data"][0]
    assert start >= 0 and start + packet.payload.size <= row.size
    assert len(packet.params) <= 64


@pytest.mark.parametrize(
    ("params", "flips", "size", "error"),
    [
        ((-5, 0, 20, 20), 0, (40, 50), "starts outside"),  # a negative start wraps a slice
        ((30, 40, 20, 20), 0, (40, 50), "ends outside"),  # a partial crop, not 20x20
        ((0, 0, 0, 20), 0, (40, 50), "empty"),
        ((0, 0, 20), 0, (40, 50), "3 parameters"),
        ((0, 0, 20, 20), 1, (40, 50), "4 parameters"),  # the plan flips: a draw is missing
        ((0, 0, 20, 20, 7), 1, (40, 50), "flip draws"),  # a flip draw is 0 or 1
        ((0, 0, 20, 20), 0, (400, 500), "header declares"),  # the packet lies about the size
    ],
)
def test_the_module_refuses_a_packet_whose_box_or_draws_do_not_fit(params, flips, size, error):
    from jisu.dataset.core.packets import JPEG, pack
    from jisu.dataset.device.decoder import DeviceDecoder

    plan = DevicePlan(vision.Decode(), vision.CenterCrop(20), [vision.HorizontalFlip()] * flips)
    row = pack(JPEG, _jpeg(_photo(40, 50, 1)), 3, 1, (*size, 3), list(params))
    with pytest.raises(ValueError, match=f"sample 3 of epoch 1.*{error}"):
        DeviceDecoder(plan)(torch.from_numpy(row[None]), torch.device("cpu"))


def test_the_module_applies_the_pixel_limit_before_decoding():
    from jisu.dataset.core.packets import JPEG, pack
    from jisu.dataset.device.decoder import DeviceDecoder

    decoder = DeviceDecoder(DevicePlan(vision.Decode(), vision.CenterCrop(20), []))
    row = pack(JPEG, _jpeg(_photo(40, 50, 1)), 3, 1, (40, 50, 3), [0, 0, 20, 20])
    limit = ds.config.get_max_image_pixels()
    ds.config.set_max_image_pixels(40 * 50 - 1)
    try:
        with pytest.raises(ValueError, match=r"sample 3 of epoch 1.*more than the limit"):
            decoder(torch.from_numpy(row[None]), torch.device("cpu"))
    finally:
        ds.config.set_max_image_pixels(limit)


def test_eager_plan_makes_a_packet():
    image = _jpeg(_photo(40, 50, 2))
    plan = DevicePlan(vision.RandomCropDecodeResize(16), None, [])
    packet = Packet(plan(image))
    assert packet.kind == 0 and (packet.height, packet.width) == (40, 50)
    top, left, h, w = packet.params
    assert top >= 0 and top + h <= 40 and left >= 0 and left + w <= 50


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_nvjpeg_decodes_within_a_few_levels_of_the_cpu(images):
    """nvJPEG's IDCT and upsampling are not libjpeg-turbo's: a few levels, never more."""
    head = [vision.RandomCropDecodeResize(48).device("GPU"), vision.RandomHorizontalFlip()]
    ds.config.set_seed(5)
    data = _source(images).map(head, "image", offload=True).batch(4)
    cpu_module, gpu_module = data.offload_module(), data.offload_module().to("cuda")
    batches = [b for b, _ in data.create_tuple_iterator(num_epochs=1)]
    for batch in batches:
        want = cpu_module({"image": batch})["image"].numpy()
        got = gpu_module({"image": batch})["image"]
        assert got.device.type == "cuda"
        _close(got.cpu().numpy(), want, levels=8)
        on_device = gpu_module({"image": batch.cuda()})["image"]  # moved already: still works
        np.testing.assert_array_equal(on_device.cpu().numpy(), got.cpu().numpy())
    decoder = next(iter(gpu_module.decoders.values()))
    assert decoder._gpu and all(v is not None for v in decoder._gpu.values()), "not nvJPEG"


def test_a_jpeg_much_larger_than_its_pixels_ships_its_crop_instead():
    """2.6 MB of comment segments in a 40x50 JPEG: every row of its batch would be padded to
    that size; the pipeline decodes it and ships the 16x16 crop."""
    plain = _jpeg(_photo(40, 50, 4))
    comment = np.frombuffer(b"\xff\xfe\xff\xff" + bytes(65533), np.uint8)  # COM, 65,535 bytes
    bloated = np.concatenate([plain[:2], *[comment] * 40, plain[2:]])
    assert bloated.size > 2_600_000
    plan = DevicePlan(vision.RandomCropDecodeResize(16), None, [])
    small, big = Packet(plan(plain)), Packet(plan(bloated))
    assert small.kind == 0 and small.payload.size == plain.size
    assert big.kind == 1 and (big.height, big.width, big.channels) == (16, 16, 3)
    np.testing.assert_array_equal(vision.Decode()(bloated), vision.Decode()(plain))


@pytest.mark.timeout(120)
def test_worker_processes_make_the_same_packets(images):
    """The plan and its packets cross into worker processes (pickled ops, shared memory)."""
    head = [vision.RandomCropDecodeResize(24).device("GPU"), vision.RandomHorizontalFlip()]
    runs = []
    for processes in (False, True):
        ds.config.set_seed(9)
        data = _source(images).map(
            head, "image", offload=True, num_parallel_workers=2, python_multiprocessing=processes
        )
        runs.append(
            [b for b, _ in data.batch(4).create_tuple_iterator(num_epochs=1, output_numpy=True)]
        )
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
