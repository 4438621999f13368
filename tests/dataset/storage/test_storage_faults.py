"""Object storage under faults, against moto's S3 server over HTTP and local sockets: a server
that dies mid-epoch, an endpoint that accepts connections and never answers, an object
replaced after the data set was opened. Each ends in one error naming the URL, within bounded
time (the hangs are guarded by pytest's timeout), and leaves no thread behind."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record import storage, storage_requests
from jisu.dataset.record import writer as writer_module
from jisu.dataset.record.storage import StorageError
from jisu.dataset.record.validate import MalformedFileError

from .s3_server import CREDENTIALS, moto_process

pytestmark = pytest.mark.timeout(60)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Record batches of 8 rows: a data set of a few hundred rows is many ranged GETs."""
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)


@pytest.fixture
def credentials(monkeypatch):
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_ENDPOINT_URL", "JISU_CACHE_DIR", "JISU_CACHE_SIZE", "AWS_MAX_ATTEMPTS"):
        monkeypatch.delenv(key, raising=False)


def write_rows(url: str, n: int, options: dict, shards: int = 1) -> ds.FileWriter:
    """``n`` rows of ~1 KiB (row k holds k), 8 to a record batch."""
    writer = ds.FileWriter(url, shard_num=shards, storage_options=options)
    writer.add_schema({"k": {"type": "int64"}, "v": {"type": "float32", "shape": [256]}})
    writer.write_raw_data([{"k": np.int64(k), "v": np.full(256, k, np.float32)} for k in range(n)])
    writer.commit()
    return writer


def jisu_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("jisu-") and t.is_alive()}


def make_bucket(endpoint: str) -> str:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, endpoint_url=endpoint)
    fs.mkdir("jisu-faults")
    return "jisu-faults"


# ------------------------------------------------------------------ a server that dies


def test_a_server_that_dies_mid_epoch_is_one_runtime_error_naming_the_url(credentials):
    before = jisu_threads()
    with moto_process() as (server, endpoint):
        options = {"endpoint_url": endpoint}
        url = f"s3://{make_bucket(endpoint)}/train.rec"
        writer = write_rows(url, 600, options, shards=2)
        data = ds.RecordDataset(url, shuffle=False, storage_options=options)
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        with pytest.raises(RuntimeError) as caught:
            for n, row in enumerate(it):
                assert int(row[0]) == n
                if n == 20:  # mid-epoch: workers are reading batches ahead
                    server.kill()
                    server.wait()
        it.stop()
        assert jisu_threads() <= before  # every thread of the iterator has ended
        with pytest.raises(StopIteration):  # one error, then the iterator is done
            next(it)
    error = caught.value
    assert isinstance(error, StorageError) and isinstance(error, OSError)
    assert "RecordDataset" in str(error)
    assert any(path in str(error) for path in writer.paths), str(error)  # the shard's URL
    assert "Could not connect" in str(error)  # what the transport said, kept in the message


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import jisu.dataset as ds
    from jisu.dataset.record import writer as writer_module

    endpoint, pid, url, mode = sys.argv[1:5]
    data = ds.RecordDataset(url, shuffle=False, storage_options={"endpoint_url": endpoint})
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    for n, row in enumerate(it):
        if n == 20:
            os.kill(int(pid), signal.SIGKILL)
            if mode == "exit":  # leave at once, worker threads waiting on the dead server
                sys.exit(0)
    """
)


def test_the_interpreter_exits_cleanly_after_the_server_died(credentials, tmp_path):
    """Processes whose data set's server died exit 0 (leaving mid-epoch, threads waiting on
    the dead server) or 1 (the error), never aborting in finalization with threads still
    inside requests (it did 5 times in 9, exit 134). Three at once, each with its server."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, **CREDENTIALS, "PYTHONPATH": ROOT}
    with contextlib.ExitStack() as stack:
        children = []
        for mode in ("exit", "raise", "exit"):
            server, endpoint = stack.enter_context(moto_process())
            url = f"s3://{make_bucket(endpoint)}/train.rec"
            write_rows(url, 600, {"endpoint_url": endpoint}, shards=2)
            command = [sys.executable, str(script), endpoint, str(server.pid), url, mode]
            child = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
            children.append((mode, url, child))
        for mode, url, child in children:
            _, stderr = child.communicate(timeout=50)
            assert "Fatal Python error" not in stderr, stderr[-3000:]
            assert child.returncode == (0 if mode == "exit" else 1), stderr[-3000:]
            if mode == "raise":
                assert "StorageError" in stderr and url in stderr, stderr[-3000:]


# ------------------------------------------------------------------ a server that never answers


@contextlib.contextmanager
def silent_endpoint() -> Iterator[tuple[str, list[socket.socket]]]:
    """A local TCP endpoint that accepts connections and never answers (its address and the
    connections it accepted)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            if select.select([server], [], [], 0.05)[0]:
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


SMALL = {"connect_timeout": 0.5, "read_timeout": 0.5, "retries": {"total_max_attempts": 2}}


@pytest.mark.timeout(30)
def test_an_endpoint_that_never_answers_fails_opening_with_the_url(credentials):
    with silent_endpoint() as (endpoint, accepted):
        options = {"endpoint_url": endpoint, "config_kwargs": SMALL}
        with pytest.raises(StorageError, match=r"'s3://jisu-silent/train\.rec.*read_timeout=0\.5"):
            ds.RecordDataset("s3://jisu-silent/train.rec", storage_options=options)
        assert len(accepted) == 2  # the request was tried twice, as the policy says, no more


class Relay:
    """A TCP relay to ``target`` that can go silent: from then on it accepts connections and
    passes nothing on, either way (also on connections open before)."""

    def __init__(self, target: str) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.silent = threading.Event()
        self._closed = threading.Event()
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self._sockets: list[socket.socket] = [self._server]
        self.endpoint = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            if not select.select([self._server], [], [], 0.05)[0]:
                continue
            client = self._server.accept()[0]
            self._sockets.append(client)
            if self.silent.is_set():
                continue
            upstream = socket.create_connection(self.target)
            self._sockets.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pump, args=(a, b), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while not self._closed.is_set():
                if not select.select([source], [], [], 0.05)[0]:
                    continue
                data = source.recv(1 << 16)
                if not data:
                    return
                if not self.silent.is_set():
                    sink.sendall(data)

    def close(self) -> None:
        self._closed.set()
        for thread in list(self._threads):  # each looks at the flag every 50 ms
            thread.join()
        for sock in self._sockets:
            sock.close()


@pytest.mark.timeout(30)
def test_an_endpoint_that_goes_silent_mid_epoch_is_one_runtime_error(credentials):
    with moto_process() as (_, endpoint):
        relay = Relay(endpoint)
        try:
            options = {"endpoint_url": relay.endpoint, "config_kwargs": SMALL}
            url = f"s3://{make_bucket(endpoint)}/train.rec"
            writer = write_rows(url, 400, {"endpoint_url": endpoint})
            data = ds.RecordDataset(url, shuffle=False, storage_options=options)
            before = jisu_threads()
            with pytest.raises(RuntimeError, match=r"read_timeout=0\.5") as caught:
                for n, _ in enumerate(data.create_tuple_iterator(num_epochs=1)):
                    if n == 10:
                        relay.silent.set()
            assert isinstance(caught.value, StorageError)
            assert writer.paths[0] in str(caught.value)
            assert jisu_threads() <= before
        finally:
            relay.close()


@pytest.mark.timeout(30)
def test_stop_abandons_requests_waiting_on_a_silent_server(credentials):
    """Closing the iterator cancels the requests its threads wait on: with a 60 s read
    timeout, no thread is left waiting after stop() (which waits a few seconds at most)."""
    with moto_process() as (_, endpoint):
        relay = Relay(endpoint)
        try:
            patient = {"connect_timeout": 60, "read_timeout": 60}
            options = {"endpoint_url": relay.endpoint, "config_kwargs": patient}
            url = f"s3://{make_bucket(endpoint)}/train.rec"
            write_rows(url, 400, {"endpoint_url": endpoint})
            data = ds.RecordDataset(url, shuffle=False, verify=False, storage_options=options)
            relay.silent.set()  # opened; now every read waits
            before = jisu_threads()
            it = data.create_tuple_iterator(num_epochs=1)
            reader = threading.Thread(target=_drain, args=(it,))
            reader.start()
            while not storage_requests._inflight:  # until a worker waits on a request
                time.sleep(0.02)
            it.stop()
            reader.join(10)
            assert not reader.is_alive()
            assert not storage_requests._inflight
            assert jisu_threads() <= before
        finally:
            relay.close()


def _drain(it: ds.DatasetIterator) -> None:
    with contextlib.suppress(Exception):
        for _ in it:
            pass


# ------------------------------------------------------------------ an object replaced


def replace_with_same_size(s3fs_fs, path: str) -> None:
    """Overwrite the object at ``path`` with as many bytes, some record data changed."""
    data = bytearray(s3fs_fs.cat_file(path))
    middle = slice(len(data) // 2, len(data) // 2 + 1000)  # inside a record batch's values
    data[middle] = bytes(255 - b for b in data[middle])
    s3fs_fs.pipe_file(path, bytes(data))


def test_a_shard_replaced_after_open_is_an_error_naming_it_not_other_bytes(s3):
    url = f"s3://{s3.bucket}/replaced/train.rec"
    writer = write_rows(url, 400, {})  # 50 record batches: more than a reader keeps in memory
    data = ds.RecordDataset(url, shuffle=False)
    first = [int(row[0]) for row in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert first == list(range(400))
    shard = writer.paths[0]
    replace_with_same_size(s3.fs(), shard.removeprefix("s3://"))
    with pytest.raises(RuntimeError, match="changed after it was opened") as caught:
        list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert isinstance(caught.value, MalformedFileError)
    assert shard in str(caught.value)
    reopened = ds.RecordDataset(url, shuffle=False)
    with pytest.raises(MalformedFileError, match="checksum"):  # reopened: the manifest's CRC
        list(reopened.create_tuple_iterator(num_epochs=1, output_numpy=True))


def test_in_a_versioned_bucket_reads_stay_on_the_version_opened(s3):
    fs = s3.fs()
    fs.call_s3(
        "put_bucket_versioning",
        Bucket=s3.bucket,
        VersioningConfiguration={"Status": "Enabled"},
    )
    url = f"s3://{s3.bucket}/versioned/train.rec"
    writer = write_rows(url, 400, {})
    data = ds.RecordDataset(url, shuffle=False, verify=False)
    replace_with_same_size(fs, writer.paths[0].removeprefix("s3://"))
    rows = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert [int(r[0]) for r in rows] == list(range(400))  # the bytes of the version checked
    assert all((r[1] == k).all() for k, r in enumerate(rows))


# ------------------------------------------------------------------ the policy itself


def test_the_default_policy_and_what_storage_options_change(monkeypatch):
    pytest.importorskip("s3fs")
    monkeypatch.delenv("AWS_MAX_ATTEMPTS", raising=False)
    monkeypatch.delenv("AWS_RETRY_MODE", raising=False)
    fs, _ = storage.filesystem("s3://bucket/key", {"endpoint_url": "http://127.0.0.1:9"})
    assert fs.config_kwargs == {
        "connect_timeout": storage.CONNECT_TIMEOUT_S,
        "read_timeout": storage.READ_TIMEOUT_S,
        "retries": {"total_max_attempts": storage.ATTEMPTS, "mode": "standard"},
    }
    assert fs.retries == 1  # s3fs's own loop does not multiply botocore's attempts
    mine = {"read_timeout": 3, "retries": {"max_attempts": 1, "mode": "adaptive"}}
    options = {"endpoint_url": "http://127.0.0.1:9", "config_kwargs": mine}
    fs, _ = storage.filesystem("s3://bucket/key", options)
    assert fs.config_kwargs == {**mine, "connect_timeout": storage.CONNECT_TIMEOUT_S}
    assert options["config_kwargs"] is mine and mine == {
        "read_timeout": 3,
        "retries": {"max_attempts": 1, "mode": "adaptive"},
    }  # the caller's dicts are left as they were
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "7")  # botocore's own setting is respected
    fs, _ = storage.filesystem("s3://bucket/other", {"endpoint_url": "http://127.0.0.1:9"})
    assert fs.config_kwargs["retries"] == {"mode": "standard"}
