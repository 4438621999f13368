"""Publishing a data set's files on a local file system, as :class:`~.writer.FileWriter`
commits them (see its module docstring for the protocol): names reserved atomically, made
durable, and the leftovers of killed writers found and removed."""

from __future__ import annotations

import errno
import os
import re
import secrets

from ...files import host_tag, pid_alive
from .format import MANIFEST_SUFFIX, TOKEN, read_manifest_json

# Errors of os.link on file systems without hard links; publishing then falls back.
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EXDEV}


def fsync_path(path: str) -> None:
    """Make ``path`` (a file, or a folder: the names in it) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_files(paths: list[str]) -> None:
    """Remove the files that exist of ``paths``."""
    for path in paths:
        try:
            os.remove(path)
        except OSError:
            pass


def link_exclusive(source: str, target: str) -> bool:
    """Give ``source`` the name ``target`` unless ``target`` exists, atomically (no window
    between the check and the publication).

    Returns:
        False when ``source`` keeps its name too (a hard link), True when it was moved (on a
        file system without hard links: the name is reserved with ``O_EXCL``, then the file
        is moved onto it, so an empty file stands there for a moment).

    Raises:
        FileExistsError: ``target`` exists.
    """
    try:
        os.link(source, target)
        return False
    except OSError as exc:
        if isinstance(exc, FileExistsError) or exc.errno not in _NO_HARD_LINKS:
            raise
    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    os.replace(source, target)
    return True


class DataSetFiles:
    """The names that belong to the data set ``file_name`` in its folder."""

    def __init__(self, file_name: str) -> None:
        self.directory, self.base = os.path.split(file_name)
        self.manifest = file_name + MANIFEST_SUFFIX
        base = re.escape(self.base)
        self.temp = re.compile(base + r"(?:\d*|" + re.escape(MANIFEST_SUFFIX) + r")\.tmp-" + TOKEN)
        self.generation = re.compile(base + r"\.g" + TOKEN + r"\d*")
        self.shard = re.compile(base + r"(?:\d*|\.g" + TOKEN + r"\d*)")

    def listed_shards(self) -> set[str] | None:
        """The shard names of this data set that its current manifest lists: empty when there
        is no manifest, None when it cannot be read (then nothing counts as unlisted)."""
        try:
            raw = read_manifest_json(self.manifest)
        except FileNotFoundError:
            return set()
        except (OSError, ValueError):
            return None
        shards = raw.get("shards") if isinstance(raw, dict) else None
        if not isinstance(shards, list):
            return None
        names = {entry.get("file") for entry in shards if isinstance(entry, dict)}
        # only names of this data set's shards: plain names, never another file of the folder
        return {n for n in names if isinstance(n, str) and self.shard.fullmatch(n)}

    def remove_leftovers(self) -> list[tuple[str, int]]:
        """Remove what killed writers of this data set left: their temporary files, and their
        generation shards that the current manifest does not list. A file counts as a dead
        writer's only when its token's host tag is ours and its pid is gone, so a live
        writer's files (here or on another machine sharing the folder) are never touched.

        Returns:
            ``(path, bytes freed)`` of every file removed.
        """
        tag = host_tag()
        temps, generations = [], []
        try:
            names = [n for n in os.listdir(self.directory) if n.startswith(self.base)]
        except OSError:  # a folder we may write but not list: nothing to find
            names = []
        for name in names:
            for pattern, found in ((self.temp, temps), (self.generation, generations)):
                match = pattern.fullmatch(name)
                if match and match["tag"] == tag and not pid_alive(int(match["pid"])):
                    found.append(name)
        if generations:
            # Read the manifest after the pid checks: a writer dead by then publishes nothing
            # more, so a shard it wrote that this manifest does not list is garbage.
            listed = self.listed_shards()
            generations = [] if listed is None else [n for n in generations if n not in listed]
        removed = []
        for name in temps + generations:
            path = os.path.join(self.directory, name)
            try:
                info = os.lstat(path)
                os.remove(path)
            except OSError:  # gone already (another writer cleaning up), or not a file
                continue
            removed.append((path, info.st_size if info.st_nlink <= 1 else 0))
        return removed

    def remove_orphan_manifest(self, shard_paths: list[str]) -> bool:
        """Remove the manifest if it describes no data: neither the shards it lists nor
        ``shard_paths`` (the names a new writer publishes) exist. That is what deleting a data
        set the MindSpore way leaves (``os.remove`` of ``x.mindrecord`` and ``x.mindrecord.db``,
        the files MindSpore writes), and it must not block a new ``save`` of that name.

        The manifest is first moved aside under a temporary name, atomically, and removed only
        if it is still the file judged (same inode): a manifest that another writer published
        in between is put back, so its data set stays whole.

        Returns:
            whether a manifest was removed.
        """
        try:
            judged = os.lstat(self.manifest)
        except OSError:
            return False
        listed = self.listed_shards()
        if listed is None:  # unreadable: not ours to judge
            return False
        names = [os.path.join(self.directory, n) for n in listed] + list(shard_paths)
        if any(os.path.lexists(path) for path in names):
            return False
        aside = f"{self.manifest}.tmp-{os.getpid()}-{host_tag()}{secrets.token_hex(4)}"
        try:
            os.rename(self.manifest, aside)
        except OSError:
            return False
        moved = os.lstat(aside)
        if (moved.st_dev, moved.st_ino) != (judged.st_dev, judged.st_ino):
            try:  # another writer's manifest, published since: put it back
                if not link_exclusive(aside, self.manifest):
                    remove_files([aside])  # (a hard link: the manifest's name holds it again)
            except FileExistsError:
                pass  # a third writer published meanwhile: keep this one aside, not lost
            return False
        remove_files([aside])
        return True
