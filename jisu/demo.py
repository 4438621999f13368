"""The demo pipeline behind ``jisu train``: the article's input pipeline on synthetic images."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from . import dataset as ds
from .dataset import transforms, vision


def synthetic_images(num_samples: int, size: int = 224) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The article's generator: uniform random HWC float32 images and labels ``i % 10``."""
    rng = np.random.default_rng(0)
    for i in range(num_samples):
        image = rng.uniform(0, 255, (size, size, 3)).astype(np.float32)
        yield image, np.array(i % 10, dtype=np.int32)


def article_pipeline(num_samples: int, batch_size: int, workers: int, size: int = 224):
    """GeneratorDataset -> map(Rescale, HWC2CHW) -> map(TypeCast) -> batch, as in the article."""
    data = ds.GeneratorDataset(
        lambda: synthetic_images(num_samples, size), ["image", "label"], shuffle=True
    )
    data = data.map(
        [vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],
        input_columns="image",
        num_parallel_workers=workers,
    )
    data = data.map(
        transforms.TypeCast(np.int32), input_columns="label", num_parallel_workers=workers
    )
    return data.batch(batch_size, drop_remainder=True)


def run_pipeline_demo(num_samples: int, batch_size: int, workers: int, size: int = 224) -> dict:
    """Run the demo pipeline for one epoch next to the bare generator; return the figures."""
    begin = time.perf_counter()
    for _ in synthetic_images(num_samples, size):
        pass
    bare_s = time.perf_counter() - begin
    pipeline = article_pipeline(num_samples, batch_size, workers, size)
    begin = time.perf_counter()
    rows = batches = 0
    shapes = None
    first_s = first_rows = 0.0
    for image, label in pipeline.create_tuple_iterator(num_epochs=1):
        rows += image.shape[0]
        batches += 1
        if batches == 1:  # start-up (threads, shuffle buffer fill) is reported on its own
            first_s, first_rows = time.perf_counter() - begin, rows
        shapes = (tuple(image.shape), str(image.dtype), tuple(label.shape), str(label.dtype))
    jisu_s = time.perf_counter() - begin
    steady = (rows - first_rows) / max(jisu_s - first_s, 1e-9) if batches > 1 else rows / jisu_s
    return {
        "batches": batches,
        "rows": rows,
        "shapes": shapes,
        "first_batch_s": first_s,
        "jisu_rows_per_s": steady,
        "bare_rows_per_s": num_samples / bare_s,
    }
