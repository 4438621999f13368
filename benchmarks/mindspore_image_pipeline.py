"""MindSpore 2.10 running benchmarks/image_pipeline.py's pipeline, for comparison.

MindSpore is a reference, never a jisu dependency: run this in a throwaway virtual environment
(``python -m venv /tmp/msenv && /tmp/msenv/bin/pip install mindspore==2.10.0 "numpy<2"``) on
the folder image_pipeline.py made (its ``--dir``):

    /tmp/msenv/bin/python benchmarks/mindspore_image_pipeline.py DIR WORKERS

Prints images/s (median of 3) for Decode + RandomResizedCrop and for the fused
RandomCropDecodeResize, each followed by RandomHorizontalFlip, Normalize, HWC2CHW, batch 64.
"""

import statistics
import sys
import time

import mindspore.dataset as ds
import mindspore.dataset.vision as vision

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def rate(root: str, workers: int, fused: bool) -> float:
    data = ds.ImageFolderDataset(root, shuffle=True, num_parallel_workers=workers)
    if fused:
        ops = [vision.RandomCropDecodeResize(224)]
    else:
        ops = [vision.Decode(), vision.RandomResizedCrop(224)]
    ops += [vision.RandomHorizontalFlip(), vision.Normalize(MEAN, STD), vision.HWC2CHW()]
    data = data.map(ops, "image", num_parallel_workers=workers)
    data = data.batch(64, num_parallel_workers=workers)
    begin = time.perf_counter()
    rows = sum(b[0].shape[0] for b in data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    return rows / (time.perf_counter() - begin)


def main() -> None:
    root, workers = sys.argv[1], int(sys.argv[2])
    for fused in (False, True):
        runs = [rate(root, workers, fused) for _ in range(3)]
        name = "RandomCropDecodeResize" if fused else "Decode + RandomResizedCrop"
        print(
            f"MindSpore {name}, {workers} workers: median {statistics.median(runs):.0f} "
            f"images/s (runs {[round(r) for r in runs]})"
        )


if __name__ == "__main__":
    main()
