"""An S3-compatible server for the object-storage tests: moto's standalone server over HTTP in
a subprocess (not an in-process mock), plus a counting HTTP proxy in front of it that tells
how many response bytes GET requests fetched (an independent measure of ranged reads)."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

moto_server = pytest.importorskip("moto.server")
s3fs = pytest.importorskip("s3fs")

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CountingProxy:
    """Forwards HTTP requests to ``target``, logs them and counts GETs and their body bytes."""

    def __init__(self, target: str) -> None:
        self.target = target  # host:port
        self.get_requests = 0
        self.get_bytes = 0
        self.gets: list[tuple[str, str | None, int]] = []  # (path, Range header, bytes)
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request answered
        #: path endings of PUTs whose answer is lost once: the server stores the object, the
        #: client gets a 500 (as when a connection drops after the write) and retries
        self.lose_put_answers: list[str] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection(proxy.target, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                if self.command == "PUT" and response.status == 200:
                    with proxy._lock:
                        lost = [e for e in proxy.lose_put_answers if self.path.endswith(e)]
                        for ending in lost[:1]:
                            proxy.lose_put_answers.remove(ending)
                    if lost:
                        conn.close()
                        body = b"<Error><Code>InternalError</Code></Error>"
                        self.send_response(500)
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                        return
                with proxy._lock:
                    proxy.requests.append((self.command, self.path))
                if self.command == "GET":
                    with proxy._lock:
                        proxy.get_requests += 1
                        proxy.get_bytes += len(data)
                        proxy.gets.append((self.path, self.headers.get("Range"), len(data)))
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                length = response.getheader("Content-Length") or "0"  # HEAD: the object's size
                self.send_header(
                    "Content-Length", length if self.command == "HEAD" else str(len(data))
                )
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def reset(self) -> None:
        with self._lock:
            self.get_requests = self.get_bytes = 0
            self.gets, self.requests = [], []

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class S3Server:
    """A running moto server: its endpoint, a counting proxy, and helpers."""

    def __init__(self, endpoint: str, proxy: CountingProxy) -> None:
        self.endpoint = endpoint
        self.proxy = proxy

    def fs(self, endpoint: str | None = None) -> object:
        return s3fs.S3FileSystem(
            skip_instance_cache=True,
            endpoint_url=endpoint or self.endpoint,
            key="testing",
            secret="testing",
        )

    def new_bucket(self) -> str:
        """A fresh bucket (its name, without scheme)."""
        name = f"jisu-{uuid.uuid4().hex[:12]}"
        self.fs().mkdir(name)
        return name


@contextlib.contextmanager
def moto_process() -> Iterator[tuple[subprocess.Popen, str]]:
    """moto's standalone S3 server in a subprocess on a free port: the process (a test may
    kill it) and its endpoint; stopped at the end."""
    port = _free_port()
    env = {**os.environ, **CREDENTIALS}
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.05)
        yield process, f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def s3_server():
    """moto's standalone S3 server on a free port, for the whole session."""
    with moto_process() as (_, endpoint):
        proxy = CountingProxy(endpoint.removeprefix("http://"))
        try:
            yield S3Server(endpoint, proxy)
        finally:
            proxy.close()


@pytest.fixture
def s3(s3_server, monkeypatch):
    """The server, with its fake credentials and endpoint in the environment (as a user sets
    them), and a fresh bucket in ``s3.bucket``."""
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.delenv("JISU_CACHE_DIR", raising=False)
    monkeypatch.delenv("JISU_CACHE_SIZE", raising=False)
    s3_server.bucket = s3_server.new_bucket()
    s3_server.proxy.reset()
    return s3_server
