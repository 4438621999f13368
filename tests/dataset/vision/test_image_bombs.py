"""Hostile and damaged image files: decompression bombs are refused before decoding, a decode
that runs out of data is an error (never a gray fill), and no mutation escapes as a raw error."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tracemalloc

import cv2
import numpy as np
import pytest
import simplejpeg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PIL import Image

import jisu.dataset as ds
from jisu.dataset import vision
from jisu.dataset.vision import decode as decode_module

DEFAULT_LIMIT = 178_956_970  # where Pillow raises DecompressionBombError
OPS = [vision.Decode(), vision.RandomCropDecodeResize(8, scale=(0.5, 1.0))]
OP_IDS = ["Decode", "RandomCropDecodeResize"]


@pytest.fixture(autouse=True)
def _restore_pixel_limit():
    before = ds.config.get_max_image_pixels()
    yield
    ds.config.set_max_image_pixels(before)


def jpeg_bytes(h=16, w=16, seed=0, **pillow) -> bytes:
    image = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    if not pillow:
        return simplejpeg.encode_jpeg(image, quality=90)
    out = io.BytesIO()
    Image.fromarray(image).save(out, "JPEG", **pillow)
    return out.getvalue()


def declaring(jpeg: bytes, height: int, width: int) -> np.ndarray:
    """The JPEG with its baseline frame header (SOF0) patched to declare height x width."""
    data = bytearray(jpeg)
    sof = data.find(b"\xff\xc0")
    assert sof > 0
    data[sof + 5 : sof + 7] = height.to_bytes(2, "big")
    data[sof + 7 : sof + 9] = width.to_bytes(2, "big")
    return np.frombuffer(bytes(data), np.uint8)


def as_file(data: np.ndarray | bytes, path: str) -> decode_module.FileBytes:
    return decode_module.FileBytes.of(np.frombuffer(bytes(data), np.uint8), path)


def encoded(ext: str, h: int, w: int) -> np.ndarray:
    """An h x w image in a format OpenCV writes."""
    image = np.random.default_rng(h * 1000 + w).integers(0, 256, (h, w, 3), dtype=np.uint8)
    if ext in (".pfm", ".hdr"):
        image = image.astype(np.float32) / 255
    if ext in (".pgm", ".pbm"):
        image = image[..., 0]
    ok, buf = cv2.imencode(ext, image)
    assert ok
    return buf.ravel()


# ----------------------------------------------------------------- decompression bombs


@pytest.fixture
def decoders_must_not_run(monkeypatch):
    def ran(*args, **kwargs):
        raise AssertionError("a decoder ran on a decompression bomb")

    monkeypatch.setattr(simplejpeg, "decode_jpeg", ran)
    monkeypatch.setattr(cv2, "imdecode", ran)


@pytest.mark.parametrize("side", [20000, 60000])
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_bomb_is_refused_from_its_header_before_any_decoding(op, side, decoders_must_not_run):
    bomb = as_file(declaring(jpeg_bytes(), side, side), "/data/bomb.jpg")
    tracemalloc.start()
    try:
        with pytest.raises(decode_module.DecompressionBombError) as info:
            op(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # nothing near the 1.2 GB / 10.8 GB the image would take
    message = str(info.value)
    assert f"'/data/bomb.jpg': its header declares a {side}x{side} image" in message
    assert f"({side * side:,} pixels), more than the limit of {DEFAULT_LIMIT:,}" in message
    assert "set_max_image_pixels" in message
    assert isinstance(info.value, ValueError)  # a bad sample like any other


FORMATS = [".jpg", ".png", ".bmp", ".gif", ".webp", ".tif", ".ppm", ".pgm", ".pam", ".sr"]


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_pixel_limit_applies_to_every_format_and_can_be_raised_or_removed(op, ext):
    image = encoded(ext, 100, 120)
    ds.config.set_max_image_pixels(100 * 120 - 1)
    with pytest.raises(
        decode_module.DecompressionBombError, match=r"declares a 120x100 image \(12,000 pixels"
    ):
        op(image)
    for limit in (100 * 120, None):
        ds.config.set_max_image_pixels(limit)
        assert op(image).shape[2] == 3


def test_formats_whose_header_is_not_read_are_checked_after_decoding():
    hdr = encoded(".hdr", 100, 120)  # Radiance HDR: OpenCV's own limit bounds the decode
    assert decode_module.declared_size(hdr) is None
    ds.config.set_max_image_pixels(100 * 120 - 1)
    with pytest.raises(decode_module.DecompressionBombError, match=r"120x100"):
        vision.Decode()(hdr)
    ds.config.set_max_image_pixels(100 * 120)
    assert vision.Decode()(hdr).shape == (100, 120, 3)


def pillow_variant(kind: str, h: int, w: int) -> np.ndarray:
    """Encodings whose headers OpenCV does not write: WebP VP8X, BigTIFF, progressive and
    4:2:0 JPEGs, a big-endian TIFF."""
    image = Image.fromarray(
        np.random.default_rng(h + 7 * w).integers(0, 256, (h, w, 3), dtype=np.uint8)
    )
    options = {
        "webp-vp8x": ("WEBP", {"exif": b"Exif\x00\x00MM\x00*\x00\x00\x00\x08\x00\x00"}),
        "webp-lossy": ("WEBP", {"quality": 80}),
        "webp-lossless": ("WEBP", {"lossless": True}),
        "bigtiff": ("TIFF", {"big_tiff": True}),
        "tiff-be": ("TIFF", {"tiffinfo": {}}),
        "jpeg-progressive": ("JPEG", {"progressive": True}),
        "jpeg-420": ("JPEG", {"subsampling": 2}),
    }
    fmt, kwargs = options[kind]
    out = io.BytesIO()
    image.save(out, fmt, **kwargs)
    return np.frombuffer(out.getvalue(), np.uint8)


@settings(max_examples=60, deadline=None)
@given(
    h=st.integers(1, 300),
    w=st.integers(1, 300),
    ext=st.sampled_from([*FORMATS, ".pbm", ".pfm"]),
    variant=st.sampled_from(
        ["webp-vp8x", "webp-lossy", "webp-lossless", "bigtiff", "jpeg-progressive", "jpeg-420"]
    ),
)
def test_declared_size_equals_the_size_encoded(h, w, ext, variant):
    assert decode_module.declared_size(encoded(ext, h, w)) == (h, w)
    assert decode_module.declared_size(pillow_variant(variant, h, w)) == (h, w)


def test_jpeg_size_agrees_with_turbojpeg_and_os2_bitmaps_are_read():
    for kind in ("jpeg-progressive", "jpeg-420"):
        data = pillow_variant(kind, 37, 53)
        expected = simplejpeg.decode_jpeg_header(data)[:2]
        assert decode_module.declared_size(data) == expected
        # the Python walk (for headers TurboJPEG refuses) reads the same size, also past junk,
        # fill bytes and stuffed zeros between segments
        sof = data.tobytes().find(b"\xff\xc0")
        sof = sof if sof > 0 else data.tobytes().find(b"\xff\xc2")
        noisy = data[:sof].tobytes() + b"junk\xff\x00\xff\xff\xff" + data[sof:].tobytes()
        for walked in (data, np.frombuffer(noisy, np.uint8)):
            assert decode_module._jpeg_walk(memoryview(walked)) == expected
    # an OS/2 bitmap (12-byte core header, 16-bit sizes), 3x5 pixels of 24 bits
    rows = b"".join(bytes(range(15)) + b"\x00" for _ in range(3))  # rows padded to 4 bytes
    header = (12).to_bytes(4, "little") + (5).to_bytes(2, "little") + (3).to_bytes(2, "little")
    header += (1).to_bytes(2, "little") + (24).to_bytes(2, "little")
    bmp = b"BM" + (26 + len(rows)).to_bytes(4, "little") + bytes(4) + (26).to_bytes(4, "little")
    bmp = np.frombuffer(bmp + header + rows, np.uint8)
    assert decode_module.declared_size(bmp) == (3, 5)
    assert vision.Decode()(bmp).shape == (3, 5, 3)  # OpenCV agrees


# ----------------------------------------------------------------- data that runs out


@pytest.mark.parametrize("limit", [DEFAULT_LIMIT, None])
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_jpeg_declaring_more_than_its_data_holds_is_an_error_not_gray(op, limit):
    ds.config.set_max_image_pixels(limit)
    short = as_file(declaring(jpeg_bytes(), 4000, 4000), "/data/short.jpg")
    with pytest.raises(ValueError, match=r"'/data/short.jpg': its data ends before the image"):
        op(short)


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_jpeg_cut_at_half_names_the_file_and_says_it_is_truncated(op):
    jpeg = jpeg_bytes(64, 64)
    with pytest.raises(ValueError, match=r"'/data/cut.jpg': its data ends before the image"):
        op(as_file(jpeg[: len(jpeg) // 2], "/data/cut.jpg"))


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 3),
    kind=st.sampled_from(["baseline", "baseline-end-marker", "progressive", "420"]),
    cut=st.floats(0.0, 1.0),
)
# a cut inside the scan header, an end marker put back: libjpeg's first warning is "Invalid
# SOS parameters" (not one of lost data), and the marker lies inside the header
@example(seed=0, kind="baseline-end-marker", cut=0.33757817481115754)
def test_every_truncated_jpeg_is_an_error(seed, kind, cut):
    """A JPEG cut anywhere before its end is refused, also when an end-of-image marker is put
    back after the cut (libjpeg then fills the rest of the image with gray)."""
    options = {"progressive": {"progressive": True}, "420": {"subsampling": 2}}
    jpeg = jpeg_bytes(24, 40, seed, **options.get(kind, {"subsampling": 0}))
    at = 2 + int(cut * (len(jpeg) - 5))  # keeps SOI; removes at least one byte before EOI
    data = jpeg[:at] + (b"\xff\xd9" if kind == "baseline-end-marker" else b"")
    for op in OPS:
        with pytest.raises(ValueError, match=r"cannot decode"):
            op(np.frombuffer(data, np.uint8))


def test_harmless_jpeg_warnings_still_decode_to_the_full_image():
    jpeg = jpeg_bytes(32, 48)
    expected = simplejpeg.decode_jpeg(jpeg)
    sof = jpeg.find(b"\xff\xc0")
    junk = jpeg[:sof] + b"\x00\x01\x02" + jpeg[sof:]  # "3 extraneous bytes before marker 0xc0"
    with pytest.raises(ValueError, match="extraneous bytes"):
        simplejpeg.decode_jpeg(junk, strict=True)
    np.testing.assert_array_equal(vision.Decode()(np.frombuffer(junk, np.uint8)), expected)
    # the same warning in a file that was also cut short: refused, not partly gray
    with pytest.raises(ValueError, match="its data ends before the image"):
        vision.Decode()(np.frombuffer(junk[: len(junk) * 2 // 3], np.uint8))


# ----------------------------------------------------------------- warnings and corruption


def photo_jpeg(**pillow) -> bytes:
    """A smooth 97x130 photo-like image saved by Pillow (quality 90): decoders agree on it
    within 2 levels."""
    y, x = np.mgrid[0:97, 0:130].astype(np.float32)
    rgb = np.stack([x / 130 * 255, y / 97 * 255, (x + y) / 227 * 255], axis=-1)
    rgb += 20 * np.sin(x / 3)[..., None] * np.cos(y / 5)[..., None]
    out = io.BytesIO()
    Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8)).save(out, "JPEG", quality=90, **pillow)
    return out.getvalue()


def pillow_pixels(jpeg: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(jpeg)) as im:
        return np.asarray(im.convert("RGB"), np.int16)


def count_decoder_calls(monkeypatch) -> list[str]:
    """The calls to TurboJPEG's header reader ("header") and decoder ("decode"), in order."""
    calls: list[str] = []
    header, decode = simplejpeg.decode_jpeg_header, simplejpeg.decode_jpeg

    def spy_header(*args, **kwargs):
        calls.append("header")
        return header(*args, **kwargs)

    def spy_decode(*args, **kwargs):
        calls.append("decode")
        return decode(*args, **kwargs)

    monkeypatch.setattr(simplejpeg, "decode_jpeg_header", spy_header)
    monkeypatch.setattr(simplejpeg, "decode_jpeg", spy_decode)
    return calls


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_a_good_jpeg_header_is_read_by_turbojpeg_and_the_image_decoded_once(op, monkeypatch):
    calls = count_decoder_calls(monkeypatch)
    assert op(np.frombuffer(photo_jpeg(), np.uint8)).shape[2] == 3
    assert calls == ["header", "decode"]


@pytest.mark.parametrize(
    "field, value", [(1, 62), (0, 1), (2, 0x01), (2, 0x10)], ids=["Se=62", "Ss=1", "Al=1", "Ah=1"]
)
def test_jpeg_with_unusual_sequential_scan_parameters_decodes_like_pillow(
    field, value, monkeypatch
):
    """libjpeg warns "Invalid SOS parameters for sequential JPEG" and ignores them (a baseline
    scan codes all 64 coefficients at full precision), so the pixels are intact: Pillow
    decodes the file, and jisu must too, to the same pixels."""
    jpeg = bytearray(photo_jpeg())
    sos = jpeg.find(b"\xff\xda")
    jpeg[sos + 5 + 2 * jpeg[sos + 4] + field] = value  # Ss, Se, Ah<<4|Al after the components
    jpeg = bytes(jpeg)
    with pytest.raises(ValueError, match="Invalid SOS parameters for sequential JPEG"):
        simplejpeg.decode_jpeg(jpeg, strict=True)
    expected = pillow_pixels(jpeg)
    calls = count_decoder_calls(monkeypatch)
    got = vision.Decode()(np.frombuffer(jpeg, np.uint8))
    assert got.shape == expected.shape
    assert np.abs(got.astype(np.int16) - expected).max() <= 2
    assert calls == ["header", "decode", "decode"]  # strict, then again past the warning
    assert vision.RandomCropDecodeResize(8)(np.frombuffer(jpeg, np.uint8)).shape == (8, 8, 3)


def corrupted(kind: str) -> bytes:
    jpeg = photo_jpeg()
    if kind == "bad-huffman-code":  # all-ones bits (stuffed 0xFF bytes): no valid Huffman code
        mid = (jpeg.find(b"\xff\xda") + len(jpeg)) // 2
        return jpeg[:mid] + b"\xff\x00" * 20 + jpeg[mid + 40 :]
    if kind == "wrong-restart-marker":
        jpeg = photo_jpeg(restart_marker_blocks=4)
        rst3 = jpeg.find(b"\xff\xd3")
        return jpeg[: rst3 + 1] + b"\xd5" + jpeg[rst3 + 2 :]
    # a progressive JPEG without its first scan (DC): later scans refine what never came
    jpeg = photo_jpeg(progressive=True)
    first = jpeg.find(b"\xff\xda")
    after = re.compile(rb"\xff[^\x00\xd0-\xd7]").search(jpeg, first + 2).start()
    return jpeg[:first] + jpeg[after:]


@pytest.mark.parametrize(
    "kind, warning",
    [
        ("bad-huffman-code", "bad Huffman code"),
        ("wrong-restart-marker", "found marker 0xd5 instead of RST3"),
        ("progressive-without-dc-scan", "Inconsistent progression sequence"),
    ],
)
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_jpeg_warnings_that_mean_lost_or_wrong_pixels_are_errors(op, kind, warning):
    data = corrupted(kind)
    with pytest.raises(ValueError, match=warning):  # libjpeg-turbo's warning, made an error
        simplejpeg.decode_jpeg(data, strict=True)
    with pytest.raises(ValueError, match=f"its image data is corrupt; libjpeg-turbo: .*{warning}"):
        op(np.frombuffer(data, np.uint8))


# ----------------------------------------------------------------- hostile headers


class TooManySteps(Exception):
    """The decoder ran more Python lines than :func:`python_steps_in_decode` allows."""


@contextlib.contextmanager
def python_steps_in_decode(limit: int):
    """Count the Python lines run in jisu's decode module, and stop the run past ``limit``:
    a deterministic proxy for the time a header walk takes (it does not depend on the machine,
    and a walk byte by byte through megabytes fails fast instead of taking minutes)."""
    steps = [0]

    def line(frame, event, arg):
        if event == "line":
            steps[0] += 1
            if steps[0] > limit:
                raise TooManySteps(f"more than {limit} Python lines run in decode.py")
        return line

    def call(frame, event, arg):
        return line if frame.f_code.co_filename == decode_module.__file__ else None

    before = sys.gettrace()
    sys.settrace(call)
    try:
        yield steps
    finally:
        sys.settrace(before)


HOSTILE_HEADERS = {  # TurboJPEG refuses them, so the Python walk runs; the old walk took seconds
    "10MB-fill-bytes": (b"\xff\xd8" + b"\xff" * 10_000_000, "it has no JPEG frame header"),
    "5M-stuffed-zeros": (b"\xff\xd8" + b"\xff\x00" * 5_000_000, "it has no JPEG frame header"),
    "100k-tiny-segments": (
        b"\xff\xd8" + b"\xff\xfe\x00\x02" * 100_000,
        "it has more than 1024 JPEG marker segments before its frame header",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_HEADERS))
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_hostile_jpeg_headers_are_refused_in_a_bounded_number_of_python_steps(op, name):
    data, message = HOSTILE_HEADERS[name]
    expected = pytest.raises(ValueError, match=f"cannot decode {len(data)} bytes: {message}")
    with python_steps_in_decode(limit=30_000), expected:
        op(np.frombuffer(data, np.uint8))


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_a_jpeg_with_100k_segments_before_its_frame_is_sized_in_c_and_decoded(op):
    jpeg = photo_jpeg()
    many = jpeg[:2] + b"\xff\xfe\x00\x02" * 100_000 + jpeg[2:]  # empty comments, then the image
    with python_steps_in_decode(limit=30_000):
        got = op(np.frombuffer(many, np.uint8))
    if op is OPS[0]:
        assert np.abs(got.astype(np.int16) - pillow_pixels(many)).max() <= 2


def test_a_jpeg_turbojpeg_refuses_is_sized_by_the_walk_and_decoded_like_pillow():
    """Sampling factors TurboJPEG has no name for (luma 1x1, Cb 2x2): its header reader
    refuses the file; the walk reads the size and OpenCV decodes it as Pillow does."""
    jpeg = bytearray(photo_jpeg(subsampling=0))
    sof = jpeg.find(b"\xff\xc0")
    jpeg[sof + 14] = 0x22  # component 2's sampling factors (the scan data no longer fits:
    jpeg = bytes(jpeg)  # libjpeg warns about extraneous bytes, a harmless warning)
    with pytest.raises(ValueError, match="Could not determine subsampling level"):
        simplejpeg.decode_jpeg_header(jpeg)
    expected = pillow_pixels(jpeg)
    assert decode_module.declared_size(np.frombuffer(jpeg, np.uint8)) == expected.shape[:2]
    got = vision.Decode()(np.frombuffer(jpeg, np.uint8))
    assert np.abs(got.astype(np.int16) - expected).max() <= 2
    assert vision.RandomCropDecodeResize(8)(np.frombuffer(jpeg, np.uint8)).shape == (8, 8, 3)


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_an_empty_file_is_a_clear_error(op):
    name = OP_IDS[OPS.index(op)]
    with pytest.raises(ValueError, match=f"^{name}: cannot decode '/data/empty.jpg': it is empty"):
        op(as_file(b"", "/data/empty.jpg"))


# ----------------------------------------------------------------- fuzzing


SEEDS = {
    ".jpg": encoded(".jpg", 16, 16).tobytes(),
    ".png": encoded(".png", 16, 16).tobytes(),
    ".bmp": encoded(".bmp", 8, 8).tobytes(),
    ".gif": encoded(".gif", 16, 16).tobytes(),
    ".webp": encoded(".webp", 16, 16).tobytes(),
    ".tif": encoded(".tif", 16, 16).tobytes(),
    ".ppm": encoded(".ppm", 8, 8).tobytes(),
    ".pam": encoded(".pam", 8, 8).tobytes(),
    ".sr": encoded(".sr", 8, 8).tobytes(),
    "progressive": pillow_variant("jpeg-progressive", 16, 16).tobytes(),
}
FUZZ_LIMIT = 64 * 64


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fmt=st.sampled_from(sorted(SEEDS)),
    edits=st.lists(st.tuples(st.integers(0, 63), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.one_of(st.none(), st.integers(0, 200)),
)
def test_mutated_headers_give_an_image_within_the_limit_or_one_clear_error(fmt, edits, cut):
    """Byte changes in the header region and truncation: the result is an RGB image no larger
    than the pixel limit, or a ValueError naming the op; never another exception type."""
    data = bytearray(SEEDS[fmt])
    for pos, value in edits:
        if pos < len(data):
            data[pos] = value
    if cut is not None:
        del data[len(data) - cut :]
    before = ds.config.get_max_image_pixels()
    ds.config.set_max_image_pixels(FUZZ_LIMIT)
    try:
        for op, name in zip(OPS, OP_IDS):
            try:
                image = op(np.frombuffer(bytes(data), np.uint8))
            except ValueError as exc:
                assert str(exc).startswith(f"{name}: "), exc
            else:
                assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
                if name == "Decode":
                    assert image.shape[0] * image.shape[1] <= FUZZ_LIMIT
    finally:
        ds.config.set_max_image_pixels(before)


# ----------------------------------------------------------------- inside a pipeline


def test_bomb_in_a_pipeline_names_op_sample_and_file_and_is_a_runtime_error(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "0.jpg").write_bytes(jpeg_bytes())
    bomb = tmp_path / "c" / "1.jpg"
    bomb.write_bytes(declaring(jpeg_bytes(), 20000, 20000).tobytes())
    data = ds.ImageFolderDataset(str(tmp_path), shuffle=False).map(vision.Decode(), "image")
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert next(it)[0].shape == (16, 16, 3)
    with pytest.raises(RuntimeError) as info:
        next(it)
    assert isinstance(info.value, decode_module.DecompressionBombError)
    assert "sample 1" in str(info.value) and f"'{bomb}'" in str(info.value)
    assert "20000x20000" in str(info.value)


@pytest.mark.parametrize(
    "header",
    [
        b"P6" + b"#\n" * 2000,
        b"P6 #" + b" " * 3000,
        b"P7\nWIDTH " + b" " * 4000,
        b"P5 " + b"9" * 5000,
    ],
    ids=["comment-lines", "spaces-in-comment", "pam-spaces", "5000-digits"],
)
def test_hostile_netpbm_headers_give_one_clear_error(header):
    """Headers that would make a backtracking parser take exponential time, or Python's int()
    refuse, get the same clear error (pytest-timeout fails a parser that hangs)."""
    with pytest.raises(
        ValueError, match=r"^Decode: (cannot decode|refusing to decode) \d+ bytes: its"
    ):
        vision.Decode()(np.frombuffer(header, np.uint8))


@pytest.mark.timeout(120)
def test_pixel_limit_set_at_run_time_holds_in_worker_processes_too():
    """Worker processes fork from a server started earlier: the limit the user set since must
    reach them (it did not: their copy of the config kept the default)."""
    image = cv2.imencode(".jpg", np.zeros((50, 60, 3), np.uint8))[1].reshape(-1)

    def run() -> list:
        data = ds.GeneratorDataset(lambda: iter([(image,)] * 4), ["image"]).map(
            vision.Decode(), "image", python_multiprocessing=True, num_parallel_workers=2
        )
        return [row[0].shape for row in data.create_tuple_iterator(num_epochs=1)]

    ds.config.set_max_image_pixels(50 * 60 - 1)
    with pytest.raises(RuntimeError, match=r"more pixels|set_max_image_pixels"):
        run()
    ds.config.set_max_image_pixels(50 * 60)
    assert run() == [(50, 60, 3)] * 4
