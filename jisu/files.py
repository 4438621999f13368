"""Atomic file writes: readers see the old file or the whole new one, never a partial one."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import socket
import tempfile
import zlib
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
    (``.tmp-<pid>-<host tag>*`` in the same folder) is removed; one left by a killed process
    is found by :func:`remove_dead_temporaries`. Text modes write UTF-8.

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
        fd, tmp = tempfile.mkstemp(
            prefix=f".tmp-{os.getpid()}-{host_tag()}", suffix=os.path.splitext(path)[1], dir=folder
        )
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


def host_tag() -> str:
    """8 hex digits naming this host and pid namespace: a pid is only checked for liveness
    where it means the same process (not on another machine sharing the folder). The host is
    its name and its machine id (``/etc/machine-id``: two hosts of one name, cloned VMs or
    containers with a fixed hostname, still differ; it survives a reboot, unlike the boot id,
    so a writer killed by a crash is still recognised as this host's)."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    machine = ""
    for source in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(source) as f:
                machine = f.read(64).strip()
            break
        except OSError:
            continue
    return f"{zlib.crc32(f'{socket.gethostname()}|{machine}|{namespace}'.encode()):08x}"


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` may be alive: only a definite "no such process" says no."""
    if pid <= 0:
        return True  # not a writer's pid (0 would signal our own process group)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, OSError):  # PermissionError: another user's process; or unsure
        return True
    return True


def remove_dead_temporaries(folder: str, suffix: str) -> list[tuple[str, int]]:
    """Remove the temporary files of :func:`atomic_write` calls (those writing ``*suffix``
    files into ``folder``) whose process was killed before it could: only files of this host
    and pid namespace whose pid no longer runs, so a live writer's file (here or on another
    machine sharing the folder) is never touched.

    Returns:
        ``(path, bytes freed)`` of every file removed.
    """
    pattern = re.compile(r"\.tmp-(\d+)-([0-9a-f]{8})[0-9a-z_]+" + re.escape(suffix))
    tag, removed = host_tag(), []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if not match or match[2] != tag or pid_alive(int(match[1])):
            continue
        path = os.path.join(folder, name)
        try:
            size = os.lstat(path).st_size
            os.remove(path)
        except OSError:  # gone meanwhile
            continue
        removed.append((path, size))
    return removed
