"""The jisu record format in one place: its names and constants, the manifest (found, read,
checked, written) and the per-process memo of shard checksums.

A data set written as ``FileWriter("train.rec", shard_num=4)`` (see :mod:`.writer` for how it
is committed, :mod:`.reader` and :mod:`.remote` for how it is read):

* shards ``train.rec0`` .. ``train.rec3`` (``train.rec`` when ``shard_num=1``, see
  :func:`shard_files`), or, once the data set was replaced, generation shards
  ``train.rec.g<token>0`` .. (:func:`generation_base`): Arrow IPC files, one record batch per
  block of rows. Each shard's Arrow metadata names its place (:data:`SHARD_PLACE_KEY`:
  ``"k/n"``) and the data set's id (:data:`DATASET_ID_KEY`);
* ``train.rec.manifest.json`` (:data:`MANIFEST_SUFFIX`): format, version, id, schema, ``desc``,
  ``index_fields``, ``class_indexing`` (``{class name: label}``, ``{}`` when the data set has
  none; optional: manifests written before it read as ``{}``), rows, ``block_rows`` and, per
  shard, its file name, rows, bytes and CRC-32.
  Rows are dealt to the shards in blocks of ``block_rows``, block ``k`` to shard
  ``k % shard_num`` (:func:`block_layout`).

A manifest is treated as hostile: it is read only if it is of sane size
(:data:`MAX_MANIFEST_BYTES`; locally, only if it is a regular file), and validated in full
(:func:`parse_manifest`) before any shard is touched. Local and remote data sets share these
rules: :func:`find_manifest` takes how to ask whether a name exists, and a remote reader reads
a manifest's bytes from storage, then checks them with :func:`check_manifest_size` and
:func:`decode_manifest`, as :func:`read_manifest_json` does for a local file.

The CRC memo (:func:`memo_crc`): a file's CRC-32 is computed once per process and file
identity (path, device, inode, size, mtime), by the local reader for shards and by the shard
cache for its copies; a file modified in the last :data:`RACY_NS` is not remembered.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .schema import Field, parse_schema
from .validate import MalformedFileError, open_regular, shard_path

FORMAT = "jisu-record"
FORMAT_VERSION = 1
MANIFEST_SUFFIX = ".manifest.json"
MAX_MANIFEST_BYTES = 64 << 20  # a manifest is a few KB; anything this large is not one
MAX_COUNT = 2**62  # rows and bytes: far beyond any real data set, within int64
MAX_MANIFEST_BLOCK_ROWS = 2**31  # the most rows per block a manifest may give
#: The most classes a manifest's ``class_indexing`` may name (ten times the classes
#: ``jisu train`` builds a network for; face-identity sets reach about a million).
MAX_MANIFEST_CLASSES = 2**20
#: Labels of ``class_indexing`` lie in [0, MAX_LABEL): an int32 ``label`` column holds them.
MAX_LABEL = 2**31
#: Keys of a shard's Arrow metadata: its place in the data set (``"k/n"``) and the data set's
#: id, so that a reader notices shards swapped or mixed in from another data set.
SHARD_PLACE_KEY = "jisu.shard"
DATASET_ID_KEY = "jisu.dataset"
#: A writer's token: its pid, a tag of the host and pid namespace the pid belongs to, a random
#: part. Temporary files end in ``.tmp-<token>``; generation shards are ``<name>.g<token><k>``.
TOKEN = r"(?P<pid>\d+)-(?P<tag>[0-9a-f]{8})[0-9a-f]{8}"
_GENERATION = re.compile(r"(?P<base>.+)\.g" + TOKEN + r"\d*")
#: A file modified this recently may change again within the same mtime tick (the kernel's
#: clock is coarse), so its CRC is not remembered ("racy" files, as git treats them).
RACY_NS = 2_000_000_000


# ------------------------------------------------------------------ names
def shard_files(file_name: str, shard_num: int) -> list[str]:
    """Shard paths, named as MindRecord names them."""
    return [file_name] if shard_num == 1 else [f"{file_name}{i}" for i in range(shard_num)]


def generation_base(path: str) -> str | None:
    """The data set name of a generation shard (``train.rec.g<token>0`` -> ``train.rec``)."""
    match = _GENERATION.fullmatch(path)
    return match["base"] if match else None


def manifest_candidates(name: str) -> list[str]:
    """Where the manifest of the data set that ``name`` names (the data set, or one of its
    plain or generation shards) may lie, in the order to try."""
    candidates = [name + MANIFEST_SUFFIX]
    base = generation_base(name)
    if base is not None:
        candidates.append(base + MANIFEST_SUFFIX)
    stripped = name.rstrip("0123456789")
    if stripped != name:
        candidates.append(stripped + MANIFEST_SUFFIX)
    return candidates


def find_manifest(path: str, exists: Callable[[str], bool] | None = None) -> str | None:
    """The manifest of a data set named by its manifest, its name, or one of its shards.

    Args:
        path: a local path; or, with ``exists``, a URL.
        exists: for a data set in object storage, how to ask whether a URL exists (asked of
            each candidate, the manifest's own URL too). None: ``path`` is local; a path that
            names a manifest is returned as it is (opening it says whether it exists).

    Returns:
        The first candidate that exists (an absolute path when local), or None.
    """
    if exists is None:
        path = os.path.abspath(path)
        if path.endswith(MANIFEST_SUFFIX):
            return path
        candidates = manifest_candidates(path)
        exists = os.path.exists
    else:
        path = path.rstrip("/")
        candidates = [path] if path.endswith(MANIFEST_SUFFIX) else manifest_candidates(path)
    for candidate in candidates:
        if exists(candidate):
            return candidate
    return None


# ------------------------------------------------------------------ reading the manifest
def check_manifest_size(size: int, path: str) -> None:
    """Refuse a manifest of more than :data:`MAX_MANIFEST_BYTES` before it is read."""
    if size > MAX_MANIFEST_BYTES:
        raise MalformedFileError(
            path, f"has {size} bytes, more than a manifest may ({MAX_MANIFEST_BYTES})"
        )


def decode_manifest(text: bytes, path: str) -> Any:
    """The parsed JSON of a manifest's bytes (read from ``path``, named in errors).

    Raises:
        MalformedFileError: not JSON (or not UTF-8), or nested too deeply.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise MalformedFileError(path, "is not a manifest: its JSON is nested too deeply") from None
    except ValueError as exc:  # also bad UTF-8
        raise MalformedFileError(path, f"is not valid JSON: {exc}") from None


def read_manifest_json(path: str) -> Any:
    """The parsed JSON of a local manifest, read only if it is a regular file of sane size.

    Raises:
        FileNotFoundError: there is no such file.
        MalformedFileError: not a regular file, too large, or not JSON.
    """
    fd = open_regular(path)
    try:
        check_manifest_size(os.fstat(fd).st_size, path)
        with os.fdopen(os.dup(fd), "rb") as f:
            text = f.read(MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    if len(text) > MAX_MANIFEST_BYTES:  # it grew after the check
        raise MalformedFileError(path, f"is larger than a manifest may be ({MAX_MANIFEST_BYTES})")
    return decode_manifest(text, path)


@dataclass(frozen=True)
class ShardEntry:
    """One shard as the manifest describes it."""

    path: str
    rows: int
    bytes: int
    crc32: int


@dataclass(frozen=True)
class Manifest:
    """A validated manifest."""

    path: str
    fields: list[Field]
    desc: str
    index_fields: list[str]
    rows: int
    block_rows: int
    shards: list[ShardEntry]
    id: str | None
    #: ``{class name: label}`` (``{}``: none recorded, or a manifest older than the key)
    class_indexing: dict[str, int] = field(default_factory=dict)


def block_layout(rows: int, block_rows: int, shards: int) -> list[list[int]]:
    """The record batch sizes of each shard of a data set written by ``FileWriter``: blocks of
    ``block_rows`` rows (the last one shorter) dealt to the shards, block ``k`` to shard
    ``k % shards``, one record batch per block. Computed per shard, not per block."""
    full, rest = divmod(rows, block_rows)
    layout = []
    for s in range(shards):
        count = full // shards + (s < full % shards)
        layout.append([block_rows] * count + ([rest] if rest and s == full % shards else []))
    return layout


def _count(value: Any, what: str, path: str, upper: int = MAX_COUNT) -> int:
    """``value`` if it is an int (not a bool) in [0, upper), else a MalformedFileError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < upper:
        raise MalformedFileError(
            path, f"{what} must be an int in [0, {upper}). Received: {value!r}"
        )
    return value


def class_indexing_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a ``class_indexing`` (None: nothing): it must be a
    dict of at most :data:`MAX_MANIFEST_CLASSES` str keys to int labels (not bools) in
    [0, :data:`MAX_LABEL`). Labels need not be distinct (classes may share a label)."""
    if not isinstance(value, dict):
        return (
            f"class_indexing must be a JSON object of class name to label. Received: {value!r:.80}"
        )
    if len(value) > MAX_MANIFEST_CLASSES:
        return (
            f"class_indexing names {len(value)} classes, more than a manifest may "
            f"({MAX_MANIFEST_CLASSES})"
        )
    for name, label in value.items():
        if not isinstance(name, str):
            return f"class_indexing's class names must be str. Received: {name!r:.80}"
        if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < MAX_LABEL:
            return (
                f"class_indexing[{name!r:.80}] must be an int in [0, {MAX_LABEL}). "
                f"Received: {label!r:.80}"
            )
    return None


def _fields_of(schema: Any, path: str) -> list[Field]:
    try:
        return parse_schema(schema, op="schema")
    except ValueError as exc:
        raise MalformedFileError(path, str(exc)) from None


def _shards_of(shards: Any, path: str) -> list[ShardEntry]:
    if not isinstance(shards, list) or not shards:
        raise MalformedFileError(path, f"shards must be a non-empty list. Received: {shards!r:.80}")
    directory, entries, seen = os.path.dirname(path), [], set()
    for k, entry in enumerate(shards):
        if not isinstance(entry, dict):
            raise MalformedFileError(path, f"shards[{k}] must be a dict. Received: {entry!r:.80}")
        name = entry.get("file")
        file = shard_path(directory, name, path)  # before anything touches the file
        if name in seen:
            raise MalformedFileError(path, f"shard '{name}' is listed twice")
        seen.add(name)
        entries.append(
            ShardEntry(
                file,
                _count(entry.get("rows"), f"shards[{k}].rows", path),
                _count(entry.get("bytes"), f"shards[{k}].bytes", path),
                _count(entry.get("crc32"), f"shards[{k}].crc32", path, upper=2**32),
            )
        )
    return entries


def parse_manifest(raw: Any, path: str) -> Manifest:
    """Check a manifest's content in full: types, counts, shard names (plain names beside the
    manifest), and that its shards' rows are the layout of blocks it implies.

    Raises:
        MalformedFileError: naming ``path`` and the first problem found.
    """
    if not isinstance(raw, dict):
        raise MalformedFileError(path, "is not a jisu record manifest (not a JSON object)")
    version = raw.get("version")
    if (
        raw.get("format") != FORMAT
        or isinstance(version, bool)
        or not isinstance(version, int)
        or not 1 <= version <= FORMAT_VERSION
    ):
        raise MalformedFileError(
            path,
            f"is not a jisu record manifest of version <= {FORMAT_VERSION}. Received: "
            f"format={raw.get('format')!r:.40}, version={version!r:.40}",
        )
    fields = _fields_of(raw.get("schema"), path)
    desc = raw.get("desc", "")
    if not isinstance(desc, str):
        raise MalformedFileError(path, f"desc must be a str. Received: {desc!r:.80}")
    index = raw.get("index_fields", [])
    names = {f.name for f in fields}
    if not isinstance(index, list) or not all(isinstance(n, str) and n in names for n in index):
        raise MalformedFileError(
            path, f"index_fields must be a list of field names. Received: {index!r:.80}"
        )
    shards = _shards_of(raw.get("shards"), path)
    rows = _count(raw.get("rows"), "rows", path)
    if rows != sum(s.rows for s in shards):
        raise MalformedFileError(
            path, f"rows is {rows} but its shards hold {sum(s.rows for s in shards)}"
        )
    block_rows = raw.get("block_rows")
    if _count(block_rows, "block_rows", path, upper=MAX_MANIFEST_BLOCK_ROWS) == 0:
        raise MalformedFileError(path, "block_rows must be positive. Received: 0")
    expected = [sum(sizes) for sizes in block_layout(rows, block_rows, len(shards))]
    if [s.rows for s in shards] != expected:
        raise MalformedFileError(
            path,
            f"shard rows {[s.rows for s in shards]} are not {rows} rows dealt in blocks of "
            f"{block_rows} to {len(shards)} shards ({expected})",
        )
    data_set_id = raw.get("id")
    if data_set_id is not None and not isinstance(data_set_id, str):
        raise MalformedFileError(path, f"id must be a str. Received: {data_set_id!r:.80}")
    classes = raw.get("class_indexing", {})  # absent from manifests written before it
    problem = class_indexing_problem(classes)
    if problem is not None:
        raise MalformedFileError(path, problem)
    return Manifest(path, fields, desc, index, rows, block_rows, shards, data_set_id, classes)


def load_manifest(path: str) -> Manifest:
    """Read and check the local manifest at ``path`` (a regular file of sane size, valid
    content).

    Raises:
        FileNotFoundError: there is no manifest at ``path``.
        MalformedFileError: it is not a valid manifest.
    """
    try:
        raw = read_manifest_json(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"RecordDataset: manifest '{path}' is missing") from None
    return parse_manifest(raw, path)


# ------------------------------------------------------------------ writing the manifest
def write_manifest(
    path: str,
    *,
    data_set_id: str,
    fields: list[Field],
    desc: str,
    index_fields: list[str],
    block_rows: int,
    shards: list[str],
    sealed: list[dict],
    class_indexing: dict[str, int] | None = None,
) -> None:
    """Write, durably (fsynced), at ``path`` (a writer's temporary name: publishing it is the
    commit) the manifest of a data set whose shards are ``shards`` (their names are recorded,
    not their folders) holding ``sealed`` (``rows``, ``bytes`` and ``crc32`` of each), with
    ``class_indexing`` (checked by :func:`class_indexing_problem`; None: ``{}``)."""
    class_indexing = dict(class_indexing or {})
    problem = class_indexing_problem(class_indexing)
    if problem is not None:
        raise ValueError(f"FileWriter: {problem}")
    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "id": data_set_id,
        "schema": {f.name: f.to_dict() for f in fields},
        "desc": desc,
        "index_fields": index_fields,
        "class_indexing": class_indexing,
        "rows": sum(s["rows"] for s in sealed),
        "block_rows": block_rows,
        "shards": [{"file": os.path.basename(p), **s} for p, s in zip(shards, sealed)],
    }
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


# ------------------------------------------------------------------ the CRC memo
# (path, device, inode, size, mtime_ns) -> crc, per process
_crcs: dict[tuple[str, int, int, int, int], int] = {}
_crcs_lock = threading.Lock()


def file_identity(path: str, info: os.stat_result) -> tuple[str, int, int, int, int]:
    """What the CRC memo knows a file by: its path, device, inode, size and mtime (ns), from
    ``info`` (``os.fstat`` of the opened file)."""
    return (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def memo_crc(identity: tuple[str, int, int, int, int], compute: Callable[[], int]) -> int:
    """The CRC-32 of the file :func:`file_identity` gave ``identity``: remembered from an
    earlier call in this process, or ``compute()`` (outside any lock; threads may compute one
    file at once) remembered unless the file was modified within :data:`RACY_NS` of the start
    of the computation. Thread-safe."""
    with _crcs_lock:
        crc = _crcs.get(identity)
    if crc is None:
        start = time.time_ns()
        crc = compute()
        if identity[-1] < start - RACY_NS:
            with _crcs_lock:
                _crcs[identity] = crc
    return crc
