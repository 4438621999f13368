"""Servers that are not quite S3 (issue 47, items 4, 8 and 16), against moto's standalone server
over HTTP behind a misbehaving relay on 127.0.0.1 (:mod:`.relays`):

* one that drips its answers (headers, then a byte every 0.2 s) never tripped the per-``recv``
  read timeout: every request now has a deadline (injected small here), and its error names
  the URL, the bytes received and the deadline;
* one that ignores ``If-Match`` served a shard replaced by as many bytes, altered: each
  answer's ETag is compared with the one opened; one that sends no ETag at all is warned
  about once per store;
* one that ignores ``Range`` (200 and the whole object) was "shorter than expected": the bytes
  needed are taken from the whole answer when it is the object opened, else the error says
  what the server did.

Timeouts here are hang guards; the verdicts are the errors and rows themselves.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record import remote_answers
from jisu.dataset.record import writer as writer_module
from jisu.dataset.record.storage import StorageError
from jisu.dataset.record.validate import MalformedFileError

from .relays import FaultyRelay

pytestmark = pytest.mark.timeout(60)
PATIENT = {"connect_timeout": 5, "read_timeout": 5, "retries": {"total_max_attempts": 1}}


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Record batches of 8 rows: 400 rows are 50 batches, more than a reader keeps."""
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)
    monkeypatch.setattr(remote_answers, "_warned", set())


@pytest.fixture
def relay(s3):
    relay = FaultyRelay(s3.endpoint)
    yield relay
    relay.close()


def write_rows(url: str, n: int = 400) -> ds.FileWriter:
    """``n`` rows of ~1 KiB (row k holds k everywhere), written to moto directly."""
    writer = ds.FileWriter(url, shard_num=1)
    writer.add_schema({"k": {"type": "int64"}, "v": {"type": "float32", "shape": [256]}})
    writer.write_raw_data([{"k": np.int64(k), "v": np.full(256, k, np.float32)} for k in range(n)])
    writer.commit()
    return writer


def rows(data: ds.Dataset) -> list[int]:
    out = list(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert all((r[1] == int(r[0])).all() for r in out)
    return [int(r[0]) for r in out]


def replace(s3, shard: str, data: bytes) -> None:
    s3.fs().pipe_file(shard.removeprefix("s3://"), data)


def altered(s3, shard: str) -> bytes:
    """The shard's bytes with some record values changed, as many bytes."""
    data = bytearray(s3.fs().cat_file(shard.removeprefix("s3://")))
    middle = slice(len(data) // 2, len(data) // 2 + 1000)
    data[middle] = bytes(255 - b for b in data[middle])
    return bytes(data)


# ------------------------------------------------------------------ item 4: a dripping server


@pytest.mark.parametrize("whole", [False, True], ids=["ranged-read", "whole-shard-check"])
def test_a_server_that_drips_its_answer_fails_at_the_request_deadline(s3, relay, whole):
    """The relay sends each dripped answer's headers, then a byte every 0.2 s: the 5 s read
    timeout (per recv) never trips; the injected 8 s deadline of the request does. Ranged
    reads go through s3fs, whole-shard reads (checksums) through botocore's blocking client.
    The deadline covers every request of the read, the undripped ones too: 1.5 s failed an
    undripped size request beside two busy loops, so it is a few times what they take there."""
    url = f"s3://{s3.bucket}/drip/train.rec"
    shard = write_rows(url).paths[0]
    key = shard.removeprefix("s3://")
    options = {
        "endpoint_url": relay.url,
        "config_kwargs": PATIENT,
        "request_deadline": 8,
        "min_transfer_rate": 0,
    }
    data = ds.RecordDataset(url, shuffle=False, verify=whole, storage_options=options)
    if whole:  # the download that checks the shard (its checks start at the open)
        relay.drip = lambda method, path, rng: path.endswith(key) and rng.startswith("bytes=0-")
    else:  # a record batch's read
        relay.drip = lambda method, path, rng: path.endswith(key) and method == "GET"
    with pytest.raises(RuntimeError) as caught:
        rows(data)
    error = caught.value
    assert isinstance(error, StorageError), repr(error)
    message = str(error)
    assert shard in message and "deadline of 8 s" in message, message
    assert "bytes received" in message and "request_deadline" in message, message
    assert relay.dripped >= 1


def test_the_deadline_settings_are_checked_and_scale_with_the_size():
    pytest.importorskip("s3fs")
    from jisu.dataset.record import storage

    fs, _ = storage.filesystem("s3://b/k", {"endpoint_url": "http://127.0.0.1:9"})
    default = remote_answers.REQUEST_DEADLINE_S
    assert remote_answers.deadline_for(fs, 0) == default
    assert remote_answers.deadline_for(fs, 32 << 20) == default + (32 << 20) / (64 << 10)
    options = {"endpoint_url": "http://127.0.0.1:9", "request_deadline": 7, "min_transfer_rate": 0}
    fs, _ = storage.filesystem("s3://b/k", options)
    assert remote_answers.deadline_for(fs, 1 << 30) == 7.0
    assert "request_deadline" not in fs.storage_options  # not passed on to s3fs / botocore
    for bad in ({"request_deadline": 0}, {"request_deadline": "5"}, {"min_transfer_rate": -1}):
        with pytest.raises(ValueError, match="storage_options"):
            storage.filesystem("s3://b/k", {"endpoint_url": "http://127.0.0.1:9", **bad})


# ------------------------------------------------------------------ item 8: If-Match, ETags


def test_a_server_that_ignores_if_match_cannot_serve_a_replaced_shard(s3, relay):
    relay.drop_if_match = True
    url = f"s3://{s3.bucket}/ifmatch/train.rec"
    shard = write_rows(url).paths[0]
    data = ds.RecordDataset(url, shuffle=False, storage_options={"endpoint_url": relay.url})
    assert rows(data) == list(range(400))
    replace(s3, shard, altered(s3, shard))  # as many bytes, some values changed
    with pytest.raises(RuntimeError, match="changed while reading") as caught:
        rows(data)
    assert isinstance(caught.value, MalformedFileError)
    assert shard in str(caught.value) and "ETag" in str(caught.value)


def test_a_store_without_etags_is_warned_about_once(s3, relay):
    relay.strip_etag = True
    options = {"endpoint_url": relay.url}
    first, second = f"s3://{s3.bucket}/a/train.rec", f"s3://{s3.bucket}/b/train.rec"
    write_rows(first, 40)
    write_rows(second, 40)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for url in (first, second):
            assert rows(ds.RecordDataset(url, shuffle=False, storage_options=options)) == list(
                range(40)
            )
    unverified = [str(w.message) for w in caught if "cannot be verified" in str(w.message)]
    assert len(unverified) == 1, unverified  # once per store
    assert s3.bucket in unverified[0] and relay.url in unverified[0]


# ------------------------------------------------------------------ item 16: Range ignored


@pytest.mark.parametrize("verify", [False, True])
def test_a_server_that_ignores_range_still_serves_the_right_rows(s3, relay, verify):
    relay.drop_range = True
    url = f"s3://{s3.bucket}/norange/train.rec"
    write_rows(url, 80)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = ds.RecordDataset(
            url, shuffle=False, verify=verify, storage_options={"endpoint_url": relay.url}
        )
        assert rows(data) == list(range(80))
    ignored = [str(w.message) for w in caught if "ignores Range" in str(w.message)]
    assert len(ignored) == 1, [str(w.message) for w in caught]


def test_a_whole_object_of_another_size_is_an_error_saying_the_range_was_ignored(s3, relay):
    """Range, If-Match and ETags all ignored, and the shard replaced by a longer one: the
    answer is not the object opened, and the error says what the server did."""
    relay.drop_range = relay.drop_if_match = relay.strip_etag = True
    url = f"s3://{s3.bucket}/longer/train.rec"
    shard = write_rows(url, 80).paths[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = ds.RecordDataset(
            url, shuffle=False, verify=False, storage_options={"endpoint_url": relay.url}
        )
        replace(s3, shard, s3.fs().cat_file(shard.removeprefix("s3://")) + b"\0" * 100)
        with pytest.raises(RuntimeError, match="ignored the byte range") as caught:
            rows(data)
    message = str(caught.value)
    assert isinstance(caught.value, MalformedFileError)
    assert shard in message and "whole object" in message and "shorter" not in message


# ------------------------------------------------------------------ the answer checks alone


def answer(status: int = 206, **fields: object) -> dict:
    return {"ResponseMetadata": {"HTTPStatusCode": status}, **fields}


PIN = {"ETag": '"abc"', "VersionId": "v1"}


@pytest.mark.parametrize(
    ("response", "match"),
    [
        (answer(ETag='"xyz"', ContentRange="bytes 10-19/100"), "ETag"),
        (answer(ETag='"abc"', VersionId="v2", ContentRange="bytes 10-19/100"), "version v2"),
        (answer(ETag='"abc"', ContentRange="bytes 10-19/120"), "now has 120 bytes"),
        (answer(ETag='"abc"', ContentRange="bytes 0-9/100"), "other bytes"),
        (answer(ETag='"abc"'), "no valid Content-Range"),
        (answer(200, ETag='"abc"', ContentLength=120), "ignored the byte range"),
    ],
)
def test_an_answer_of_another_object_or_other_bytes_is_refused(response, match):
    with pytest.raises(MalformedFileError, match=match) as caught:
        remote_answers.answer_offset(response, "s3://b/k", "store", 10, 20, 100, PIN)
    assert "s3://b/k" in str(caught.value)


def test_what_an_answer_gives_and_what_is_warned():
    ranged = answer(ETag='W/"abc"', VersionId="v1", ContentRange="bytes 10-19/100")
    assert remote_answers.answer_offset(ranged, "s3://b/k", "s", 10, 20, 100, PIN) == 0
    whole = answer(200, ETag='"abc"', ContentLength=100)
    with pytest.warns(RuntimeWarning, match="ignores Range") as caught:
        for _ in range(2):  # once per store
            assert remote_answers.answer_offset(whole, "s3://b/k", "s", 10, 20, 100, PIN) == 10
    assert len(caught) == 1
    with pytest.warns(RuntimeWarning, match="carry no ETag"):
        remote_answers.answer_offset(
            answer(ContentRange="bytes 10-19/100"), "s3://b/k", "t", 10, 20, 100, PIN
        )
