"""Scale-out: the image pipeline on Ray nodes, and record reads from S3-compatible storage.

All on this machine, with the plain local runs measured in the same process for comparison:

1. the image pipeline of ``benchmarks/image_pipeline.py`` (ImageFolderDataset ->
   RandomCropDecodeResize(224) -> flip -> Normalize -> HWC2CHW -> batch 64, the tail
   offloaded so batches are uint8) on a Ray cluster of worker nodes of 1 CPU each (the head
   node has none, so only the worker nodes decode), with 1 and with 2 actors (SPREAD over the
   nodes), against the local pool with 1 and 2 workers (threads) and 2 worker processes
   (``python_multiprocessing``). Only the second epoch is timed: actors and processes start
   in the first. Target: 2 nodes / 1 node >= 1.7x. Also the layout ``ray start --head
   --num-cpus 1`` + a second ``ray start --num-cpus 1`` gives: the driver's node decodes too
   (the head alone, then with a second node), a new cluster per round;
2. the pieces that limit a large cluster: tasks per second the driver dispatches (batches of
   one tiny row), and bytes per second through Ray's object store (9.6 MB uint8 batches);
3. record reads: a record data set of ``--rows`` rows of ``--row-bytes`` bytes written to local
   disk and, through ``FileWriter``, to a local S3 server (moto's standalone server over HTTP,
   started here); one epoch read (shuffled) from local disk, from S3 by byte ranges (no cache),
   and from S3 with a node-local cache: the first epoch (fills it) and a later one.

Needs ``jisu[ray,s3]``, moto's server (``pip install "moto[s3]" flask flask-cors``),
scikit-learn and Pillow for the photos. Every variant runs ``--repeats`` times, interleaved;
medians reported.
Usage: python benchmarks/scale_out.py [--images 2000] [--dir PATH] [--repeats 3]
    [--rows 20000] [--row-bytes 4096] [--skip-ray] [--skip-s3]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

import numpy as np

import jisu
import jisu.dataset as ds
from jisu.dataset import vision

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
BATCH = 64


def image_pipeline(root: str, workers: int, processes: bool = False) -> ds.Dataset:
    data = ds.ImageFolderDataset(root, shuffle=True, num_parallel_workers=workers)
    ops = [
        vision.RandomCropDecodeResize(224),
        vision.RandomHorizontalFlip(),
        vision.Normalize(MEAN, STD),
        vision.HWC2CHW(),
    ]
    data = data.map(
        ops, "image", num_parallel_workers=workers, offload=True, python_multiprocessing=processes
    )
    return data.batch(BATCH, num_parallel_workers=workers)


def second_epoch_rate(data: ds.Dataset) -> float:
    """Rows/s of the second of two epochs (workers, processes or actors start in the first)."""
    iterator = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    try:
        for _ in iterator:  # the first epoch
            pass
        begin = time.perf_counter()
        rows = sum(len(row[0]) if np.ndim(row[0]) else 1 for row in iterator)
    finally:
        iterator.close()
    return rows / (time.perf_counter() - begin)


@contextlib.contextmanager
def executor(value) -> Iterator[None]:
    ds.config.set_executor(value)
    try:
        yield
    finally:
        ds.config.set_executor(None)


@contextlib.contextmanager
def ray_cluster(worker_nodes: int, head_cpus: int = 0) -> Iterator[object]:
    """A head node with ``head_cpus`` CPUs (the driver runs there) and ``worker_nodes`` nodes
    of 1 CPU, on this machine."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": head_cpus, "include_dashboard": False}
    )
    try:
        for _ in range(worker_nodes):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def _process_kind(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().decode(errors="replace")
    except OSError:
        return None
    if "StageActor" in cmd:
        return "actors"
    if "raylet" in cmd:
        return "raylets (object transfer)"
    if os.getpid() == int(pid):
        return "driver"
    return "other processes"


def _cpu_seconds() -> dict[int, tuple[str, float]]:
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        kind = _process_kind(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if kind is not None:
            out[int(pid)] = (kind, (int(fields[11]) + int(fields[12])) / ticks)
    return out


def cpu_split(data: ds.Dataset) -> dict[str, float]:
    """Cores used per kind of process (Linux /proc) during the second and third of three
    epochs of ``data``, and its images/s then."""
    iterator = data.create_tuple_iterator(num_epochs=3, output_numpy=True)
    try:
        for _ in iterator:
            pass
        before, begin = _cpu_seconds(), time.perf_counter()
        rows = sum(len(row[0]) for row in iterator) + sum(len(row[0]) for row in iterator)
        seconds, after = time.perf_counter() - begin, _cpu_seconds()
    finally:
        iterator.close()
    cores: dict[str, float] = {}
    for pid, (kind, cpu) in after.items():
        cores[kind] = cores.get(kind, 0.0) + (cpu - before.get(pid, (kind, 0.0))[1]) / seconds
    return {"images/s": rows / seconds, **cores}


def interleaved(variants: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Median of ``repeats`` runs of each variant, run round-robin (drift hits all alike)."""
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, measure in variants.items():
            runs[name].append(measure())
    return {name: statistics.median(values) for name, values in runs.items()}


def dispatch_rate() -> float:
    """Tasks/s the driver sends to 2 actors and collects, each one batch of one tiny row. The
    stage's chunker, which normally packs ~20 ms of work into a task, is held at one item
    per task here (a benchmark-only patch), and tasks are counted as they are submitted."""
    from jisu.dataset.engine.ray.pool import RayPool
    from jisu.dataset.engine.stage import AdaptiveChunker

    source = ds.NumpySlicesDataset(np.arange(3000), ["x"], shuffle=False)
    data = source.map(lambda x: x + 1, "x", num_parallel_workers=2).batch(1)
    observe, submit = AdaptiveChunker.observe, RayPool.submit
    submitted = [0]

    def counting_submit(self, epoch, item):
        submitted[0] += 1
        return submit(self, epoch, item)

    AdaptiveChunker.observe = lambda self, seconds, items: None  # size stays 1
    RayPool.submit = counting_submit
    try:
        with executor(ds.RayExecutor(num_workers=2)):
            iterator = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
            for _ in iterator:
                pass
            begin = time.perf_counter()
            rows = sum(1 for _ in iterator)
            seconds = time.perf_counter() - begin
            iterator.close()
    finally:
        AdaptiveChunker.observe, RayPool.submit = observe, submit
    if submitted[0] != 2 * rows:  # two epochs, one task per batch of one row
        raise RuntimeError(f"dispatch: {2 * rows} batches came in {submitted[0]} tasks")
    return rows / seconds


def big_batches(rows: int) -> ds.Dataset:
    """uint8 224x224x3 rows in batches of 64 (9.6 MB each), made on the workers."""
    source = ds.NumpySlicesDataset(np.arange(rows), ["x"], shuffle=False)
    data = source.map(
        lambda x: np.full((224, 224, 3), x % 251, np.uint8), "x", num_parallel_workers=2
    )
    return data.batch(BATCH, num_parallel_workers=2)


def ray_section(root: str, repeats: int) -> dict[str, float]:
    local = {
        "local, 1 worker (thread)": lambda: second_epoch_rate(image_pipeline(root, 1)),
        "local, 2 workers (threads)": lambda: second_epoch_rate(image_pipeline(root, 2)),
        "local, 2 worker processes": lambda: second_epoch_rate(image_pipeline(root, 2, True)),
    }
    with ray_cluster(2):

        def on_ray(actors: int, data: Callable[[], ds.Dataset]) -> Callable[[], float]:
            def measure() -> float:
                with executor(ds.RayExecutor(num_workers=actors)):
                    return second_epoch_rate(data())

            return measure

        variants = {
            **local,
            "Ray, 1 node (1 actor)": on_ray(1, lambda: image_pipeline(root, 1)),
            "Ray, 2 nodes (2 actors)": on_ray(2, lambda: image_pipeline(root, 2)),
        }
        results = interleaved(variants, repeats)
        image_mb = 224 * 224 * 3 / 1e6
        pieces = {
            "dispatch: tasks/s, Ray 2 actors": dispatch_rate,
            "9.6 MB batches: MB/s, local": lambda: second_epoch_rate(big_batches(1280)) * image_mb,
            "9.6 MB batches: MB/s, Ray 2 actors": lambda: (
                on_ray(2, lambda: big_batches(1280))() * image_mb
            ),
        }
        results.update(interleaved(pieces, repeats))
        if sys.platform.startswith("linux"):
            with executor(ds.RayExecutor(num_workers=2)):
                split = cpu_split(image_pipeline(root, 2))
            rate = split.pop("images/s")
            print(
                f"  where the cores go, Ray 2 nodes ({rate:.0f} images/s): "
                + ", ".join(f"{kind} {value:.2f}" for kind, value in sorted(split.items()))
            )
    return results


def ray_head_works_section(root: str, repeats: int) -> dict[str, float]:
    """The other layout, as ``ray start --head --num-cpus 1`` + ``ray start --address ...
    --num-cpus 1`` make it: the driver's node decodes too. One node: the head alone (no
    transfer between object stores); two: a second node joins (half the batches cross)."""
    runs: dict[str, list[float]] = {"head alone": [], "head + 1 node": []}
    for _ in range(repeats):
        with ray_cluster(0, head_cpus=1) as cluster:
            with executor(ds.RayExecutor(num_workers=1)):
                runs["head alone"].append(second_epoch_rate(image_pipeline(root, 1)))
            cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            with executor(ds.RayExecutor(num_workers=2)):
                runs["head + 1 node"].append(second_epoch_rate(image_pipeline(root, 2)))
    return {
        f"Ray, driver's node decodes too: {name}": statistics.median(values)
        for name, values in runs.items()
    }


# ------------------------------------------------------------------ S3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """moto's standalone S3 server over HTTP, in a subprocess, with fake credentials."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    names = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the moto server did not start")
            time.sleep(0.1)
        import boto3

        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="jisu-bench")
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def write_records(path: str, rows: int, row_bytes: int, shards: int) -> None:
    rng = np.random.default_rng(0)
    writer = ds.FileWriter(path, shard_num=shards)
    writer.add_schema({"data": {"type": "bytes"}, "label": {"type": "int64"}})
    for start in range(0, rows, 1000):
        count = min(1000, rows - start)
        writer.write_raw_data(
            [{"data": rng.bytes(row_bytes), "label": start + k} for k in range(count)]
        )
    writer.commit()


def read_rate(path: str, shuffle: bool = True, **kwargs) -> float:
    """Rows/s of one epoch (shuffled by default), opening the data set included (it checks
    the shards)."""
    begin = time.perf_counter()
    data = ds.RecordDataset(path, shuffle=shuffle, num_parallel_workers=2, **kwargs)
    rows = sum(1 for _ in data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    return rows / (time.perf_counter() - begin)


def s3_section(scratch: str, rows: int, row_bytes: int, repeats: int) -> dict[str, float]:
    shards = max(2, rows * row_bytes // (12 << 20))  # <= 12 MiB: moto copies per ranged GET
    local = os.path.join(scratch, "records", "train.rec")
    os.makedirs(os.path.dirname(local))
    write_records(local, rows, row_bytes, shards)
    with s3_server():
        remote = "s3://jisu-bench/records/train.rec"
        begin = time.perf_counter()
        write_records(remote, rows, row_bytes, shards)
        write_s = time.perf_counter() - begin
        cache = os.path.join(scratch, "cache")

        def cold_then_warm() -> tuple[float, float]:
            shutil.rmtree(cache, ignore_errors=True)
            first = read_rate(remote, cache_dir=cache)
            return first, read_rate(remote, cache_dir=cache)

        runs: dict[str, list[float]] = {}
        for _ in range(repeats):
            first, later = cold_then_warm()
            for name, value in (
                ("local disk", read_rate(local)),
                ("S3, ranged reads, no cache (verify=False)", read_rate(remote, verify=False)),
                (
                    "S3, ranged reads, no read-ahead",
                    read_rate(remote, verify=False, read_ahead_bytes=0),
                ),
                ("S3, ranged, in order", read_rate(remote, False, verify=False)),
                (
                    "S3, ranged, in order, no read-ahead",
                    read_rate(remote, False, verify=False, read_ahead_bytes=0),
                ),
                ("S3 + cache, first epoch", first),
                ("S3 + cache, later epoch", later),
            ):
                runs.setdefault(name, []).append(value)
    results = {f"records: {k}": statistics.median(v) for k, v in runs.items()}
    results["records: write to S3, MB/s"] = rows * row_bytes / write_s / 1e6
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--dir", default=None, help="reuse or create the JPEG folder here")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--row-bytes", type=int, default=4096)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--skip-s3", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from image_pipeline import make_folder

    print(f"jisu {jisu.__version__}, {os.cpu_count()} CPUs")
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="jisu-scale-out-") as scratch:
        if not args.skip_ray:
            root = args.dir or os.path.join(scratch, "images")
            if not os.path.isdir(root):
                make_folder(root, args.images)
            results.update(ray_section(root, args.repeats))
            results.update(ray_head_works_section(root, args.repeats))
        if not args.skip_s3:
            results.update(s3_section(scratch, args.rows, args.row_bytes, args.repeats))
    for name, value in results.items():
        unit = "" if "/s" in name else " rows/s" if name.startswith("records") else " images/s"
        print(f"  {name:<48} {value:9.0f}{unit}")
    if not args.skip_ray:
        one, two = results["Ray, 1 node (1 actor)"], results["Ray, 2 nodes (2 actors)"]
        print(f"  Ray 2 nodes / 1 node = {two / one:.2f}x   (target >= 1.7x)")
        alone = results["Ray, driver's node decodes too: head alone"]
        both = results["Ray, driver's node decodes too: head + 1 node"]
        print(f"  driver's node decodes too: 2 nodes / 1 node = {both / alone:.2f}x")
        print(
            f"  Ray 2 nodes / local 2 threads = {two / results['local, 2 workers (threads)']:.2f}x"
            f", / local 2 processes = {two / results['local, 2 worker processes']:.2f}x"
        )


if __name__ == "__main__":
    main()
