"""Decode only a region of a JPEG: the crop of a random-resized-crop, not the whole photo.

libjpeg-turbo can skip the IDCT, upsampling and colour conversion of the pixels outside a
region, and stop reading at the region's last row. jisu reaches it through NVIDIA's
nvImageCodec (``pip install "jisu[nvimgcodec]"``; Apache-2.0), whose CPU-only decoder is
libjpeg-turbo and whose public API takes a region (``CodeStream.get_sub_code_stream``). The
result, decoded with one more pixel on each side and cut, is bit-exact against a full decode +
crop (tested for 4:4:4, 4:2:2, 4:2:0, grayscale, progressive and restart-marker JPEGs, crops
touching every edge and 1-pixel crops); on the benchmark's
375x500 photos it decodes a RandomResizedCrop's crop 1.1-1.2x faster than the full image.

Without the library, or with ``JISU_REGION_DECODE=0`` in the environment, :func:`decode_region`
returns None and callers decode the whole image as before. It also returns None for what it
does not take (not 8-bit YCbCr/grayscale, data that does not end with the end-of-image
marker, a region outside the image, a decoder error), and the caller's full decode then gives
the result or the error.

What a full decode refuses and a region decode may not: libjpeg-turbo only *warns* about
damaged entropy-coded data, and the full decode turns its warnings into errors, which
nvImageCodec's API does not report. Like MindSpore's and DALI's crop decoders, a region decode
therefore does not notice corruption after the region (it stops reading there), nor a file
cut short and given a new end-of-image marker (a crafted file: the region past the data comes
out filled in); a file simply cut short, which does not end with that marker, is still
refused, and record files carry checksums. Set ``JISU_REGION_DECODE=0`` where refusing such
files matters more than the speed.

nvImageCodec prints its plugins' load failures (no nvJPEG without a GPU): stderr is closed
while a decoder is made, and ``PYNVIMGCODEC_VERBOSITY=0`` quiets its own log; libjpeg-turbo's
warnings about a damaged file still reach stderr.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.operation import TensorOperation

_lock = threading.Lock()
_stderr_lock = threading.Lock()  # one redirection at a time, or a restore could keep /dev/null
_module: Any = None  # nvidia.nvimgcodec once loaded; False when unavailable
_local = threading.local()  # one decoder per thread (and process)


_saved_stderr: int | None = None  # the real stderr while it points at /dev/null


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null while a decoder is made: the native library writes its
    plugins' load failures there directly. Only the first decoder of each thread pays it."""
    global _saved_stderr
    with _stderr_lock:
        try:
            saved = os.dup(2)
        except OSError:  # no stderr at all
            yield
            return
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            _saved_stderr = saved
            os.dup2(null, 2)
            yield
        finally:
            os.dup2(saved, 2)
            _saved_stderr = None
            os.close(saved)
            os.close(null)


def _after_fork_in_child() -> None:
    """A fork while another thread had stderr redirected: give the child its stderr back and
    a lock that nobody holds."""
    global _stderr_lock, _saved_stderr
    if _saved_stderr is not None:
        with contextlib.suppress(OSError):
            os.dup2(_saved_stderr, 2)
        _saved_stderr = None
    _stderr_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _load() -> Any:
    """nvImageCodec's module, or False when it is missing or turned off."""
    global _module
    if _module is None:
        with _lock:
            if _module is None:
                _module = _import()
    return _module


def _import() -> Any:
    if os.environ.get("JISU_REGION_DECODE", "1") == "0":
        return False
    os.environ.setdefault("PYNVIMGCODEC_VERBOSITY", "0")
    try:
        with _quiet_stderr():
            from nvidia import nvimgcodec

            _new_decoder(nvimgcodec)  # its plugins load (and complain) here
    except Exception:  # missing, or a build that does not load here
        return False
    return nvimgcodec


def _new_decoder(nv: Any) -> Any:
    return nv.Decoder(
        device_id=nv.NVIMGCODEC_DEVICE_CPU_ONLY,
        max_num_cpu_threads=1,  # jisu's workers are the parallelism
        backends=[nv.Backend(nv.BackendKind.CPU_ONLY)],
    )


def _decoder(nv: Any) -> tuple[Any, Any]:
    """This thread's decoder and decode parameters (new after a fork)."""
    pid = os.getpid()
    if getattr(_local, "pid", None) != pid:
        with _quiet_stderr():
            _local.decoder = _new_decoder(nv)
        _local.params = nv.DecodeParams(
            apply_exif_orientation=False,  # as jisu's other decoders: pixels as stored
            color_spec=nv.ColorSpec.SRGB,
            sample_format=nv.SampleFormat.I_RGB,
        )
        _local.pid = pid
    return _local.decoder, _local.params


def available() -> bool:
    """Whether region decoding is installed and on."""
    return bool(_load())


def decode_region(
    buf: np.ndarray, top: int, left: int, height: int, width: int
) -> np.ndarray | None:
    """Rows ``top:top+height`` and columns ``left:left+width`` of the JPEG in ``buf`` as HWC
    uint8 RGB, equal to decoding it whole and cropping; None when this path does not take it
    (see the module docstring)."""
    nv = _load()
    if not nv:
        return None
    if len(buf) < 4 or buf[-2] != 0xFF or buf[-1] != 0xD9:
        return None  # no end-of-image marker at the end: truncated, or trailing bytes
    try:
        stream = nv.CodeStream(buf)
        if (
            stream.codec_name != "jpeg"
            or stream.precision != 8
            or stream.num_channels not in (1, 3)
            or top < 0
            or left < 0
            or height < 1
            or width < 1
            or top + height > stream.height
            or left + width > stream.width
        ):
            return None
        # one more pixel on each side: chroma upsampling at the region's edge then sees the
        # neighbours a full decode sees (without it, 1-pixel-wide 4:2:0 crops at the left
        # edge came out up to 17 levels off)
        y0, x0 = max(0, top - 1), max(0, left - 1)
        y1, x1 = min(stream.height, top + height + 1), min(stream.width, left + width + 1)
        decoder, params = _decoder(nv)
        region = stream.get_sub_code_stream(region=nv.Region(y0, x0, y1, x1))
        image = decoder.decode(region, params=params)
    except Exception:  # any failure: the full decode decides
        return None
    if image is None:
        return None
    out = np.asarray(image)
    if out.shape != (y1 - y0, x1 - x0, 3) or out.dtype != np.uint8:
        return None
    return out[top - y0 : top - y0 + height, left - x0 : left - x0 + width]


class DecodeCrop(TensorOperation):
    """``Decode`` followed by a crop op (``RandomResizedCrop``, ``Crop``, ``CenterCrop``,
    ``ResizedCrop``), run as one op: the crop's region of a JPEG is decoded (the same random
    draws, bit-exact output); anything region decoding does not take is decoded whole and the
    crop op runs as it would have. A map fuses the pair itself (:func:`fuse_decode_crop`)."""

    def __init__(self, decode: Any, crop: Any) -> None:
        self.decode = decode
        self.crop = crop
        self.randomized = bool(getattr(crop, "randomized", False))
        self.name = f"Decode+{type(crop).__name__}"

    def apply(self, data: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        from .decode import _buffer, check_declared_size, is_jpeg

        buf = _buffer(data)
        if is_jpeg(buf) and available():
            size = check_declared_size("Decode", data, buf)
            if size is not None:
                state = rng.bit_generator.state if rng is not None else None
                box = self.crop.crop_region(size[0], size[1], rng)
                region = decode_region(buf, *box) if box is not None else None
                if region is not None:
                    return self.crop.finish_region(region)
                if rng is not None:  # the full path below draws the crop again
                    rng.bit_generator.state = state
        return self.crop.apply(self.decode.apply(data), rng=rng)


def _fusable(decode: Any, crop: Any) -> bool:
    return (
        type(decode).__name__ == "Decode"
        and type(decode).__module__ == "jisu.dataset.vision.decode"
        and not decode.to_pil
        and callable(getattr(crop, "crop_region", None))
        and callable(getattr(crop, "finish_region", None))
    )


def fuse_decode_crop(steps: Sequence[tuple[int, Any]]) -> list[tuple[int, Any]]:
    """``(position, op)`` steps with each ``Decode`` directly followed by a crop op replaced by
    one :class:`DecodeCrop` at the crop's position (its random stream, so the draws are the
    same as unfused)."""
    fused: list[tuple[int, Any]] = []
    for k, op in steps:
        if fused and _fusable(fused[-1][1], op):
            fused[-1] = (k, DecodeCrop(fused[-1][1], op))
        else:
            fused.append((k, op))
    return fused
