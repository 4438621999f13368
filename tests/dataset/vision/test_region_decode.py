"""Region JPEG decoding (jisu[nvimgcodec]): bit-exact against a full decode + crop, used by
RandomCropDecodeResize and by a map's fused Decode + crop op, with the full decode as the
fallback for everything it does not take."""

from __future__ import annotations

import io

import numpy as np
import pytest
import simplejpeg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jisu.dataset as ds
from jisu.dataset import vision
from jisu.dataset.vision import region_decode
from jisu.dataset.vision.region_decode import DecodeCrop, decode_region, fuse_decode_crop

needs_region = pytest.mark.skipif(
    not region_decode.available(), reason="needs jisu[nvimgcodec] (.ci/run installs it)"
)


def _photo(height: int = 101, width: int = 147, seed: int = 0) -> np.ndarray:
    import cv2

    noise = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return cv2.GaussianBlur(noise, (5, 5), 0)  # photo-like: smooth, but every pixel differs


def _pil_jpeg(image: np.ndarray, **options) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(image).save(out, "JPEG", quality=90, **options)
    return out.getvalue()


def _jpegs() -> dict[str, bytes]:
    import cv2

    photo = _photo()
    return {
        "4:4:4": _pil_jpeg(photo, subsampling=0),
        "4:2:2": _pil_jpeg(photo, subsampling=1),
        "4:2:0": _pil_jpeg(photo, subsampling=2),
        "grayscale": _pil_jpeg(photo[..., 0]),
        "progressive": _pil_jpeg(photo, subsampling=2, progressive=True),
        "restart markers": cv2.imencode(
            ".jpg", photo, [cv2.IMWRITE_JPEG_RST_INTERVAL, 3, cv2.IMWRITE_JPEG_QUALITY, 90]
        )[1].tobytes(),
    }


def _crops(height: int, width: int, seed: int) -> list[tuple[int, int, int, int]]:
    """Every corner and edge, 1-pixel crops, whole rows and columns, and random boxes."""
    crops = [
        (0, 0, height, width),
        (0, 0, 1, 1),
        (height - 1, width - 1, 1, 1),
        (0, width - 1, 1, 1),
        (height - 1, 0, 1, 1),
        (0, 0, height, 1),
        (0, width - 1, height, 1),
        (0, 0, 1, width),
        (height - 1, 0, 1, width),
        (7, 9, 1, 1),
    ]
    rng = np.random.default_rng(seed)
    for left in range(0, width, 5):  # narrow full-height strips at every chroma phase
        crops.append((0, left, height, 1))
    for _ in range(60):
        h, w = int(rng.integers(1, height + 1)), int(rng.integers(1, width + 1))
        crops.append(
            (int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w)
        )
    return crops


@needs_region
@pytest.mark.parametrize("kind", list(_jpegs()))
def test_a_region_equals_the_full_decode_cropped_bit_for_bit(kind):
    data = np.frombuffer(_jpegs()[kind], np.uint8)
    full = simplejpeg.decode_jpeg(data.tobytes(), colorspace="RGB")  # jisu's full decoder
    height, width = full.shape[:2]
    for top, left, h, w in _crops(height, width, seed=len(kind)):
        region = decode_region(data, top, left, h, w)
        assert region is not None, (kind, top, left, h, w)
        np.testing.assert_array_equal(region, full[top : top + h, left : left + w])


@needs_region
def test_what_region_decoding_does_not_take_comes_back_none():
    data = np.frombuffer(_jpegs()["4:2:0"], np.uint8)
    assert decode_region(data, 90, 0, 20, 10) is None  # past the bottom
    assert decode_region(data, 0, -1, 5, 5) is None
    assert decode_region(data, 0, 0, 0, 5) is None
    assert decode_region(data[: len(data) // 2], 0, 0, 4, 4) is None  # truncated
    assert (
        decode_region(np.frombuffer(b"\xff\xd8\xff\xe0 not a jpeg", np.uint8), 0, 0, 1, 1) is None
    )


def test_without_the_library_every_path_decodes_whole(monkeypatch):
    monkeypatch.setattr(region_decode, "_module", False)
    data = np.frombuffer(_jpegs()["4:2:0"], np.uint8)
    assert not region_decode.available() and decode_region(data, 0, 0, 4, 4) is None
    fused = DecodeCrop(vision.Decode(), vision.CenterCrop(20))
    full = vision.Decode()(data)
    np.testing.assert_array_equal(fused.apply(data), vision.CenterCrop(20)(full))


@needs_region
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_hostile_bytes_give_none_or_a_region_never_a_crash(data):
    clean = bytearray(_jpegs()[data.draw(st.sampled_from(["4:2:0", "progressive"]))])
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(clean) - 1))
        clean[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(2, len(clean)))
    buf = np.frombuffer(bytes(clean[:cut]), np.uint8)
    top, left = data.draw(st.integers(0, 100)), data.draw(st.integers(0, 146))
    h, w = data.draw(st.integers(1, 101 - top)), data.draw(st.integers(1, 147 - left))
    out = decode_region(buf, top, left, h, w)
    assert out is None or (out.shape == (h, w, 3) and out.dtype == np.uint8)
    # the fused op on the same bytes: an image, or the full decoder's ValueError naming Decode
    try:
        image = DecodeCrop(vision.Decode(), vision.Crop((top, left), (h, w))).apply(buf)
    except ValueError as exc:
        assert "Decode" in str(exc) or "Crop" in str(exc)
    else:
        assert image.shape == (h, w, 3)


# --------------------------------------------------------------------------- in the ops
def _folder_of_jpegs(tmp_path, count: int = 12) -> str:
    for i in range(count):
        (tmp_path / "c").mkdir(exist_ok=True)
        (tmp_path / "c" / f"{i:02d}.jpg").write_bytes(_pil_jpeg(_photo(80 + i, 120 - i, seed=i)))
    return str(tmp_path)


def _read(folder: str, ops: list, workers: int = 1) -> list[np.ndarray]:
    ds.config.set_seed(5)
    data = ds.ImageFolderDataset(folder, shuffle=False)
    data = data.map(ops, "image", num_parallel_workers=workers)
    return [row[0] for row in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]


@needs_region
@pytest.mark.parametrize(
    "crop",
    [
        lambda: vision.RandomResizedCrop(32, scale=(0.1, 1.0)),
        lambda: vision.Crop((3, 5), (40, 50)),
        lambda: vision.CenterCrop((60, 70)),
        lambda: vision.CenterCrop(200),  # larger than the images: padded, decoded whole
        lambda: vision.ResizedCrop(2, 4, 50, 60, 24),
    ],
)
def test_a_fused_decode_and_crop_gives_what_the_two_ops_give(tmp_path, monkeypatch, crop):
    folder = _folder_of_jpegs(tmp_path)
    calls = []
    real = region_decode.decode_region
    monkeypatch.setattr(region_decode, "decode_region", lambda *a: calls.append(a[1:]) or real(*a))
    fused = _read(folder, [vision.Decode(), crop()])
    # the regions were decoded, except where the crop is larger than the image
    assert len(calls) == (
        0 if isinstance(crop(), vision.CenterCrop) and crop().size[0] > 100 else 12
    )
    fused_workers = _read(folder, [vision.Decode(), crop()], workers=4)
    monkeypatch.setattr(region_decode, "_module", False)  # the same map, decoded whole
    whole = _read(folder, [vision.Decode(), crop()])
    assert len(fused) == len(whole) == 12
    for a, b, c in zip(fused, fused_workers, whole):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, c)


def test_the_fusion_keeps_the_crops_random_stream_and_leaves_other_ops():
    decode, crop, flip = vision.Decode(), vision.RandomResizedCrop(8), vision.RandomVerticalFlip()
    steps = fuse_decode_crop([(0, decode), (1, crop), (2, flip)])
    assert [k for k, _ in steps] == [1, 2]  # the crop's position: its random draws
    assert isinstance(steps[0][1], DecodeCrop) and steps[0][1].name == "Decode+RandomResizedCrop"
    assert steps[1][1] is flip
    # not fused: a PIL decode, a crop op that is not right after Decode, a non-crop op
    pytest.importorskip("PIL")
    assert len(fuse_decode_crop([(0, vision.Decode(to_pil=True)), (1, crop)])) == 2
    assert len(fuse_decode_crop([(0, decode), (1, flip), (2, crop)])) == 3
    assert len(fuse_decode_crop([(0, decode), (1, vision.Resize(8))])) == 2


@needs_region
def test_random_crop_decode_resize_is_unchanged_by_region_decoding(tmp_path, monkeypatch):
    # crops too small for a scaled decode take the region path; the output is the same bits
    folder = _folder_of_jpegs(tmp_path)
    op = lambda: vision.RandomCropDecodeResize(64, scale=(0.05, 0.5))  # noqa: E731
    with_region = _read(folder, [op()])
    monkeypatch.setattr(region_decode, "_module", False)
    without = _read(folder, [op()])
    for a, b in zip(with_region, without):
        np.testing.assert_array_equal(a, b)


def test_a_truncated_jpeg_is_refused_by_the_fused_op_naming_decode():
    data = np.frombuffer(_jpegs()["4:2:0"][:-400], np.uint8)
    with pytest.raises(ValueError, match=r"Decode: .*ends before the image does"):
        DecodeCrop(vision.Decode(), vision.Crop((0, 0), (4, 4))).apply(data)
    with pytest.raises(ValueError, match="exceeds the image"):  # the crop op's own error
        DecodeCrop(vision.Decode(), vision.Crop((90, 0), (20, 4))).apply(
            np.frombuffer(_jpegs()["4:2:0"], np.uint8)
        )


@needs_region
def test_decoders_made_on_many_threads_at_once_leave_stderr_working(capfd):
    import threading

    data = np.frombuffer(_jpegs()["4:2:0"], np.uint8)
    results = []

    def decode_on_a_new_thread():
        results.append(decode_region(data, 1, 2, 3, 4))

    threads = [threading.Thread(target=decode_on_a_new_thread) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 16 and all(r is not None and r.shape == (3, 4, 3) for r in results)
    import os

    os.write(2, b"still here\n")  # file descriptor 2 is stderr again, not /dev/null
    assert "still here" in capfd.readouterr().err


@needs_region
def test_what_region_decoding_does_not_notice_is_what_its_docstring_says():
    # a file cut short and given a new end marker: the full decode refuses it; the region
    # decode of rows inside the data it still has is exact, and it does not refuse the file
    # (documented: JISU_REGION_DECODE=0 where that matters)
    whole = _jpegs()["4:4:4"]
    crafted = np.frombuffer(whole[: len(whole) * 6 // 10] + b"\xff\xd9", np.uint8)
    with pytest.raises(ValueError, match="Decode"):
        vision.Decode()(crafted)
    full = simplejpeg.decode_jpeg(whole, colorspace="RGB")
    np.testing.assert_array_equal(decode_region(crafted, 0, 0, 8, 16), full[:8, :16])
    assert decode_region(crafted, 90, 0, 8, 16) is not None  # past the data: filled in


def test_a_fork_during_a_stderr_redirection_gives_the_child_its_stderr(monkeypatch):
    import os

    assert region_decode._saved_stderr is None
    with region_decode._quiet_stderr():
        pid = os.fork()
        if pid == 0:  # the child: stderr must be the real one again, and the lock free
            ok = region_decode._saved_stderr is None and region_decode._stderr_lock.acquire(
                blocking=False
            )
            os.write(2, b"")  # fd 2 is open
            os._exit(0 if ok and os.readlink("/proc/self/fd/2") != os.devnull else 1)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
