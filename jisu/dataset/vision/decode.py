"""Decode: encoded image bytes to an HWC uint8 RGB array, refusing bombs and damaged files.

Hostile or damaged files are refused before any pixel memory is allocated, with an error that
names the file:

* **Decompression bombs**: the size an image's header declares is checked against
  :func:`jisu.dataset.config.get_max_image_pixels` before decoding. The header is read here for
  JPEG, PNG, GIF, BMP, WebP, TIFF/BigTIFF, PBM/PGM/PPM/PAM/PFM and Sun raster. Other formats
  OpenCV decodes (HDR, AVIF, JPEG 2000, ...) are bounded by OpenCV's own limit
  (``OPENCV_IO_MAX_IMAGE_PIXELS``, 2**30 pixels unless set before ``cv2`` is imported) while
  decoding, and their result is checked against jisu's limit afterwards.
* **Damaged JPEGs**: a JPEG whose data ends before its image does (a truncated file, or a
  header declaring a larger image than its data holds) or whose entropy-coded data is corrupt
  is an error. libjpeg only warns about these and fills the missing pixels with gray; Pillow
  and tf.data refuse such files too. Other libjpeg warnings (extraneous bytes before a marker,
  an unknown JFIF version, SOS parameters unusual for a sequential JPEG) leave the image
  intact and are accepted, as Pillow and OpenCV do.

A JPEG's header is read by TurboJPEG (C); only a header it refuses is walked in Python, in
bounded steps, so hostile headers (megabytes of fill bytes, thousands of tiny segments) cost
milliseconds, not seconds of a thread holding the GIL.
"""

from __future__ import annotations

import re
from typing import Literal

import cv2
import numpy as np
import simplejpeg

from .. import config
from ..core.error_types import PipelineValueError
from ..core.operation import TensorOperation


class FileBytes(np.ndarray):
    """Encoded bytes that remember the file they came from, so decode errors can name it."""

    path: str | None = None

    @classmethod
    def of(cls, data: np.ndarray, path: str) -> FileBytes:
        out = data.view(cls)
        out.path = path
        return out

    def __array_finalize__(self, obj: object) -> None:
        self.path = getattr(obj, "path", None)

    def __reduce__(self):
        return (FileBytes.of, (np.asarray(self), self.path))


class DecompressionBombError(ValueError):
    """An image's header declares more pixels than ``config.set_max_image_pixels`` allows."""


def describe(data: np.ndarray) -> str:
    """How errors name encoded bytes: their file when known, else their size."""
    path = getattr(data, "path", None)
    return f"'{path}'" if path else f"{data.size} bytes"


def _buffer(data: np.ndarray) -> np.ndarray:
    """The encoded bytes as one contiguous 1-D uint8 array (what the decoders read)."""
    if data.dtype == np.uint8 and data.ndim == 1:
        return data if data.flags.c_contiguous else np.ascontiguousarray(data)
    if data.dtype.kind == "S" and data.ndim <= 1 and data.size == 1:
        # bytes, or a (1,) array of them: what np.array([f.read()]) or a source yielding
        # [bytes] gives; MindSpore 2.10 decodes both
        return np.frombuffer(data.reshape(()).item(), dtype=np.uint8)
    raise TypeError(
        "Decode: expected encoded image bytes (a 1-D uint8 array, bytes, or an array of one "
        "bytes value). "
        f"Received dtype {data.dtype} and shape {data.shape}"
    )


def is_jpeg(buf: np.ndarray) -> bool:
    """Whether the bytes start with a JPEG start-of-image marker."""
    return buf.size >= 3 and buf[0] == 0xFF and buf[1] == 0xD8


# ------------------------------------------------------------------ declared sizes


class _HeaderError(ValueError):
    """A header that a format's signature announces but that cannot be read."""


def _uint(
    data: bytes | memoryview, pos: int, size: int, order: Literal["big", "little"] = "big"
) -> int:
    """The unsigned integer of ``size`` bytes at ``pos``; a header cut short is an error."""
    if pos < 0 or pos + size > len(data):
        raise _HeaderError("its header is truncated")
    return int.from_bytes(data[pos : pos + size], order)


#: JPEG start-of-frame markers (all coding processes); C4, C8 and CC are other markers
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: a marker: 0xFF then a byte other than 0xFF (a fill byte) and 0x00 (a stuffed 0xFF, no
#: marker). Searched in C, so runs of fill bytes and junk cost no Python loop; one try per
#: byte, no backtracking: linear time
_JPEG_MARKER = re.compile(rb"\xff[^\x00\xff]")
#: a real JPEG has a few dozen marker segments before its frame header (APPn, DQT, DHT, COM,
#: an ICC profile or XMP split into 64 KB segments); the walk refuses a file with more, so a
#: hostile file of tiny segments costs at most this many Python steps
_JPEG_MAX_SEGMENTS = 1024


def _jpeg_size(buf: np.ndarray) -> tuple[int, int]:
    """(height, width) from a JPEG's frame header.

    Read by TurboJPEG's header reader (C, about a microsecond, ignoring warnings such as junk
    before the frame header). It refuses valid JPEGs with unusual chroma subsampling or
    precision that OpenCV still decodes; for those (and for files with no readable header)
    the marker segments are walked here instead (:func:`_jpeg_walk`).
    """
    try:
        height, width, _, _ = simplejpeg.decode_jpeg_header(buf, strict=False)
    except (ValueError, KeyError):  # KeyError: a header read with warnings but no frame
        return _jpeg_walk(memoryview(buf))
    return height, width


def _jpeg_walk(data: memoryview) -> tuple[int, int]:
    """(height, width) from the first frame header (SOF marker): see :func:`_jpeg_frame`."""
    pos = _jpeg_frame(data)
    return _uint(data, pos + 5, 2), _uint(data, pos + 7, 2)


def _jpeg_frame(data: memoryview) -> int:
    """Where the first frame header (SOF marker) starts, found by walking the marker
    segments after the start-of-image marker as libjpeg does: bytes between segments (fill
    bytes, stuffed zeros, junk) are skipped by one regex search in C, not byte by byte, and the
    walk stops after ``_JPEG_MAX_SEGMENTS`` segments, so hostile input (megabytes of fill
    bytes, 100k tiny segments) is refused quickly instead of holding the GIL for seconds. The
    bytes are read in place, never copied.
    """
    pos = 2
    for _ in range(_JPEG_MAX_SEGMENTS):
        found = _JPEG_MARKER.search(data, pos)
        if found is None:
            raise _HeaderError("it has no JPEG frame header (SOF marker)")
        pos = found.start()
        marker = data[pos + 1]
        if marker in _JPEG_SOF:
            return pos
        if marker in (0xD9, 0xDA):
            raise _HeaderError("its image data starts before a JPEG frame header (SOF marker)")
        if 0xD0 <= marker <= 0xD8 or marker == 0x01:  # markers without a length
            pos += 2
            continue
        length = _uint(data, pos + 2, 2)
        if length < 2:
            raise _HeaderError(f"its JPEG marker 0x{marker:02x} has length {length}")
        pos += 2 + length
    raise _HeaderError(
        f"it has more than {_JPEG_MAX_SEGMENTS} JPEG marker segments before its frame header "
        "(SOF marker); a real JPEG has a few dozen"
    )


def _bmp_size(data: bytes) -> tuple[int, int]:
    if _uint(data, 14, 4, "little") == 12:  # OS/2 BITMAPCOREHEADER: 16-bit sizes
        return _uint(data, 20, 2, "little"), _uint(data, 18, 2, "little")
    width, height = _uint(data, 18, 4, "little"), _uint(data, 22, 4, "little")
    # signed 32-bit fields; a negative height means rows stored top-down
    return abs(height - (height >> 31 << 32)), abs(width - (width >> 31 << 32))


def _webp_size(data: bytes) -> tuple[int, int]:
    chunk = data[12:16]
    if chunk == b"VP8 ":  # lossy: 14-bit sizes after the key frame's start code
        if data[23:26] != b"\x9d\x01\x2a":
            raise _HeaderError("its WebP VP8 frame header is corrupt")
        return _uint(data, 28, 2, "little") & 0x3FFF, _uint(data, 26, 2, "little") & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14-bit (size - 1) fields packed after a 0x2F byte
        bits = _uint(data, 21, 4, "little")
        return ((bits >> 14) & 0x3FFF) + 1, (bits & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit (canvas size - 1)
        return _uint(data, 27, 3, "little") + 1, _uint(data, 24, 3, "little") + 1
    raise _HeaderError(f"its WebP chunk {chunk!r} is not VP8, VP8L or VP8X")


def _tiff_size(data: bytes) -> tuple[int, int]:
    """(ImageLength, ImageWidth) of the first image file directory (TIFF or BigTIFF)."""
    order: Literal["big", "little"] = "little" if data[:2] == b"II" else "big"
    big = _uint(data, 2, 2, order) == 43
    offset = _uint(data, 8, 8, order) if big else _uint(data, 4, 4, order)
    count_size, entry_size, value_at = (8, 20, 12) if big else (2, 12, 8)
    found: dict[int, int] = {}
    for k in range(_uint(data, offset, count_size, order)):
        entry = offset + count_size + k * entry_size
        tag, kind = _uint(data, entry, 2, order), _uint(data, entry + 2, 2, order)
        if tag in (256, 257):  # ImageWidth, ImageLength: SHORT, LONG or LONG8
            size = {3: 2, 4: 4, 16: 8}.get(kind)
            if size is None:
                raise _HeaderError(f"its TIFF size tag {tag} has type {kind}")
            found[tag] = _uint(data, entry + value_at, size, order)
            if len(found) == 2:
                return found[257], found[256]
    raise _HeaderError("its first TIFF directory has no ImageWidth/ImageLength")


#: whitespace and comment lines, then a number (unambiguous, so matching takes linear time;
#: at most 12 digits, beyond Python's int-from-text limit)
_PNM_TOKEN = re.compile(rb"(?:\s|#[^\n]*\n)*(\d{1,12})")


def _pnm_size(data: bytes) -> tuple[int, int]:
    if data[:2] == b"P7":  # PAM: WIDTH and HEIGHT lines before ENDHDR
        end = data.find(b"ENDHDR")
        header = data if end < 0 else data[:end]
        width = re.search(rb"^WIDTH[ \t]+(\d{1,12})", header, re.M)
        height = re.search(rb"^HEIGHT[ \t]+(\d{1,12})", header, re.M)
        if not (width and height):
            raise _HeaderError("its PAM header has no WIDTH/HEIGHT")
        return int(height[1]), int(width[1])
    width = _PNM_TOKEN.match(data, 2)  # P1-P6, PF, Pf: width then height, comments allowed
    height = width and _PNM_TOKEN.match(data, width.end())
    if not (width and height):
        raise _HeaderError("its PNM header has no width and height")
    return int(height[1]), int(width[1])


#: (signature, (height, width) reader, whether it needs the whole file), for the formats
#: whose header is read here; TIFF directories may lie anywhere, other headers are at the start
_SIZE_READERS = [
    (b"\x89PNG\r\n\x1a\n", lambda d: (_uint(d, 20, 4), _uint(d, 16, 4)), False),
    (b"GIF8", lambda d: (_uint(d, 8, 2, "little"), _uint(d, 6, 2, "little")), False),
    (b"BM", _bmp_size, False),
    (b"\x59\xa6\x6a\x95", lambda d: (_uint(d, 8, 4), _uint(d, 4, 4)), False),  # Sun raster
    *((tiff, _tiff_size, True) for tiff in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")),
    *((b"P" + k, _pnm_size, False) for k in (b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"F", b"f")),
]
_HEADER_BYTES = 4096  # enough for any header at a file's start, comments included


def declared_size(buf: np.ndarray) -> tuple[int, int] | None:
    """(height, width) that an encoded image's header declares, read without decoding.

    Returns:
        None for a format whose header is not read here (OpenCV's limit bounds those).

    Raises:
        ValueError: the bytes start like a known format but its header cannot be read.
    """
    size = _read_size(buf)
    if size is not None and 0 in size:
        raise _HeaderError(f"its header declares an empty {size[1]}x{size[0]} image")
    return size


def _read_size(buf: np.ndarray) -> tuple[int, int] | None:
    if is_jpeg(buf):
        return _jpeg_size(buf)
    head = bytes(buf[:16])
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp_size(bytes(buf[:32]))
    for signature, reader, whole in _SIZE_READERS:
        if head.startswith(signature):
            return reader(buf.tobytes() if whole else bytes(buf[:_HEADER_BYTES]))
    return None


def check_pixels(op: str, data: np.ndarray, height: int, width: int) -> None:
    """Refuse an image of more pixels than ``config.get_max_image_pixels()`` (unless None)."""
    limit = config.get_max_image_pixels()
    if limit is not None and height * width > limit:
        raise DecompressionBombError(
            f"{op}: refusing to decode {describe(data)}: its header declares a {width}x{height} "
            f"image ({height * width:,} pixels), more than the limit of {limit:,} pixels (a "
            "small file declaring a huge image is a decompression bomb). If the image is "
            "genuine, raise the limit with jisu.dataset.config.set_max_image_pixels(n), or "
            "remove it with set_max_image_pixels(None)"
        )


def check_declared_size(op: str, data: np.ndarray, buf: np.ndarray) -> tuple[int, int] | None:
    """:func:`declared_size` checked against the pixel limit; errors name ``op`` and file."""
    try:
        size = declared_size(buf)
    except _HeaderError as exc:
        raise PipelineValueError(f"{op}: cannot decode {describe(data)}: {exc}") from None
    if size is not None:
        check_pixels(op, data, *size)
    return size


# ------------------------------------------------------------------ decoders

#: libjpeg-turbo's warnings (jerror.h) that mean pixels are missing or wrong, which libjpeg
#: fills with gray or decodes to garbage: the data ran out (JWRN_JPEG_EOF, JWRN_HIT_MARKER),
#: the entropy-coded data is corrupt (JWRN_HUFF_BAD_CODE, JWRN_ARITH_BAD_CODE,
#: JWRN_MUST_RESYNC), or a progressive scan refines coefficients it never got
#: (JWRN_BOGUS_PROGRESSION). Its other warnings leave the pixels intact: junk bytes before a
#: marker, an unknown JFIF revision or Adobe transform, a bad ICC marker, SOS parameters
#: unusual for a sequential JPEG; Pillow and OpenCV decode such files.
_JPEG_OUT_OF_DATA = ("Premature end of JPEG file", "premature end of data segment")
_JPEG_DATA_LOST = (
    *_JPEG_OUT_OF_DATA,
    "bad Huffman code",
    "bad arithmetic code",
    "instead of RST",
    "Inconsistent progression sequence",
)
#: TurboJPEG's errors for JPEGs it does not decode at all (unusual chroma subsampling, 12-bit)
_JPEG_UNSUPPORTED = ("Could not determine subsampling level", "Unsupported JPEG data precision")


def _ends_after_last_scan(buf: np.ndarray) -> bool:
    """Whether an end-of-image marker follows the last scan (a truncated file has none).

    Entropy-coded data never holds 0xFF 0xD9 (a 0xFF there is followed by 0x00 or a restart
    marker), so the bytes are only found where the image really ends.
    """
    data = buf.tobytes()
    scan = data.rfind(b"\xff\xda")
    if scan < 0:
        return data.find(b"\xff\xd9") >= 0
    # the scan's data starts after its header (a length-prefixed segment): a marker inside
    # the header is a cut header with an end marker put back, not the image's end
    header_end = scan + 2 + int.from_bytes(data[scan + 2 : scan + 4], "big")
    return data.find(b"\xff\xd9", header_end) >= 0


def _without_end_marker(buf: np.ndarray, scale: dict) -> np.ndarray | None:
    """The image of a sequential JPEG whose end-of-image marker is missing but whose image
    data is complete (its last byte or two cut off), else None.

    The data is decoded again with the marker put back, stopping at any warning: it decodes
    only if no pixel was missing. MindSpore 2.10 (libjpeg) decodes such a file to exactly this
    image; a progressive JPEG without its marker it refuses, and so does this.
    """
    try:
        sequential = buf[_jpeg_frame(memoryview(buf)) + 1] in (0xC0, 0xC1)
    except _HeaderError:
        return None
    if not sequential:
        return None
    end = b"\xd9" if buf[-1] == 0xFF else b"\xff\xd9"  # a cut between 0xFF and 0xD9
    try:
        return simplejpeg.decode_jpeg(buf.tobytes() + end, colorspace="RGB", strict=True, **scale)
    except (ValueError, KeyError):
        return None


def decode_jpeg(
    op: str,
    data: np.ndarray,
    buf: np.ndarray,
    min_height: int = 0,
    min_width: int = 0,
    missing_end_ok: bool = True,
) -> np.ndarray:
    """A JPEG decoded to RGB, refusing truncated or corrupt data.

    With ``missing_end_ok`` (MindSpore's C++ decoder), a sequential JPEG whose image data is
    complete but whose end-of-image marker is missing decodes to the image the complete file
    gives (:func:`_without_end_marker`); without it (MindSpore's Pillow decoder,
    ``Decode(to_pil=True)``) it is refused as truncated.

    libjpeg-turbo decodes it (scaled down to at least ``min_height`` x ``min_width`` when they
    are given), stopping at the first warning (``strict``), so a good file is decoded once.
    A warning that means lost or wrong pixels (``_JPEG_DATA_LOST``) is an error; after any
    other warning the image is decoded again without stopping, provided that it ends with an
    end-of-image marker after its last scan (a check like Pillow's and OpenCV's, which refuse
    a file that runs out of bytes but not one whose data ends at an early end marker). That
    second decode cannot see a later warning, so corrupt data after a harmless warning goes
    unnoticed, as in Pillow and OpenCV.

    OpenCV decodes (at full size) what libjpeg-turbo does not: unusual chroma subsampling,
    12-bit data, and headers with a warning (TurboJPEG stops at those even when not strict).

    Raises:
        ValueError: the data ended early or is corrupt.
        DecompressionBombError: OpenCV's image is larger than the pixel limit.
    """
    scale = {"min_height": min_height, "min_width": min_width}
    try:
        return simplejpeg.decode_jpeg(buf, colorspace="RGB", strict=True, **scale)
    except (ValueError, KeyError) as exc:  # KeyError: TurboJPEG meets an unknown subsampling
        error = exc
    text = str(error)
    if isinstance(error, KeyError) or any(s in text for s in _JPEG_UNSUPPORTED):
        return decode_opencv(op, data, buf)
    ends = _ends_after_last_scan(buf)
    if not ends and missing_end_ok and any(s in text for s in _JPEG_OUT_OF_DATA):
        image = _without_end_marker(buf, scale)
        if image is not None:
            return image
    if ends and not any(s in text for s in _JPEG_DATA_LOST):
        try:
            return simplejpeg.decode_jpeg(buf, colorspace="RGB", strict=False, **scale)
        except (ValueError, KeyError):
            pass
        try:  # a warning in the header, or an error that OpenCV fails at too
            return decode_opencv(op, data, buf)
        except DecompressionBombError:
            raise
        except ValueError:
            why = "its image data is corrupt"
    elif not ends or any(s in text for s in _JPEG_OUT_OF_DATA):
        why = (
            "its data ends before the image does (a truncated file, or a header that "
            "declares a larger image than the data holds)"
        )
    else:
        why = "its image data is corrupt"
    raise PipelineValueError(
        f"{op}: cannot decode {describe(data)}: {why}; libjpeg-turbo: {text}"
    ) from error


def decode_opencv(op: str, data: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Any format OpenCV reads, to RGB; the result is checked against the pixel limit too,
    for formats whose header :func:`declared_size` does not read."""
    if buf.size == 0:  # an empty file (OpenCV's own error is a failed assertion)
        raise PipelineValueError(f"{op}: cannot decode {describe(data)}: it is empty (0 bytes)")
    try:
        image = cv2.imdecode(np.asarray(buf), cv2.IMREAD_COLOR)
    except cv2.error as exc:  # e.g. more pixels than OPENCV_IO_MAX_IMAGE_PIXELS
        raise PipelineValueError(f"{op}: cannot decode {describe(data)}: OpenCV: {exc}") from exc
    if image is None:
        raise PipelineValueError(  # MindSpore: a RuntimeError
            f"{op}: cannot decode {describe(data)} as an image "
            "(corrupt, truncated or unsupported format)"
        )
    check_pixels(op, data, image.shape[0], image.shape[1])
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def decode_image(op: str, data: np.ndarray, missing_end_ok: bool = True) -> np.ndarray:
    """Encoded bytes (``data``, a :class:`FileBytes` or plain array) to HWC uint8 RGB
    (``missing_end_ok``: see :func:`decode_jpeg`)."""
    buf = _buffer(data)
    check_declared_size(op, data, buf)
    if is_jpeg(buf):
        return decode_jpeg(op, data, buf, missing_end_ok=missing_end_ok)
    return decode_opencv(op, data, buf)


class Decode(TensorOperation):
    """Decode JPEG (libjpeg-turbo via simplejpeg), PNG, BMP, ... (OpenCV) to HWC uint8 RGB.

    Both decoders release the GIL. Grayscale images come out with 3 identical channels.
    An image whose header declares more pixels than ``config.set_max_image_pixels`` allows is
    refused before decoding; a JPEG whose data ends early or is corrupt is refused instead of
    coming out partly gray (see the module docstring).

    With ``to_pil=True`` the result is an RGB PIL image (decoded by the same decoders, with the
    same checks; needs Pillow, ``jisu[pil]``). In a pipeline it becomes an array again as it
    enters the row.

    ``rgb`` is MindSpore 1.x's ``c_transforms.Decode(rgb=True)``: ``rgb=False`` gives the
    channels in BGR order, as its documentation describes (MindSpore 2.x has no ``rgb``).

    Raises:
        DecompressionBombError: (a ValueError) the image is larger than the pixel limit.
        ValueError: the bytes are not a decodable image (truncated or corrupt).
    """

    runs_on_device = True  # device("GPU") decodes in the offload module

    def __init__(self, to_pil: bool = False, rgb: bool = True) -> None:
        if not isinstance(to_pil, bool):
            raise TypeError(f"Decode: to_pil must be a bool. Received: to_pil={to_pil!r}")
        if not isinstance(rgb, bool):
            raise TypeError(f"Decode: rgb must be a bool. Received: rgb={rgb!r}")
        if to_pil and not rgb:
            raise ValueError("Decode: a PIL image is RGB; rgb=False needs to_pil=False")
        self.to_pil = to_pil
        self.rgb = rgb
        if to_pil:
            from ..core.pil_images import pil_image_module

            pil_image_module()  # fail here, not in a worker, when Pillow is missing

    def apply(self, data: np.ndarray, rng=None):
        # MindSpore's C++ decoder takes a JPEG without its end marker; its Pillow one does not
        image = decode_image("Decode", data, missing_end_ok=not self.to_pil)
        if not self.rgb:
            return np.ascontiguousarray(image[..., ::-1])
        if self.to_pil:
            from ..core.pil_images import to_pil

            return to_pil("Decode", image)
        return image
