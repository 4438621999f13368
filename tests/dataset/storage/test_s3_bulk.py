"""Whole-shard downloads on botocore's blocking client (record/s3_bulk.py), against moto's S3
server over HTTP through the counting proxy: the bytes and checksums of the s3fs path, one
pinned GET per shard, the s3fs path kept where the client could not carry the options, and
the errors of a missing, replaced or unreachable object."""

from __future__ import annotations

import threading
import time
import zlib

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.context import Stopped
from jisu.dataset.record import s3_bulk, storage, storage_requests
from jisu.dataset.record.storage import StorageError, filesystem, open_remote, read_whole
from jisu.dataset.record.validate import MalformedFileError

from .test_records_s3 import wait_fills
from .test_storage_faults import SMALL, Relay, replace_with_same_size

pytestmark = pytest.mark.timeout(60)


def put(s3, name: str, data: bytes) -> str:
    s3.fs().pipe_file(f"{s3.bucket}/{name}", data)
    return f"s3://{s3.bucket}/{name}"


def remote(url: str, options: dict | None = None) -> storage.RemoteFile:
    fs, path = filesystem(url, options)
    return open_remote(fs, path, url)


def test_a_whole_object_is_one_pinned_get_on_botocores_client_with_the_same_crc(s3, monkeypatch):
    data = np.random.default_rng(0).bytes(3 << 20)
    url = put(s3, "blob", data)
    file = remote(url, {"endpoint_url": s3.proxy.url})
    assert s3_bulk.bulk_client(file.fs, url) is not None
    s3.proxy.reset()

    def no_s3fs(*args):
        raise AssertionError("a whole-object read went through s3fs")

    monkeypatch.setattr(storage.RemoteFile, "_get", no_s3fs)
    sink = bytearray()
    assert read_whole(file, type("Sink", (), {"write": lambda self, b: sink.extend(b)})()) == (
        zlib.crc32(data)
    )
    assert bytes(sink) == data
    assert s3.proxy.gets == [(f"/{s3.bucket}/blob", f"bytes=0-{len(data) - 1}", len(data))]


def test_the_client_shares_the_service_models_s3fs_loaded(s3):
    """botocore's JSON models are parsed once per process, not again for the bulk client."""
    url = put(s3, "blob", b"x" * 100)
    file = remote(url)  # a request on s3fs: its session has loaded the models
    client = s3_bulk.bulk_client(file.fs, url)
    assert client._loader is file.fs.session.get_component("data_loader")
    assert client.get_object(Bucket=s3.bucket, Key="blob")["Body"].read() == b"x" * 100


def test_objects_larger_than_a_request_are_read_in_order_in_several(s3, monkeypatch):
    monkeypatch.setattr(storage, "BULK_CHUNK_BYTES", 1 << 20)
    data = np.random.default_rng(1).bytes((5 << 20) + 123)
    url = put(s3, "big", data)
    file = remote(url, {"endpoint_url": s3.proxy.url})
    s3.proxy.reset()
    assert read_whole(file) == zlib.crc32(data)
    assert len(s3.proxy.gets) == 6
    assert sum(n for _, _, n in s3.proxy.gets) == len(data)


def test_a_record_data_set_reads_the_same_rows_with_and_without_the_bulk_client(s3, tmp_path):
    url = f"s3://{s3.bucket}/rows/train.rec"
    writer = ds.FileWriter(url, shard_num=3)
    writer.add_schema({"k": {"type": "int64"}, "v": {"type": "bytes"}})
    rows = [{"k": np.int64(k), "v": bytes([k % 251]) * (k % 97 + 1)} for k in range(600)]
    writer.write_raw_data(rows)
    writer.commit()

    def read(cache: str) -> list:
        data = ds.RecordDataset(url, shuffle=False, cache_dir=cache)
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        return [(int(k), bytes(v)) for k, v in it]

    expected = [(int(r["k"]), r["v"]) for r in rows]
    assert read(str(tmp_path / "a")) == expected
    wait_fills()  # the cache is filled in the background: compared once both are complete
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(s3_bulk, "bulk_client", lambda fs, url: None)
        assert read(str(tmp_path / "b")) == expected
    wait_fills()
    cached = sorted(p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert cached == sorted(p.read_bytes() for p in (tmp_path / "b").rglob("*") if p.is_file())


def test_options_the_client_cannot_carry_keep_the_s3fs_path(s3):
    url = f"s3://{s3.bucket}/x"
    sse = {"s3_additional_kwargs": {"ServerSideEncryption": "AES256"}}
    assert s3_bulk.bulk_client(filesystem(url, sse)[0], url) is None
    import aiobotocore.session

    session = {"session": aiobotocore.session.AioSession()}
    assert s3_bulk.bulk_client(filesystem(url, session)[0], url) is None
    assert s3_bulk.bulk_client(object(), url) is None  # not s3fs
    assert s3_bulk.bulk_client(filesystem(url)[0], "gs://b/x") is None


def test_a_replaced_object_is_an_error_naming_it_not_other_bytes(s3):
    url = put(s3, "replaced", np.random.default_rng(2).bytes(1 << 20))
    file = remote(url)
    replace_with_same_size(s3.fs(), url.removeprefix("s3://"))
    with pytest.raises(MalformedFileError, match="changed after it was opened") as caught:
        read_whole(file)
    assert url in str(caught.value)


def test_a_removed_object_is_file_not_found_naming_it(s3):
    url = put(s3, "gone", b"x" * 1000)
    file = remote(url)
    s3.fs().rm_file(url.removeprefix("s3://"))
    with pytest.raises(FileNotFoundError, match="gone"):
        read_whole(file)


def test_a_silent_server_fails_within_the_timeouts_naming_the_url(s3):
    relay = Relay(s3.endpoint)
    try:
        url = put(s3, "silent", b"y" * 100_000)
        file = remote(url, {"endpoint_url": relay.endpoint, "config_kwargs": SMALL})
        relay.silent.set()
        with pytest.raises(StorageError, match=r"read_timeout=0\.5") as caught:
            read_whole(file)
        assert url in str(caught.value)
    finally:
        relay.close()


def test_a_stopped_run_abandons_the_wait_at_once(s3, monkeypatch):
    """The waiting thread leaves as soon as its run's stop flag is set, with a 60 s read
    timeout; the request's own thread ends within its timeouts (not waited for)."""
    relay = Relay(s3.endpoint)
    try:
        url = put(s3, "stalled", b"z" * 100_000)
        patient = {"connect_timeout": 60, "read_timeout": 60}
        file = remote(url, {"endpoint_url": relay.endpoint, "config_kwargs": patient})
        relay.silent.set()
        stop = threading.Event()
        monkeypatch.setattr("jisu.dataset.engine.thread_pool.current_stop", lambda: stop)
        outcome = []

        def wait() -> None:
            try:
                read_whole(file)
            except BaseException as exc:
                outcome.append(exc)

        waiter = threading.Thread(target=wait)
        waiter.start()
        while not storage_requests._inflight:
            time.sleep(0.02)
        began = time.monotonic()
        stop.set()
        waiter.join(5)
        assert not waiter.is_alive() and time.monotonic() - began < 2
        assert isinstance(outcome[0], Stopped)
        assert not storage_requests._inflight
    finally:
        relay.close()
