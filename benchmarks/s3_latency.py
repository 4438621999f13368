"""Epoch 1 of a record data set read by ranges from S3 with a real request latency: read-ahead
on and off.

moto's S3 server on this machine answers a ranged GET in about a millisecond; a real object
store takes 10-50 ms before the first byte, which is where a reader that fetches each record
batch when a row asks for it waits. So the reads go through a relay (a subprocess, so that it
takes no GIL from the reader) that holds every ranged GET for ``--latency-ms`` before
forwarding it. Each round reads one epoch (``verify=False``, no cache, 2 reader threads) with
the default read-ahead and with ``read_ahead_bytes=0``, shuffled and in order, interleaved;
the ratios are read-ahead over none in the same round (median, and the rounds).

Usage: python benchmarks/s3_latency.py [--rows 40000] [--row-bytes 4096] [--latency-ms 20]
       [--rounds 3] [--orders "in order" shuffled]
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import os
import socket
import statistics
import subprocess
import sys
import time

import jisu
import jisu.dataset as ds


def relay(target: str, port: int, latency_s: float) -> None:
    """Forward HTTP to ``target``, holding each ranged GET ``latency_s`` first."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if self.command == "GET" and self.headers.get("Range"):
                time.sleep(latency_s)
            conn = http.client.HTTPConnection(target, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            self.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(key, value)
            size = response.getheader("Content-Length") or "0"
            self.send_header("Content-Length", size if self.command == "HEAD" else str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int) -> None:
    for _ in range(300):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def write_records(url: str, rows: int, row_bytes: int, options: dict) -> None:
    import numpy as np

    writer = ds.FileWriter(url, shard_num=4, storage_options=options)
    writer.add_schema({"i": {"type": "int64"}, "blob": {"type": "bytes"}})
    payload = np.random.default_rng(0).bytes(row_bytes)
    for start in range(0, rows, 1000):
        writer.write_raw_data([{"i": k, "blob": payload} for k in range(start, start + 1000)])
    writer.commit()


def epoch_rate(url: str, options: dict, shuffle: bool, read_ahead: int | None) -> float:
    data = ds.RecordDataset(
        url, shuffle=shuffle, verify=False, storage_options=options, num_parallel_workers=2,
        read_ahead_bytes=read_ahead,
    )  # fmt: skip
    begin = time.perf_counter()
    rows = sum(1 for _ in data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    return rows / (time.perf_counter() - begin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40000)
    parser.add_argument("--row-bytes", type=int, default=4096)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--orders", nargs="+", default=["in order"], choices=["in order", "shuffled"],
        help="shuffled: a global shuffle over more batches than the reader keeps is slow",
    )  # fmt: skip
    parser.add_argument("--relay", nargs=3, help=argparse.SUPPRESS)  # target port latency_s
    args = parser.parse_args()
    if args.relay:
        relay(args.relay[0], int(args.relay[1]), float(args.relay[2]))
        return
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    moto_port, relay_port = free_port(), free_port()
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    hold = subprocess.Popen(
        [sys.executable, __file__, "--relay", f"127.0.0.1:{moto_port}", str(relay_port),
         str(args.latency_ms / 1000)],
    )  # fmt: skip
    try:
        wait_for(moto_port)
        wait_for(relay_port)
        import boto3

        direct = {"endpoint_url": f"http://127.0.0.1:{moto_port}"}
        boto3.client("s3", **direct).create_bucket(Bucket="jisu-bench")
        url = "s3://jisu-bench/latency/train.rec"
        write_records(url, args.rows, args.row_bytes, direct)
        held = {"endpoint_url": f"http://127.0.0.1:{relay_port}"}
        print(
            f"jisu {jisu.__version__}, {os.cpu_count()} CPUs; {args.rows} rows of "
            f"{args.row_bytes} B in 4 shards; every ranged GET held {args.latency_ms:.0f} ms"
        )
        cases = {name: name == "shuffled" for name in args.orders}
        rates: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for name, shuffle in cases.items():
                for mode, budget in (("read-ahead", None), ("none", 0)):
                    rate = epoch_rate(url, held, shuffle, budget)
                    rates.setdefault((name, mode), []).append(rate)
        for name in cases:
            ahead, none = rates[(name, "read-ahead")], rates[(name, "none")]
            ratios = [a / b for a, b in zip(ahead, none)]
            print(
                f"  {name:<9} read-ahead {statistics.median(ahead):8.0f} rows/s, none "
                f"{statistics.median(none):8.0f}: {statistics.median(ratios):.2f}x "
                f"({', '.join(f'{r:.2f}' for r in ratios)})"
            )
    finally:
        hold.kill()
        moto.kill()


if __name__ == "__main__":
    main()
