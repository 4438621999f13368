"""The device's side of a device decode (:mod:`.decode_plan`): packets in, pixels out.

:class:`DeviceDecoder` decodes a batch of packets on the device of the offload module that
holds it: with nvImageCodec's batched decoder (nvJPEG) on a CUDA device, where its CUDA build
is installed; with libjpeg-turbo on the CPU otherwise (nvImageCodec's CPU decoder for the
region, or jisu's full decode + crop). Each crop is then resized as OpenCV would (same sampling
grid) and the flips the pipeline drew are applied to the batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..core.packets import JPEG, PIXELS, Packet
from .decode_plan import DevicePlan

_INTERP = {"NEAREST": "nearest", "LINEAR": "bilinear", "BILINEAR": "bilinear"}


def _nearest_index(length: int, out: int, device: torch.device) -> torch.Tensor:
    index = np.floor(np.arange(out) * (1.0 / (out / length))).astype(np.int64)
    return torch.from_numpy(np.minimum(index, length - 1)).to(device)


def _resize(image: torch.Tensor, size: tuple[int, int], inter: str) -> torch.Tensor:
    """HWC uint8 resized as OpenCV's cv2.resize does (same sampling grid; within 1-2 levels)."""
    if tuple(image.shape[:2]) == tuple(size):
        return image
    mode = _INTERP.get(inter, "bicubic")
    if mode == "nearest":  # OpenCV's source index, floor(x / (out/in)) in double precision
        rows = _nearest_index(image.shape[0], size[0], image.device)
        cols = _nearest_index(image.shape[1], size[1], image.device)
        return image.index_select(0, rows).index_select(1, cols)
    x = image.permute(2, 0, 1)[None].to(torch.float32)
    y = torch.nn.functional.interpolate(x, size=size, mode=mode, align_corners=False)
    return y[0].permute(1, 2, 0).round_().clamp_(0, 255).to(torch.uint8)


class DeviceDecoder:
    """Decodes a batch of packets into an NHWC uint8 tensor on ``device`` (see the module
    docstring): nvImageCodec's batched GPU decoder on CUDA, CPU decoders elsewhere."""

    def __init__(self, plan: DevicePlan) -> None:
        self.plan = plan
        self._gpu: dict[int, Any] = {}

    def __call__(self, batch: torch.Tensor, device: torch.device) -> torch.Tensor:
        rows = batch.detach().cpu().numpy()
        if rows.dtype != np.uint8 or rows.ndim != 2:
            raise ValueError(
                "offload_module: the device-decoded column must be the pipeline's uint8 "
                f"packet batch (2-D). Received dtype {rows.dtype}, shape {tuple(rows.shape)}"
            )
        packets = [self._checked(Packet(row)) for row in rows]
        images = self._decode(packets, device)
        out = []
        for packet, image in zip(packets, images):
            if self.plan.resize is not None and packet.kind == JPEG:
                image = _resize(image, *self.plan.resize)
            out.append(image)
        shapes = {tuple(im.shape) for im in out}
        if len(shapes) > 1:
            raise ValueError(
                f"offload_module: {self.plan.name} gave images of shapes {sorted(shapes)} "
                "in one batch; end the device ops with a crop or resize to one size"
            )
        x = torch.stack(out)
        for j, flip in enumerate(self.plan.flips):
            flags = torch.tensor([bool(p.params[4 + j]) for p in packets], device=x.device)
            axis = 2 if "Horizontal" in type(flip).__name__ else 1
            x = torch.where(flags.view(-1, 1, 1, 1), x.flip(axis), x)
        return x

    def _checked(self, p: Packet) -> Packet:
        """``p`` once its draws fit this plan and its crop box lies inside an image whose JPEG
        header declares the packet's size, within the pixel limit: a decoder never sees a box
        outside the image (negative slice bounds, empty or partial crops) or a huge image."""
        from ..vision.decode import check_pixels, declared_size

        want = 4 + len(self.plan.flips)
        problem = None
        if len(p.params) != want:
            problem = f"{len(p.params)} parameters where {self.plan.name} draws {want}"
        elif any(f not in (0, 1) for f in p.params[4:]):
            problem = f"flip draws {p.params[4:]} are not all 0 or 1"
        elif p.kind == JPEG:
            top, left, h, w = p.params[:4]
            try:
                size = declared_size(p.payload)
            except ValueError:
                size = None
            if size != (p.height, p.width):
                problem = f"its JPEG header declares {size}, the packet ({p.height}, {p.width})"
            elif min(top, left) < 0 or min(h, w) < 1:
                problem = f"crop box {(top, left, h, w)} is empty or starts outside the image"
            elif top + h > p.height or left + w > p.width:
                problem = (
                    f"crop box {(top, left, h, w)} ends outside its {p.height}x{p.width} image"
                )
        if problem is not None:
            raise ValueError(f"offload_module: a malformed packet ({p.where()}): {problem}")
        if p.kind == JPEG:
            check_pixels(f"offload_module ({p.where()})", p.payload, p.height, p.width)
        return p

    def _decode(self, packets: list[Packet], device: torch.device) -> list[torch.Tensor]:
        out: list[torch.Tensor | None] = [None] * len(packets)
        jpegs = []
        for i, p in enumerate(packets):
            if p.kind == PIXELS:
                pixels = p.payload.reshape(p.height, p.width, p.channels)
                out[i] = torch.from_numpy(pixels.copy()).to(device)
            else:
                jpegs.append(i)
        if jpegs and device.type == "cuda" and self._gpu_decoder(device) is not None:
            decoded = self._decode_gpu([packets[i] for i in jpegs], device)
        else:
            decoded = [self._decode_cpu(packets[i]).to(device) for i in jpegs]
        for i, image in zip(jpegs, decoded):
            out[i] = image
        return out  # type: ignore[return-value]

    @staticmethod
    def _decode_cpu(p: Packet) -> torch.Tensor:
        from ..vision.decode import Decode
        from ..vision.region_decode import decode_region

        top, left, h, w = p.params[:4]
        image = decode_region(p.payload, top, left, h, w)
        if image is None:
            try:
                full = Decode().apply(p.payload)
            except Exception as exc:
                raise ValueError(f"offload_module: cannot decode {p.where()}: {exc}") from exc
            image = full[top : top + h, left : left + w]
        return torch.from_numpy(np.ascontiguousarray(image))

    def _gpu_decoder(self, device: torch.device) -> Any:
        index = device.index if device.index is not None else torch.cuda.current_device()
        if index not in self._gpu:
            from ..vision.region_decode import _quiet_stderr

            try:
                with _quiet_stderr():
                    from nvidia import nvimgcodec as nv

                    decoder = nv.Decoder(device_id=index, options=":fancy_upsampling=1")
                params = nv.DecodeParams(
                    apply_exif_orientation=False,
                    color_spec=nv.ColorSpec.SRGB,
                    sample_format=nv.SampleFormat.I_RGB,
                )
                self._gpu[index] = (nv, decoder, params)
            except Exception:  # no nvImageCodec, or no CUDA build of it: decode on the CPU
                self._gpu[index] = None
        return self._gpu[index]

    def _decode_gpu(self, packets: list[Packet], device: torch.device) -> list[torch.Tensor]:
        nv, decoder, params = self._gpu_decoder(device)
        streams = []
        for p in packets:
            top, left, h, w = p.params[:4]
            stream = nv.CodeStream(p.payload)
            streams.append(
                stream.get_sub_code_stream(region=nv.Region(top, left, top + h, left + w))
            )
        cuda_stream = torch.cuda.current_stream(device).cuda_stream
        images = decoder.decode(streams, params=params, cuda_stream=cuda_stream)
        out = []
        for p, image in zip(packets, images):
            if image is None:  # nvJPEG refused it: libjpeg-turbo decides (and names the error)
                out.append(self._decode_cpu(p).to(device))
                continue
            tensor = torch.from_dlpack(image.cuda())
            top, left, h, w = p.params[:4]
            if tuple(tensor.shape) != (h, w, 3):
                raise ValueError(
                    f"offload_module: the device decoder gave shape {tuple(tensor.shape)} for "
                    f"{p.where()}, expected {(h, w, 3)}"
                )
            out.append(tensor)
        return out
