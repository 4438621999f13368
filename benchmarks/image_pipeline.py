"""The ImageNet-style image pipeline: jisu against the single-core ceiling and a PyTorch setup.

Builds (or reuses, with ``--dir``) a class-per-subfolder folder of real-photo JPEGs (375x500,
quality 90) cut from the photos that ship with scikit-learn, then measures images/s, batch 64:

1. the single-core ceiling: JPEG decode + random crop + resize to 224, one thread, no pipeline
   (timed in each round of the 1-worker runs; (2) / (1) is the median of the rounds' ratios);
2. jisu: ImageFolderDataset -> RandomCropDecodeResize(224) -> RandomHorizontalFlip ->
   Normalize -> HWC2CHW -> batch(64), with 1 worker and with all cores;
3. the usual PyTorch setup: DataLoader over an ImageFolder-style Dataset doing PIL decode,
   RandomResizedCrop, flip, ToTensor, Normalize (Pillow + NumPy/torch, no torchvision), best of
   num_workers 0..cores;
4. jisu with the normalize/layout tail offloaded (uint8 batches out), all cores;
5. with ``jisu[nvimgcodec]`` installed, (2) again with region decoding turned off (the crop's
   region is decoded instead of the whole photo when no 1/2..1/8 scale fits the crop);
6. on a GPU machine (or with ``--device-decode``, on the CPU), the decode, crop and flip moved
   to the offload module (``RandomCropDecodeResize(224).device("GPU")``): the workers only
   read headers and draw crops, the module decodes each batch (nvJPEG on a GPU) and its time
   is included.

Needs scikit-learn and Pillow (``pip install scikit-learn pillow``); neither is a jisu
dependency. Every variant runs ``--repeats`` times (default 3); the median is reported.
Usage: python benchmarks/image_pipeline.py [--images 2000] [--dir PATH] [--repeats 3]
    [--device-decode]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

import cv2
import numpy as np
import simplejpeg
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

import jisu
import jisu.dataset as ds
from jisu.dataset import vision
from jisu.dataset.core.cpus import available_cpus
from jisu.dataset.record.convert import list_image_folder
from jisu.dataset.vision import region_decode
from jisu.dataset.vision.random_crop_resize import sample_crop

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
BATCH = 64


def make_folder(root: str, count: int) -> None:
    from sklearn.datasets import load_sample_images

    photos = load_sample_images().images
    rng = np.random.default_rng(0)
    for i in range(count):
        photo = photos[i % len(photos)]
        top, left = rng.integers(0, photo.shape[0] - 375 + 1), rng.integers(0, 640 - 500 + 1)
        image = photo[top : top + 375, left : left + 500]
        if i % 4 >= 2:
            image = image[:, ::-1]
        folder = os.path.join(root, f"class{i % 10}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{i:06d}.jpg"), "wb") as f:
            f.write(simplejpeg.encode_jpeg(np.ascontiguousarray(image), quality=90))


def ceiling(paths: list[str]) -> float:
    """Decode + random crop + resize to 224, one thread, no pipeline."""
    rng = np.random.default_rng(0)
    begin = time.perf_counter()
    for path in paths:
        with open(path, "rb") as f:
            image = simplejpeg.decode_jpeg(f.read(), colorspace="RGB")
        top, left, h, w = sample_crop(
            image.shape[0], image.shape[1], (0.08, 1.0), (3 / 4, 4 / 3), 10, rng
        )
        cv2.resize(
            image[top : top + h, left : left + w], (224, 224), interpolation=cv2.INTER_LINEAR
        )
    return len(paths) / (time.perf_counter() - begin)


def jisu_pipeline(
    root: str, workers: int | None, offload: bool = False, device_decode: bool = False
) -> ds.Dataset:
    """(2): ImageFolderDataset -> RandomCropDecodeResize -> flip -> Normalize -> HWC2CHW
    (``workers`` None: left to jisu, i.e. ``config``'s default, which AutoTune may raise);
    ``device_decode``: the decode, crop and flip run in the offload module (6)."""
    data = ds.ImageFolderDataset(root, shuffle=True, num_parallel_workers=workers)
    decode = vision.RandomCropDecodeResize(224)
    ops = [
        decode.device("GPU") if device_decode else decode,
        vision.RandomHorizontalFlip(),
        vision.Normalize(MEAN, STD),
        vision.HWC2CHW(),
    ]
    data = data.map(ops, "image", num_parallel_workers=workers, offload=offload or device_decode)
    return data.batch(BATCH, num_parallel_workers=workers)


def jisu_rate(
    root: str, workers: int, offload: bool, device: str | None = None, packets: bool = False
) -> float:
    """Images/s of (2), (4) with ``offload``, or (6) with a ``device`` that decodes: its
    module's work on each batch is timed too; ``packets``: (6)'s pipeline alone, which reads
    headers and draws crops (what the host spends per image when the device decodes)."""
    data = jisu_pipeline(root, workers, offload, device_decode=device is not None or packets)
    module = data.offload_module().to(device) if device is not None else None
    begin = time.perf_counter()
    rows = 0
    for image, label in data.create_tuple_iterator(num_epochs=1):
        if module is not None:
            image, label = module([image, label])
        rows += image.shape[0]
    if device is not None and device.startswith("cuda"):
        torch.cuda.synchronize()
    return rows / (time.perf_counter() - begin)


class PILFolder(Dataset):
    """An ImageFolder-style Dataset, transforms as torchvision does them, without torchvision."""

    def __init__(self, paths: list[str], labels: list[int]) -> None:
        self.paths, self.labels = paths, labels
        self.mean = torch.tensor(MEAN).view(3, 1, 1) / 255
        self.std = torch.tensor(STD).view(3, 1, 1) / 255

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        image = Image.open(self.paths[i]).convert("RGB")
        rng = np.random.default_rng(i)
        top, left, h, w = sample_crop(
            image.height, image.width, (0.08, 1.0), (3 / 4, 4 / 3), 10, rng
        )
        image = image.resize((224, 224), Image.BILINEAR, box=(left, top, left + w, top + h))
        if rng.random() < 0.5:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)
        tensor = torch.from_numpy(np.asarray(image, dtype=np.uint8).copy()).permute(2, 0, 1)
        tensor = tensor.float().div_(255)  # ToTensor
        return (tensor - self.mean) / self.std, self.labels[i]


def loader_rate(paths: list[str], labels: list[int], workers: int) -> float:
    loader = DataLoader(
        PILFolder(paths, labels), batch_size=BATCH, shuffle=True, num_workers=workers
    )
    begin = time.perf_counter()
    rows = sum(image.shape[0] for image, _ in loader)
    return rows / (time.perf_counter() - begin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--dir", default=None, help="reuse or create the JPEG folder here")
    parser.add_argument("--repeats", type=int, default=3, help="runs per variant (median)")
    parser.add_argument(
        "--loader-workers",
        default=None,
        help="DataLoader num_workers to try, comma-separated (default: 0 to all cores)",
    )
    parser.add_argument(
        "--device-decode",
        action="store_true",
        help="also time (6), decoding in the offload module, on the CPU when there is no GPU "
        "(on a GPU machine (6) always runs)",
    )
    args = parser.parse_args()
    cores = available_cpus()
    with tempfile.TemporaryDirectory(prefix="jisu-images-") as scratch:
        root = args.dir or os.path.join(scratch, "images")
        if not os.path.isdir(root):
            make_folder(root, args.images)
        paths, labels, _ = list_image_folder(root)
        print(
            f"jisu {jisu.__version__}, torch {torch.__version__}, python "
            f"{platform.python_version()}, {cores} usable CPUs; {len(paths)} JPEGs 375x500 "
            f"q90, batch {BATCH}"
        )
        ceiling(paths[:200])  # warm the page cache and the code paths

        def median(measure) -> float:  # each variant: median of --repeats runs
            return statistics.median(measure() for _ in range(args.repeats))

        region = region_decode.available()
        loaded = region_decode._module

        def with_and_without_region(workers: int, timed_ceiling: bool):
            """(2) and (5), alternating run by run (the machine's drift hits both alike);
            with ``timed_ceiling``, each round times (1) too, for the ratios (2) / (1)."""
            on, off, ceilings = [], [], []
            for _ in range(args.repeats):
                if timed_ceiling:
                    ceilings.append(ceiling(paths))
                on.append(jisu_rate(root, workers, offload=False))
                if region:
                    region_decode._module = False
                    off.append(jisu_rate(root, workers, offload=False))
                    region_decode._module = loaded
            ratios = [rate / top for rate, top in zip(on, ceilings)]
            off_rate = statistics.median(off) if off else 0.0
            top = statistics.median(ceilings) if ceilings else 0.0
            return statistics.median(on), off_rate, ratios, top

        jisu_rate(root, 1, offload=False)  # warm-up: the first pipeline of a process is slower
        one_on, one_off, one_ratios, top = with_and_without_region(1, timed_ceiling=True)
        many_on, many_off, _, _ = with_and_without_region(cores, timed_ceiling=False)
        results = {"(1) ceiling: decode + resize, 1 thread": top}
        results["(2) jisu, 1 worker"] = one_on
        results[f"(2) jisu, {cores} workers"] = many_on
        tried = (
            [int(w) for w in args.loader_workers.split(",")]
            if args.loader_workers
            else range(cores + 1)
        )
        loaders = {w: median(lambda w=w: loader_rate(paths, labels, w)) for w in tried}
        best = max(loaders, key=loaders.get)
        results[f"(3) DataLoader + PIL, best (num_workers={best})"] = loaders[best]
        results[f"(4) jisu offload, {cores} workers"] = median(
            lambda: jisu_rate(root, cores, offload=True)
        )
        device = "cuda" if torch.cuda.is_available() else ("cpu" if args.device_decode else None)
        if device is not None:  # decoded by the offload module, on the GPU when there is one
            results[f"(6) jisu device decode ({device}), {cores} workers"] = median(
                lambda: jisu_rate(root, cores, offload=True, device=device)
            )
            results["(6) its pipeline alone (packets), 1 worker"] = median(
                lambda: jisu_rate(root, 1, offload=True, packets=True)
            )
        if region:  # the same pipelines decoding whole photos
            results["(5) jisu, 1 worker, no region decode"] = one_off
            results[f"(5) jisu, {cores} workers, no region decode"] = many_off
    for name, rate in results.items():
        print(f"  {name:<44} {rate:7.0f} images/s")
    one, many = results["(2) jisu, 1 worker"], results[f"(2) jisu, {cores} workers"]
    low, high = min(one_ratios), max(one_ratios)
    print(
        f"  (2) 1 worker / (1)      = {statistics.median(one_ratios):.2f}x   (target >= 0.85x; "
        f"median of {len(one_ratios)} rounds, each timing both; range {low:.2f}-{high:.2f}x)"
    )
    print(f"  (2) {cores} workers / 1 worker = {many / one:.2f}x   (target >= 1.8x)")
    print(f"  (2) / (3)               = {many / loaders[best]:.2f}x   (target >= 1.6x)")
    offload = results[f"(4) jisu offload, {cores} workers"]
    print(f"  (4) / (2)               = {offload / many:.2f}x   (target >= 1.0x)")
    decoded = [name for name in results if name.startswith("(6)")]
    if decoded:
        print(f"  (6) / (2)               = {results[decoded[0]] / many:.2f}x")
    if region:
        one_whole = results["(5) jisu, 1 worker, no region decode"]
        many_whole = results[f"(5) jisu, {cores} workers, no region decode"]
        print(
            f"  region decode: 1 worker {one / one_whole:.2f}x, "
            f"{cores} workers {many / many_whole:.2f}x"
        )
    else:
        print('  region decode: not installed (pip install "jisu[nvimgcodec]")')


if __name__ == "__main__":
    main()
