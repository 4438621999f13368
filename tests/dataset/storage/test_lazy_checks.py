"""Checksums of a data set in object storage checked as the reads need them
(jisu/dataset/record/shard_checks.py), against moto's S3 server: epoch 1 starts before every
shard is checked, the checks follow the epoch's shard order, a damaged shard fails its own reads
and no others, and nothing of a shard is served before its check passed."""

from __future__ import annotations

import os
import pickle
import threading

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.record import remote, shard_checks, storage
from jisu.dataset.record.validate import MalformedFileError

from .test_records_s3 import assert_rows_equal, expected, make_rows, read_all, write

pytestmark = pytest.mark.timeout(60)

ROWS = make_rows(96)  # 12 record batches of 8 rows (test_records_s3's small_blocks fixture)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    from jisu.dataset.record import writer as writer_module

    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 8)


def shard_of_rows(reader) -> dict[int, int]:
    """Global row index -> its shard, from the reader's layout."""
    return {int(i): s for s in range(len(reader.shard_rows)) for i in reader.shard_indices(s)}


def damage(s3, shard_url: str) -> None:
    """One bit off in the shard's first record batch: same size, wrong checksum."""
    fs = s3.fs()
    key = shard_url.removeprefix("s3://")
    data = bytearray(fs.cat(key))
    data[200] ^= 0x01
    fs.pipe_file(key, bytes(data))


class Gate:
    """Holds the whole-shard reads of every shard but those let through until opened."""

    def __init__(self, monkeypatch, shard_urls: list[str], through: set[int]) -> None:
        self.open = threading.Event()
        self.started: list[int] = []
        real = remote.read_whole

        def gated(file, *args):
            k = shard_urls.index(file.url)
            self.started.append(k)
            if k not in through:
                assert self.open.wait(30)
            return real(file, *args)

        monkeypatch.setattr(remote, "read_whole", gated)


def test_epoch_one_starts_before_the_other_shards_are_checked(s3, monkeypatch):
    url = f"s3://{s3.bucket}/lazy/train.rec"
    writer = write(url, ROWS, shards=4)
    gate = Gate(monkeypatch, writer.paths, through={0})
    try:
        data = ds.RecordDataset(url, shuffle=False, num_parallel_workers=1)
        reader = data.reader
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        first = [next(it) for _ in range(8)]  # shard 0's first record batch
        assert_rows_equal([tuple(np.asarray(c) for c in r) for r in first], expected(ROWS[:8]))
        assert reader._checks.passed(0)
        assert not any(reader._checks.passed(k) for k in (1, 2, 3))  # held at the gate
    finally:
        gate.open.set()
    rest = [tuple(np.asarray(c) for c in row) for row in it]
    assert_rows_equal(rest, expected(ROWS[8:]))
    assert sorted(gate.started) == [0, 1, 2, 3]  # each shard read in full once


def test_opening_waits_for_no_shard_check(s3, monkeypatch):
    """The data set is built (and the caller goes on) while its shards are checked (read in
    full, into the cache when there is one): no row is read at build time, the schema comes
    from the manifest."""
    url = f"s3://{s3.bucket}/build/train.rec"
    writer = write(url, ROWS, shards=3)
    gate = Gate(monkeypatch, writer.paths, through=set())  # every check held
    built = threading.Event()

    def build():
        ds.RecordDataset(url, shuffle=False)
        built.set()

    thread = threading.Thread(target=build, daemon=True)
    thread.start()
    try:
        assert built.wait(30)  # built while no check could finish
    finally:
        gate.open.set()
    thread.join(30)


def test_the_checks_follow_the_shard_order_of_the_epoch(s3, monkeypatch):
    monkeypatch.setattr(shard_checks, "WORKERS", 1)  # one check at a time: a strict order
    monkeypatch.setattr(shard_checks.ShardChecks, "check_all", lambda self: None)  # plans only
    url = f"s3://{s3.bucket}/order/train.rec"
    writer = write(url, ROWS, shards=6)
    gate = Gate(monkeypatch, writer.paths, through=set(range(6)))
    data = ds.RecordDataset(url, shuffle=ds.Shuffle.FILES, num_parallel_workers=1)
    shard_of = shard_of_rows(data.reader)
    labels = [int(row[1]) // 10**12 for row in read_all(data)]  # i64 = k * 10**12
    assert sorted(labels) == list(range(96))
    needed = list(dict.fromkeys(shard_of[k] for k in labels))  # shards in first-read order
    assert gate.started == needed  # nothing read when the data set was opened


def test_opening_checks_every_shard_in_the_background_in_shard_order(s3, monkeypatch):
    monkeypatch.setattr(shard_checks, "WORKERS", 1)
    url = f"s3://{s3.bucket}/background/train.rec"
    writer = write(url, ROWS, shards=5)
    gate = Gate(monkeypatch, writer.paths, through=set(range(5)))
    reader = ds.RecordDataset(url, shuffle=False).reader  # no row read beyond the first
    for event in reader._checks._events:  # waited for, not asked for: the background's
        assert event.wait(30)
    assert reader._checks.all_passed()
    assert gate.started == [0, 1, 2, 3, 4]  # once each, in shard order


@pytest.mark.parametrize("cached", [False, True])
def test_a_damaged_shard_fails_its_own_reads_and_no_others(s3, tmp_path, cached):
    url = f"s3://{s3.bucket}/damaged/train.rec"
    writer = write(url, ROWS, shards=3)
    damage(s3, writer.paths[2])
    cache = tmp_path / "cache"
    options = {"cache_dir": str(cache)} if cached else {}
    data = ds.RecordDataset(url, shuffle=False, **options)  # shard 0 is checked: fine
    reader = data.reader
    shard_of = shard_of_rows(reader)
    want = expected(ROWS)
    for k in range(96):
        if shard_of[k] == 2:
            for _ in range(2):  # every read of the shard, not only the first
                with pytest.raises(MalformedFileError, match=rf"'{writer.paths[2]}'.*checksum"):
                    reader[k]
        else:
            assert_rows_equal([tuple(np.asarray(c) for c in reader[k])], [want[k]])
    with pytest.raises(RuntimeError, match="checksum") as caught:
        read_all(data)
    assert isinstance(caught.value, MalformedFileError) and writer.paths[2] in str(caught.value)
    if cached:  # the good shards' copies, none of the damaged one
        assert len([n for n in os.listdir(cache) if n.endswith(".arrow")]) == 2
        assert not [n for n in os.listdir(cache) if ".tmp-" in n]


def test_a_worker_checks_the_shards_its_parent_had_not(s3, monkeypatch):
    monkeypatch.setattr(shard_checks.ShardChecks, "check_all", lambda self: None)
    url = f"s3://{s3.bucket}/pickled/train.rec"
    writer = write(url, ROWS, shards=3)
    reader = ds.RecordDataset(url, shuffle=False).reader  # shard 0 checked, 1 and 2 not
    state = pickle.dumps(reader)
    damage(s3, writer.paths[1])  # before the worker opens it: the worker's own check fails
    early = pickle.loads(state)
    assert early._checks is not None and not early._checks.passed(1)
    with pytest.raises(MalformedFileError, match="checksum"):
        early[int(reader.shard_indices(1)[0])]


def test_a_reader_pickled_after_every_check_passed_trusts_them(s3):
    url = f"s3://{s3.bucket}/checked/train.rec"
    write(url, ROWS, shards=2)
    data = ds.RecordDataset(url, shuffle=False)
    assert_rows_equal(read_all(data), expected(ROWS))  # every shard read: all checked
    assert data.reader._checks.all_passed()
    late = pickle.loads(pickle.dumps(data.reader))
    assert late._checks is None  # nothing to check again
    assert_rows_equal([tuple(np.asarray(c) for c in late[k]) for k in range(96)], expected(ROWS))


@pytest.mark.parametrize("cached", [False, True])
def test_a_check_abandoned_by_a_stopping_run_is_made_again_by_the_next_read(
    s3, tmp_path, monkeypatch, cached
):
    """A read that checks a shard on a pipeline thread is abandoned when its iterator closes
    (Stopped): that is not the shard's failure, and no unchecked row is served after it."""
    from jisu.dataset.engine.context import Stopped

    monkeypatch.setattr(shard_checks.ShardChecks, "check_all", lambda self: None)
    url = f"s3://{s3.bucket}/stopped/train.rec"
    writer = write(url, ROWS, shards=2)
    real, calls = remote.read_whole, []

    def stopping_once(file, *args):
        calls.append(file.url)
        if file.url == writer.paths[1] and calls.count(file.url) == 1:
            raise Stopped("the pipeline stopped")
        return real(file, *args)

    monkeypatch.setattr(remote, "read_whole", stopping_once)
    monkeypatch.setattr(storage, "read_whole", stopping_once)  # the cache's download
    options = {"cache_dir": str(tmp_path / "cache")} if cached else {}
    reader = ds.RecordDataset(url, shuffle=False, **options).reader
    k = int(reader.shard_indices(1)[0])
    with pytest.raises(Stopped):
        reader[k]
    assert not reader._checks.passed(1) and reader._shards[1].error is None
    assert_rows_equal([tuple(np.asarray(c) for c in reader[k])], [expected(ROWS)[k]])
    assert calls.count(writer.paths[1]) == 2 and reader._checks.passed(1)
    if cached:  # the second check filled the cache: the shard is read from its copy
        assert reader._shards[1].local is not None


def test_a_worker_checks_a_shard_replaced_since_its_parent_checked_it(s3):
    """The parent's checks hold for the object versions it checked: a shard replaced by one of
    the same size before a worker opens it is checked again there, not trusted."""
    url = f"s3://{s3.bucket}/replaced/train.rec"
    writer = write(url, ROWS, shards=2)
    data = ds.RecordDataset(url, shuffle=False)
    assert_rows_equal(read_all(data), expected(ROWS))  # every shard checked in the parent
    damage(s3, writer.paths[1])
    worker = pickle.loads(pickle.dumps(data.reader))
    assert worker._checks is not None and worker._checks.passed(0)
    with pytest.raises(MalformedFileError, match=rf"'{writer.paths[1]}'.*checksum"):
        worker[int(worker.shard_indices(1)[0])]
