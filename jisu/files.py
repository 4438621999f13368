"""Atomic file writes: readers see the old file or the whole new one, never a partial one."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from typing import IO

# A full disk, or a full quota: both mean "no room to write", and callers may catch either.
_NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "wb") -> Iterator[IO]:
    """Write ``path`` through a temporary file in the same folder, fsync it, rename it over
    ``path``, then fsync the folder (so the rename survives a power cut too).

    Guarantees: on any error (an exception in the caller's block, a full disk, a kill) ``path``
    keeps its previous content, or stays absent; on an error the temporary file
    (``.tmp-*`` in the same folder) is removed. Text modes write UTF-8.

    Raises:
        OSError: with ``errno`` ENOSPC (or EDQUOT) when the disk or quota is full, whether the
            caller's writes, the flush or the fsync found it; the message names the file and
            its folder and ``filename`` is ``path``, so ``except OSError as e: e.errno`` works.
    """
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.splitext(path)[1], dir=folder)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open() would not
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in _NO_SPACE:
            raise _disk_full_error(exc, path) from exc
        raise
    _fsync_folder(folder)


def _umask() -> int:
    """This process's umask, read without changing it (``os.umask`` sets it, which would race
    with other threads creating files): from /proc on Linux, else the usual 022."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _disk_full_error(exc: OSError, path: str) -> OSError:
    """An OSError with ``exc``'s errno that says in words that writing ``path`` found its disk
    (or quota) full, naming the file and its folder, and that the old file is untouched."""
    folder = os.path.dirname(path)
    reason = "disk quota exceeded" if exc.errno == getattr(errno, "EDQUOT", None) else "disk full"
    return OSError(
        exc.errno,
        f"No space left on the device ({reason}) for the folder '{folder}': "
        f"'{os.path.basename(path)}' was not written, and any previous version of it is intact",
        path,
    )


def _fsync_folder(folder: str) -> None:
    """Flush the folder's entry list, where a rename is recorded. Best effort: some systems
    cannot open or fsync a folder (Windows, some network file systems); the file itself is
    already complete and in place."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
