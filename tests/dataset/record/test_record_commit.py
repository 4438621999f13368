"""Commits of the jisu record format: two writers of one name never both win, a reader sees the
old data set or the new one whenever a writer dies, and a killed writer's files are removed
by the next writer of the name (and reported by ``jisu convert``)."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.cli import main
from jisu.dataset.record import writer as writer_module

SCHEMA = {"x": {"type": "int64"}, "v": {"type": "float32", "shape": [3]}}


def start(path, xs, shards: int = 1, **kwargs) -> ds.FileWriter:
    """A writer of rows ``x`` (``v = [x, x, x]``), not yet committed."""
    writer = ds.FileWriter(str(path), shard_num=shards, **kwargs)
    writer.add_schema(SCHEMA)
    writer.write_raw_data([{"x": x, "v": np.full(3, x, np.float32)} for x in xs])
    return writer


def write(path, xs, shards: int = 1, **kwargs) -> None:
    start(path, xs, shards, **kwargs).commit()


def xs_of(path) -> list[int]:
    """The x column in written order, checking v agrees with it."""
    data = ds.RecordDataset(str(path), shuffle=False)
    rows = [(int(x), v.tolist()) for x, v in data.create_tuple_iterator(output_numpy=True)]
    assert all(v == [x] * 3 for x, v in rows)
    return [x for x, _ in rows]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(writer_module, "MAX_BLOCK_ROWS", 4)


# ---------------------------------------------------------------- one winner
@pytest.mark.parametrize("shards", [(1, 1), (2, 2), (1, 3), (3, 1)])
def test_of_two_writers_of_one_name_the_second_to_commit_fails(tmp_path, shards):
    path = tmp_path / "data.rec"
    first = start(path, range(10), shards[0])
    second = start(path, range(100, 107), shards[1])  # both passed the constructor's check
    first.commit()
    with pytest.raises(
        FileExistsError, match=r"commit: '[^']*data.rec(\d|.manifest.json)?' already exists"
    ):
        second.commit()
    assert xs_of(path) == list(range(10))
    manifest = json.loads((tmp_path / "data.rec.manifest.json").read_text())
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["data.rec.manifest.json", *(s["file"] for s in manifest["shards"])]
    )  # nothing of the second writer stays


def test_without_hard_links_a_commit_still_checks_and_publishes(tmp_path, monkeypatch):
    def no_links(source, target):
        raise PermissionError(errno.EPERM, "hard links not supported", target)

    monkeypatch.setattr(os, "link", no_links)
    first = start(tmp_path / "data.rec", range(5), shards=2)
    second = start(tmp_path / "data.rec", range(50, 55), shards=2)
    first.commit()
    with pytest.raises(FileExistsError):
        second.commit()
    assert xs_of(tmp_path / "data.rec") == list(range(5))
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


# ---------------------------------------------------------------- dying anywhere in commit
class Died(BaseException):
    """The writer's process ends here (nothing after runs, no cleanup)."""


def commit_dying_at(writer: ds.FileWriter, monkeypatch, step: int) -> bool:
    """Commit, dying at the ``step``-th call that names or removes a file; returns whether
    the writer died (False: it committed before reaching that step)."""
    calls = [0]

    def dying(real):
        def call(*args, **kwargs):
            calls[0] += 1
            if calls[0] == step:
                raise Died
            return real(*args, **kwargs)

        return call

    with monkeypatch.context() as patch:
        for name in ("link", "replace", "rename", "remove", "unlink"):
            patch.setattr(os, name, dying(getattr(os, name)))
        try:
            writer.commit()
        except Died:
            writer._cleanup.detach()  # a killed process runs no finalizer
            return True
    return False


@pytest.mark.parametrize("old_shards, new_shards", [(None, 2), (1, 1), (2, 3), (3, 1)], ids=str)
def test_a_reader_sees_the_old_or_the_new_data_set_whenever_the_writer_dies(
    tmp_path, monkeypatch, old_shards, new_shards
):
    old, new = list(range(10)), list(range(100, 113))
    seen = []
    for step in range(1, 40):
        path = tmp_path / str(step) / "data.rec"
        path.parent.mkdir()
        if old_shards is not None:
            write(path, old, old_shards)
        writer = start(path, new, new_shards, overwrite=True)
        died = commit_dying_at(writer, monkeypatch, step)
        try:
            got = xs_of(path)
        except FileNotFoundError:  # no data set yet: the old state of a first write
            assert old_shards is None
            got = None
        assert got in ([*old] if old_shards is not None else None, new)
        seen.append(got == new)
        if not died:
            break
        write(path, range(7), overwrite=True)  # the next writer recovers the name
        assert xs_of(path) == list(range(7))
    assert seen[0] is False and seen[-1] is True  # both outcomes were reached
    assert not died


def test_overwrite_removes_the_old_shards_and_nothing_else(tmp_path):
    path = tmp_path / "data.rec"
    write(path, range(10), shards=3)
    (tmp_path / "precious.txt").write_text("not a shard")
    manifest = tmp_path / "data.rec.manifest.json"
    write(path, range(20, 25), shards=2, overwrite=True)
    # a hostile manifest listing another file of the folder does not make overwrite delete it
    content = json.loads(manifest.read_text())
    content["shards"].append({**content["shards"][0], "file": "precious.txt"})
    manifest.write_text(json.dumps(content))
    write(path, range(40, 44), shards=2, overwrite=True)
    assert xs_of(path) == list(range(40, 44))
    names = sorted(os.listdir(tmp_path))
    listed = [s["file"] for s in json.loads(manifest.read_text())["shards"]]
    assert names == sorted(["data.rec.manifest.json", "precious.txt", *listed])
    assert all(n.startswith("data.rec.g") for n in listed)
    assert xs_of(tmp_path / listed[1]) == list(range(40, 44))  # a shard's path finds its set


# ---------------------------------------------------------------- a killed writer's files
KILLED_OVERWRITE = """
    import os, signal
    import numpy as np
    import jisu.dataset as ds
    writer = ds.FileWriter({path!r}, shard_num=2, overwrite=True)
    writer.add_schema({{"x": {{"type": "int64"}}, "v": {{"type": "float32", "shape": [3]}}}})
    writer.write_raw_data([{{"x": x, "v": np.full(3, x, np.float32)}} for x in range(30)])
    replace, calls = os.replace, []

    def replace_then_die(source, target):  # killed after publishing its first shard
        calls.append(target)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        replace(source, target)

    os.replace = replace_then_die
    writer.commit()
"""


def test_the_next_writer_removes_a_killed_writers_files_and_convert_says_so(tmp_path, capsys):
    path = tmp_path / "data.rec"
    write(path, range(10))
    script = textwrap.dedent(KILLED_OVERWRITE.format(path=str(path)))
    killed = subprocess.run([sys.executable, "-c", script], timeout=120)
    assert killed.returncode == -9
    assert xs_of(path) == list(range(10))  # killed before its commit point
    left = {n: os.path.getsize(tmp_path / n) for n in os.listdir(tmp_path)}
    left = {n: size for n, size in left.items() if n not in ("data.rec", "data.rec.manifest.json")}
    # a temporary shard, a temporary manifest and a shard published under its new name
    assert sum(".tmp-" in n for n in left) == 2 and sum(".g" in n for n in left) == 1, left

    # a live writer's files are never touched: this process's, and pid 1's (always alive)
    tag = re.search(r"\.tmp-\d+-([0-9a-f]{8})", " ".join(left))[1]  # this host's
    kept = {
        f"data.rec0.tmp-{os.getpid()}-{tag}00000000",
        f"data.rec.g{os.getpid()}-{tag}111111110",
        f"data.rec.manifest.json.tmp-1-{tag}22222222",
    }
    for name in kept:
        (tmp_path / name).write_bytes(b"a live writer's")

    x = np.arange(5, dtype=np.int64)
    np.savez(tmp_path / "arrays.npz", x=x, v=np.repeat(x[:, None], 3, axis=1).astype(np.float32))
    assert main(["convert", str(tmp_path / "arrays.npz"), str(path), "--overwrite"]) == 0
    out = capsys.readouterr().out
    freed = sum(left.values()) / (1 << 20)
    assert f"removed 3 file(s) left by killed writers of {path} ({freed:.1f} MiB freed)" in out
    assert all(name in out for name in left)
    assert not any(name in out for name in kept)
    assert kept <= set(os.listdir(tmp_path)) and not set(left) & set(os.listdir(tmp_path))
    assert xs_of(path) == list(range(5))
