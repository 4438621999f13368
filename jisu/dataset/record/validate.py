"""Treating data-set files as hostile: one error type for malformed files, and shard names
that cannot point outside their data set's folder or at something that is not a file."""

from __future__ import annotations

import errno
import os
import stat


class MalformedFileError(ValueError):
    """A data-set file (a record manifest or shard, a MindRecord shard or index) is malformed.

    The message names the file and what is wrong with it. A ``ValueError``, so code that
    caught the reader's earlier ``ValueError`` keeps working.

    Attributes:
        path: the file.
        reason: what is wrong, in words.
    """

    path: str | None = None
    reason: str | None = None

    def __init__(self, path: str, reason: str | None = None) -> None:
        if reason is None:  # one message: how exceptions are rebuilt (a pipeline's context)
            super().__init__(path)
            return
        super().__init__(f"'{path}': {reason}")
        self.path = path
        self.reason = reason


def shard_path(directory: str, name: object, listed_in: str) -> str:
    """The path of the shard ``name`` that the file ``listed_in`` lists, which must be a plain
    file name in ``directory`` (the listing file's folder): a string with no path separator,
    not ``.``/``..``, not absolute, no NUL. Anything else is refused before any file is
    touched, so a manifest cannot make a reader serve (or describe) files outside its folder.

    Raises:
        MalformedFileError: naming ``listed_in`` and the offending name.
    """
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or os.sep in name
        or (os.altsep is not None and os.altsep in name)
        or "\0" in name
    ):
        raise MalformedFileError(
            listed_in,
            f"shard name {name!r} is not a plain file name in the same folder "
            "(shards must lie beside the file that lists them)",
        )
    return os.path.join(directory, name)


def open_regular(path: str, listed_in: str | None = None) -> int:
    """Open ``path`` read-only and return the descriptor, refusing anything but a regular
    file. Opened non-blocking, so a FIFO or device named as a shard cannot hang ``open()``;
    the check is made on the opened descriptor (no window between check and open).

    With ``listed_in`` (the file that names ``path``), ``path`` may be a symbolic link only to
    a file in that file's folder, or in the folder ``listed_in`` itself links to (a download
    cache such as Hugging Face's keeps every file of a snapshot as a link into one ``blobs``
    folder): a link shipped in a data set's archive must not make a reader open, serve or
    describe (size, checksum) a file elsewhere. The link is resolved before the open; the
    folder check is made on the resolved name, which is then opened.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        MalformedFileError: ``path`` is not a regular file (a FIFO, a device, a folder), or
            is a link that leads out of ``listed_in``'s folder.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    where = f" (listed in '{listed_in}')" if listed_in else ""
    if listed_in is not None and os.path.islink(path):
        target = os.path.realpath(path)
        allowed = {
            os.path.realpath(os.path.dirname(listed_in)),
            os.path.dirname(os.path.realpath(listed_in)),
        }
        if os.path.dirname(target) not in allowed:
            raise MalformedFileError(
                path,
                f"is a symbolic link out of the folder of '{listed_in}'; a data set's files "
                "must lie beside the file that lists them (copy the file there instead)",
            )
        path, flags = target, flags | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise FileNotFoundError(f"'{path}'{where} does not exist") from None
    except IsADirectoryError:
        raise MalformedFileError(path, f"is a folder, not a regular file{where}") from None
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        shown = path if len(path) <= 120 else f"{path[:60]}...{path[-40:]}"
        raise MalformedFileError(
            shown, f"is a file name longer than this system allows ({len(path)} characters){where}"
        ) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise MalformedFileError(path, f"is not a regular file{where}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
