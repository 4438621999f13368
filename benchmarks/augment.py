"""A RandAugment training recipe: jisu against MindSpore 2.10 and a torch DataLoader.

The recipe (as in timm/torchvision ImageNet training): decode → RandomResizedCrop(224) →
RandAugment(2 ops, magnitude 9) → horizontal flip → normalize → CHW → batch 64 with one-hot
labels → CutMix on the batch. It reads the JPEG folder of ``benchmarks/image_pipeline.py``
(375x500 real photos, built there or here with ``--dir``), and reports images/s for:

- jisu (``vision.RandAugment``, ``vision.CutMixBatch``), default workers (all cores);
- a ``DataLoader`` (best of ``num_workers`` 0..cores) over a Dataset doing the same ops with
  Pillow and NumPy (RandAugment's 14 ops written with ``PIL.ImageOps``/``ImageEnhance``/
  affine transforms, as torchvision does), CutMix on the batch tensor;
- MindSpore 2.10 (``--mindspore PYTHON``: a Python with MindSpore installed), in a subprocess
  on the same folder, with its own ops of the same names.

Rates are medians of ``--repeats`` epochs over ``--images`` images; ratios are within this one
run. Usage: python benchmarks/augment.py [--dir /tmp/jisu-imgs] [--mindspore PYTHON]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image, ImageEnhance, ImageOps
from torch.utils.data import DataLoader, Dataset

import jisu.dataset as ds
from jisu.dataset import transforms, vision
from jisu.dataset.core.cpus import available_cpus
from jisu.dataset.record.convert import list_image_folder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_pipeline import make_folder

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
BATCH, CLASSES, SIZE = 64, 10, 224


# ---------------------------------------------------------------------------- jisu
def jisu_rate(root: str, repeats: int) -> float:
    data = ds.ImageFolderDataset(root, shuffle=True)
    data = data.map(
        [
            vision.Decode(),
            vision.RandomResizedCrop(SIZE),
            vision.RandAugment(num_ops=2, magnitude=9),
            vision.RandomHorizontalFlip(),
            vision.Normalize(MEAN, STD),
            vision.HWC2CHW(),
        ],
        "image",
    )
    data = data.map(transforms.OneHot(CLASSES), "label").map(
        transforms.TypeCast(np.float32), "label"
    )
    data = data.batch(BATCH, drop_remainder=True)
    data = data.map(vision.CutMixBatch(vision.ImageBatchFormat.NCHW), ["image", "label"])

    def epoch() -> int:
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        return sum(len(batch[0]) for batch in it)

    return median_rate(epoch, repeats)


# ---------------------------------------------------------------------------- PyTorch
def _affine(image: Image.Image, matrix: tuple) -> Image.Image:
    return image.transform(image.size, Image.Transform.AFFINE, matrix, Image.Resampling.NEAREST)


def rand_augment(image: Image.Image, rng: np.random.Generator, magnitude=9, bins=31):
    """RandAugment's 14 ops with Pillow, as torchvision's ``RandAugment`` applies them (``m``:
    the magnitude as a signed fraction of the largest)."""
    w, h = image.size
    ops = [
        lambda im, m: im,
        lambda im, m: _affine(im, (1, 0.3 * m, 0, 0, 1, 0)),  # shear x
        lambda im, m: _affine(im, (1, 0, 0, 0.3 * m, 1, 0)),  # shear y
        lambda im, m: _affine(im, (1, 0, m * 150.0 / 331.0 * w, 0, 1, 0)),
        lambda im, m: _affine(im, (1, 0, 0, 0, 1, m * 150.0 / 331.0 * h)),
        lambda im, m: im.rotate(m * 30.0),
        lambda im, m: ImageEnhance.Brightness(im).enhance(1 + m * 0.9),
        lambda im, m: ImageEnhance.Color(im).enhance(1 + m * 0.9),
        lambda im, m: ImageEnhance.Contrast(im).enhance(1 + m * 0.9),
        lambda im, m: ImageEnhance.Sharpness(im).enhance(1 + m * 0.9),
        lambda im, m: ImageOps.posterize(im, 8 - int(abs(m) * 4)),
        lambda im, m: ImageOps.solarize(im, int(255 - abs(m) * 255)),
        lambda im, m: ImageOps.autocontrast(im),
        lambda im, m: ImageOps.equalize(im),
    ]
    for _ in range(2):
        op = ops[int(rng.integers(len(ops)))]
        level = magnitude / (bins - 1) * (1 if rng.random() < 0.5 else -1)
        image = op(image, level)
    return image


class AugmentedFolder(Dataset):
    def __init__(self, paths: list[str], labels: list[int]) -> None:
        self.paths, self.labels = paths, labels

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        rng = np.random.default_rng()
        image = Image.open(self.paths[i]).convert("RGB")
        w, h = image.size
        for _ in range(10):  # RandomResizedCrop's draw (scale 0.08-1, ratio 3/4-4/3)
            area = w * h * rng.uniform(0.08, 1.0)
            ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
            cw, ch = round(math.sqrt(area * ratio)), round(math.sqrt(area / ratio))
            if 0 < cw <= w and 0 < ch <= h:
                left, top = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
                break
        else:
            cw, ch, left, top = min(w, h), min(w, h), (w - min(w, h)) // 2, (h - min(w, h)) // 2
        image = image.resize(
            (SIZE, SIZE), Image.Resampling.BILINEAR, (left, top, left + cw, top + ch)
        )
        image = rand_augment(image, rng)
        if rng.random() < 0.5:
            image = ImageOps.mirror(image)
        array = (np.asarray(image, dtype=np.float32) - MEAN) / STD
        label = np.zeros(CLASSES, np.float32)
        label[self.labels[i]] = 1
        return torch.from_numpy(array.transpose(2, 0, 1).copy()), torch.from_numpy(label)


def cutmix(images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    lam = float(np.random.beta(1.0, 1.0))
    perm = torch.randperm(len(images))
    h, w = images.shape[2:]
    ch, cw = int(h * math.sqrt(1 - lam)), int(w * math.sqrt(1 - lam))
    cy, cx = np.random.randint(h), np.random.randint(w)
    y0, y1 = max(cy - ch // 2, 0), min(cy + ch // 2, h)
    x0, x1 = max(cx - cw // 2, 0), min(cx + cw // 2, w)
    images[:, :, y0:y1, x0:x1] = images[perm, :, y0:y1, x0:x1]
    lam = 1 - (y1 - y0) * (x1 - x0) / (h * w)
    return images, lam * labels + (1 - lam) * labels[perm]


def loader_rate(root: str, repeats: int) -> tuple[float, int]:
    paths, labels, _ = list_image_folder(root, None, None)
    best = (0.0, 0)
    for workers in range(available_cpus() + 1):
        loader = DataLoader(
            AugmentedFolder(paths, labels),
            batch_size=BATCH,
            shuffle=True,
            drop_last=True,
            num_workers=workers,
        )

        def epoch(loader=loader) -> int:
            count = 0
            for images, onehot in loader:
                images, onehot = cutmix(images, onehot)
                count += len(images)
            return count

        best = max(best, (median_rate(epoch, repeats), workers))
    return best


# ---------------------------------------------------------------------------- MindSpore
MINDSPORE_SCRIPT = """
import json, statistics, sys, time
import numpy as np
import mindspore.dataset as ds
import mindspore.dataset.transforms as T
import mindspore.dataset.vision as V
root, repeats = sys.argv[1], int(sys.argv[2])
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
data = ds.ImageFolderDataset(root, shuffle=True)
data = data.map([V.Decode(), V.RandomResizedCrop(224), V.RandAugment(num_ops=2, magnitude=9),
                 V.RandomHorizontalFlip(), V.Normalize(MEAN, STD), V.HWC2CHW()], "image")
data = data.map([T.OneHot(10), T.TypeCast(np.float32)], "label")
data = data.batch(64, drop_remainder=True)
data = data.map(V.CutMixBatch(V.ImageBatchFormat.NCHW), ["image", "label"])
rates = []
for _ in range(repeats):
    begin = time.perf_counter()
    count = sum(len(b[0]) for b in data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    rates.append(count / (time.perf_counter() - begin))
print(json.dumps(statistics.median(rates)))
"""


def mindspore_rate(python: str, root: str, repeats: int) -> float:
    out = subprocess.run(
        [python, "-c", MINDSPORE_SCRIPT, root, str(repeats)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def median_rate(epoch, repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        begin = time.perf_counter()
        count = epoch()
        rates.append(count / (time.perf_counter() - begin))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--dir", default=None, help="reuse or create the JPEG folder here")
    parser.add_argument("--mindspore", help="a Python with MindSpore 2.10 installed")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    root = args.dir or tempfile.mkdtemp(prefix="jisu-augment-")
    if not os.path.isdir(root) or not os.listdir(root):
        make_folder(root, args.images)
    ours = jisu_rate(root, args.repeats)
    theirs, workers = loader_rate(root, args.repeats)
    ms = mindspore_rate(args.mindspore, root, args.repeats) if args.mindspore else float("nan")
    print(f"jisu:       {ours:8.1f} images/s")
    print(f"DataLoader: {theirs:8.1f} images/s (num_workers={workers})")
    print(f"jisu / DataLoader = {ours / theirs:.2f}x")
    print(f"MindSpore:  {ms:8.1f} images/s; jisu/MS = {ours / ms:.2f}x")


if __name__ == "__main__":
    main()
