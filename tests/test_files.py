"""atomic_write: the old file or the whole new one, and a full disk said in words."""

from __future__ import annotations

import errno
import os
import tempfile

import pytest

from jisu.files import atomic_write


def use_full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make atomic_write's temporary file a real file whose writes go to ``/dev/full``, where
    the kernel itself fails every write with ENOSPC (fault injection at the lowest level a
    test reaches without root or a tmpfs)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, path = real(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), path

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


@pytest.mark.parametrize(
    "mode, old, new",
    [("w", "old", "new" * 10), ("wb", b"old", b"n" * 99999)],  # buffered; past the buffer
    ids=["text", "binary"],
)
def test_a_full_disk_is_named_and_leaves_the_old_file(tmp_path, monkeypatch, mode, old, new):
    path = tmp_path / "report.json"
    with atomic_write(str(path), mode) as f:
        f.write(old)
    use_full_disk(monkeypatch)
    full = pytest.raises(OSError, match="No space left on the device")
    with full as caught, atomic_write(str(path), mode) as f:
        f.write(new)
    assert caught.value.errno == errno.ENOSPC  # callers can still catch it by errno
    assert caught.value.filename == str(path)
    assert f"folder '{tmp_path}'" in str(caught.value)
    assert "'report.json' was not written" in str(caught.value)
    assert os.listdir(tmp_path) == ["report.json"]  # no temporary file left
    assert path.read_bytes() == (old.encode() if isinstance(old, str) else old)


def test_an_error_in_the_block_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("old")
    with pytest.raises(KeyError), atomic_write(str(path), "w") as f:
        f.write("partial")
        raise KeyError("boom")
    assert os.listdir(tmp_path) == ["a.txt"]
    assert path.read_text() == "old"


def test_other_os_errors_pass_through_unchanged(tmp_path):
    with pytest.raises(PermissionError, match="nope"), atomic_write(str(tmp_path / "a.txt"), "w"):
        raise PermissionError(errno.EACCES, "nope")
    assert os.listdir(tmp_path) == []


def test_the_file_gets_the_mode_a_plain_open_gives(tmp_path):
    """mkstemp creates 0600 files; what atomic_write publishes follows the umask like open()."""
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    path = tmp_path / "atomic.txt"
    with atomic_write(str(path), "w") as f:
        f.write("x")
    assert os.stat(path).st_mode & 0o777 == os.stat(plain).st_mode & 0o777
