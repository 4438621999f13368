"""VOCDataset: PASCAL VOC detection boxes or segmentation masks, as MindSpore 2.10 reads them.

Layout (``dataset_dir``)::

    ImageSets/Main/<usage>.txt          image ids, one a line (task "Detection")
    ImageSets/Segmentation/<usage>.txt  image ids, one a line (task "Segmentation")
    JPEGImages/<id>.jpg
    Annotations/<id>.xml                task "Detection"
    SegmentationClass/<id>.png          task "Segmentation"

Columns, dtypes and shapes follow MindSpore 2.10: "Detection" gives ``image``, ``bbox``
(float32 ``(N, 4)``, ``[xmin, ymin, xmax - xmin, ymax - ymin]``), ``label``, ``difficult``
and ``truncate`` (uint32 ``(N, 1)`` each); "Segmentation" gives ``image`` and ``target``
(the PNG). Images (and targets) are their encoded bytes as 1-D uint8 arrays, or with
``decode=True`` HWC uint8 RGB (a palette PNG decodes to its palette's colours, as in
MindSpore).

The annotation files are parsed when the data set is built, so a malformed one fails at once
with a :class:`~jisu.dataset.record.validate.MalformedFileError` naming it; images are read at
iteration. Annotation XML is parsed with expat, refusing entity declarations (the
"billion laughs" expansion) and never loading external entities, and files over
:data:`MAX_ANNOTATION_BYTES` are refused before they are read.

The helpers here (file reading with a size cap, image loading with ``decode``/``decrypt``)
are shared with :mod:`~jisu.dataset.sources.coco`.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from typing import Any
from xml.parsers import expat

import numpy as np

from ..record.validate import MalformedFileError, open_regular
from .generator import Source
from .options import ReadOptions, check_cache
from .vision_sets import _check_dir

#: Largest VOC annotation (XML) or image-set list file read; real ones are a few KiB.
MAX_ANNOTATION_BYTES = 16 << 20

_UINT32_MAX = (1 << 32) - 1
#: Values beyond it would become inf in a float32 column
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: A decimal number as VOC files write coordinates (no hex, no "nan", no "1_000")
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+]?\d+")


# ---------------------------------------------------------------------------- shared helpers
def _check_bool(op: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a bool. Received: {name}={value!r}")
    return value


def _check_str(op: str, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{op}: {name} must be a str. Received: {name}={value!r}")
    return value


def _check_decrypt(op: str, decrypt: Any) -> Callable[[str], bytes] | None:
    if decrypt is not None and not callable(decrypt):
        raise TypeError(
            f"{op}: decrypt must be a callable taking a file path and returning its decrypted "
            f"bytes, or None. Received: decrypt={decrypt!r}"
        )
    return decrypt


def _read_capped(
    op: str, path: str, limit: int, what: str, folder: DataFolder | None = None
) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``: "annotation file" …), refused
    (naming it) beyond ``limit`` bytes, and, with ``folder``, when it resolves outside it.

    Raises:
        ValueError: ``path`` does not exist.
        MalformedFileError: ``path`` is not a regular file (a FIFO, a folder), is too large,
            or leads out of ``folder``.
    """
    real = path if folder is None else folder.resolve(path, what)
    try:
        fd = open_regular(real)
    except FileNotFoundError:
        raise ValueError(f"{op}: the {what} '{path}' does not exist") from None
    with open(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise MalformedFileError(
                path, f"is {size} bytes; {op} refuses {what}s over {limit} bytes"
            )
        # read what the file holds, not ``limit`` bytes: ``read(n)`` allocates n bytes at
        # once (4 GiB of address space for every COCO file, fatal under a memory limit)
        parts = [f.read(size + 1)]
        total = len(parts[0])
        while total > size and total <= limit:  # grew while being read: the rest, in steps
            part = f.read(min(1 << 20, limit + 1 - total))
            if not part:
                break
            parts.append(part)
            total += len(part)
    if total > limit:
        raise MalformedFileError(path, f"is larger than {limit} bytes")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _inside(path: str, folder: str) -> bool:
    """Whether the real path ``path`` is ``folder`` (a real path) or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class DataFolder:
    """The folder an annotation-driven source (VOC, COCO) may read files from, so that a file
    name taken from an annotation file cannot lead elsewhere through a symbolic link.

    The rule: a file is read only if its real path (every link resolved) lies inside the real
    path of ``root`` (so ``root`` itself may be a link, and links inside it may point within
    it), or, when the file that lists the names (``listed_in``) is itself a link, directly in
    the folder that file links into: a download cache such as Hugging Face's keeps every file
    of a snapshot as a link into one ``blobs`` folder (the rule of
    :func:`~jisu.dataset.record.validate.open_regular` for record manifests). Checked when a
    file is opened; the resolved path is what is opened.

    Args:
        op: the source's name, for messages.
        root: ``dataset_dir``.
        listed_in: the annotation file or image-set list naming the files, or None.
    """

    def __init__(self, op: str, root: str, listed_in: str | None = None) -> None:
        self.op = op
        self.root = root
        self.real_root = os.path.realpath(root)
        self.cache_folder: str | None = None
        if listed_in is not None and os.path.islink(listed_in):
            self.cache_folder = os.path.dirname(os.path.realpath(listed_in))

    def resolve(self, path: str, what: str = "file") -> str:
        """The real path of ``path`` (a ``what``: "image", "annotation file" ...).

        Raises:
            MalformedFileError: ``path`` resolves outside the folder, naming it, where it
                leads and the link that leads there.
        """
        real = os.path.realpath(path)
        if _inside(real, self.real_root) or (
            self.cache_folder is not None and os.path.dirname(real) == self.cache_folder
        ):
            return real
        link = self._link_out(path)
        via = f"the symbolic link '{link}' -> '{_readlink(link)}'"
        raise MalformedFileError(
            path,
            f"the {what} resolves to '{real}' through {via}, outside dataset_dir "
            f"'{self.root}' (real path '{self.real_root}'); {self.op} reads only files inside "
            "dataset_dir, as their names come from a data-set file. Copy the file into the "
            "folder, or pass the folder the link leads to as dataset_dir",
        )

    def _link_out(self, path: str) -> str:
        """The first link on the way from ``root`` to ``path`` that leads out of the folder."""
        relative = os.path.relpath(path, self.root)
        prefix = self.root
        for part in relative.split(os.sep):
            prefix = os.path.join(prefix, part)
            if os.path.islink(prefix) and not _inside(os.path.realpath(prefix), self.real_root):
                return prefix
        return path


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


class _ImageRows:
    """Random-access rows: the image (and optionally a second image file, e.g. a mask) read
    at ``__getitem__``, then the annotation columns parsed at construction, then the
    ``_meta-filename`` column when asked for.

    Args:
        images: image paths.
        masks: paths of a second image column (VOC's segmentation targets), or None.
        annotations: per row, a tuple of annotation arrays (copied at each read, so a
            consumer writing into a row cannot change the data set), or None.
        meta: per row, the ``_meta-filename`` value, or None (no such column).
        decode: decode the image files (HWC uint8 RGB) instead of returning their bytes.
        decrypt: a callable returning a file's decrypted bytes from its path, or None.
        folder: where the files must resolve (:class:`DataFolder`), checked at each read
            (before ``decrypt`` too); None: anywhere.
    """

    def __init__(
        self,
        images: list[str],
        masks: list[str] | None,
        annotations: list[tuple[Any, ...]] | None,
        meta: list[str] | None,
        decode: bool,
        decrypt: Callable[[str], Any] | None,
        folder: DataFolder | None = None,
    ) -> None:
        self.images = np.array(images)  # one buffer, not a list of str objects
        self.masks = None if masks is None else np.array(masks)
        self.annotations = annotations
        self.meta = None if meta is None else np.array(meta)
        self.decode = decode
        self.decrypt = decrypt
        self.folder = folder

    def __len__(self) -> int:
        return len(self.images)

    def _load(self, path: str) -> np.ndarray:
        from ..vision.decode import FileBytes

        real = path if self.folder is None else self.folder.resolve(path, "image")
        if self.decrypt is not None:
            data = self.decrypt(path)
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise TypeError(
                    f"decrypt must return bytes; it returned {type(data).__name__} for '{path}'"
                )
            raw = np.frombuffer(bytes(data), dtype=np.uint8)
        else:
            try:
                fd = open_regular(real)  # a FIFO named like an image is refused, not waited on
            except FileNotFoundError:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path) from None
            with open(fd, "rb") as f:
                raw = np.frombuffer(f.read(), dtype=np.uint8)
        if self.decode:
            from ..vision import Decode

            return Decode().apply(raw)  # errors name the file through the sample name
        return FileBytes.of(raw, path)

    def __getitem__(self, index: int) -> tuple:
        row = [self._load(str(self.images[index]))]
        if self.masks is not None:
            row.append(self._load(str(self.masks[index])))
        if self.annotations is not None:
            row.extend(a.copy() for a in self.annotations[index])
        if self.meta is not None:
            row.append(np.array(str(self.meta[index])))
        return tuple(row)


class _ImageSource(Source):
    """Common parts of VOCDataset and CocoDataset (MindSpore's mappable vision sources)."""

    default_workers = None  # config's default
    serial_reads = False  # files are opened by path: thread-safe
    builds_indexed_source = True

    def _sample_name(self, index: int) -> str:
        return f"source[{index}] ({self._files_of(index)})"

    def _files_of(self, index: int) -> str:
        raise NotImplementedError


# ---------------------------------------------------------------------------- VOC
_TASK_LIST_FOLDER = {"Detection": "Main", "Segmentation": "Segmentation"}
_BOX_TAGS = ("xmin", "ymin", "xmax", "ymax")
_OBJECT_FIELDS = ("name", "difficult", "truncated")


def _plain_id(image_id: str, listed_in: str) -> str:
    """An image id from an image-set list: a plain file-name stem (no folder, no ``..``), so
    a list cannot point the reader at files outside the data set's folders."""
    if (
        image_id in (".", "..")
        or "/" in image_id
        or "\\" in image_id
        or "\0" in image_id
        or (os.altsep is not None and os.altsep in image_id)
    ):
        raise MalformedFileError(
            listed_in, f"image id {image_id!r} is not a plain name (no folders, no '..')"
        )
    return image_id


def read_image_ids(path: str, folder: DataFolder | None = None) -> list[str]:
    """The image ids of a VOC image-set list: one a line, surrounding whitespace (and a
    Windows line end) stripped, blank lines skipped; with ``folder``, the list must resolve
    inside it."""
    data = _read_capped("VOCDataset", path, MAX_ANNOTATION_BYTES, "image-set list", folder)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedFileError(path, f"is not UTF-8 text ({exc.reason})") from None
    return [_plain_id(line.strip(), path) for line in text.splitlines() if line.strip()]


class _VocObject:
    __slots__ = ("box", "fields", "in_box")

    def __init__(self) -> None:
        self.fields: dict[str, list[str]] = {}  # first <name>/<difficult>/<truncated>: text
        self.box: dict[str, list[str]] | None = None  # first <bndbox>: coordinate texts
        self.in_box = False


def _quoted(text: str, limit: int = 80) -> str:
    """``repr(text)``, cut to ``limit`` characters: an element's text may be megabytes."""
    shown = repr(text)
    return shown if len(shown) <= limit else f"{shown[:limit]}... ({len(text)} characters)"


def _number(path: str, tag: str, texts: list[str] | None) -> float:
    if texts is None:
        raise MalformedFileError(path, f"an object's <bndbox> has no <{tag}>")
    text = "".join(texts).strip()
    value = float(text) if _DECIMAL.fullmatch(text) else float("nan")
    if not abs(value) <= FLOAT32_MAX:  # also refuses nan
        raise MalformedFileError(
            path, f"an object's <bndbox> <{tag}> is {_quoted(text)}, not a finite decimal number"
        )
    return value


def _flag(path: str, tag: str, texts: list[str] | None) -> int:
    text = "".join(texts or ()).strip()
    if not text:  # absent or empty: 0, as in MindSpore
        return 0
    if len(text) > 12 or not _INTEGER.fullmatch(text) or int(text) > _UINT32_MAX:
        raise MalformedFileError(
            path, f"an object's <{tag}> is {_quoted(text)}, not an integer in [0, {_UINT32_MAX}]"
        )
    return int(text)


def parse_voc_objects(path: str, data: bytes) -> list[tuple[str, list[float], int, int]]:
    """The objects of a VOC annotation file: ``(name, [xmin, ymin, xmax, ymax], difficult,
    truncated)`` for each ``<object>`` child of the root element, as MindSpore reads them: the
    first ``<name>``, ``<difficult>``, ``<truncated>`` and ``<bndbox>`` of each object count
    (a person's ``<part>`` boxes are ignored); the name is taken verbatim.

    Raises:
        MalformedFileError: naming ``path``: not well-formed XML, an entity declaration (refused:
            entity expansion), no ``<object>``, an object without a ``<bndbox>`` or with a
            coordinate that is missing or not a number, a box that is not
            ``0 < xmin < xmax`` and ``0 < ymin < ymax`` (MindSpore's check), or a
            ``<difficult>``/``<truncated>`` that is not a non-negative integer.

    Each object is checked and reduced to its tuple when its element ends, so memory stays a
    small multiple of the file's size (a file of empty ``<object/>`` elements fails at the
    first, not after building millions of them).
    """
    out: list[tuple[str, list[float], int, int]] = []
    depth = 0
    current: _VocObject | None = None
    capture: list[str] | None = None  # the text list of the element being captured
    capture_depth = -1

    def refuse(*_args: Any) -> None:
        raise MalformedFileError(path, "declares entities; refused (entity expansion)")

    def start(tag: str, _attrs: Any) -> None:
        nonlocal depth, current, capture, capture_depth
        depth += 1
        capture = None
        if depth == 2 and tag == "object":
            current = _VocObject()
        elif depth == 3 and current is not None:
            if tag in _OBJECT_FIELDS and tag not in current.fields:
                capture = current.fields[tag] = []
            elif tag == "bndbox" and current.box is None:
                current.box = {}
                current.in_box = True
        elif (
            depth == 4
            and current is not None
            and current.in_box
            and tag in _BOX_TAGS
            and tag not in current.box
        ):
            capture = current.box[tag] = []
        capture_depth = depth if capture is not None else -1

    def end(_tag: str) -> None:
        nonlocal depth, current, capture, capture_depth
        if depth == 3 and current is not None:
            current.in_box = False
        elif depth == 2:
            if current is not None:
                out.append(_voc_object(path, current))
            current = None
        depth -= 1
        capture, capture_depth = None, -1

    def text(chunk: str) -> None:
        if capture is not None and depth == capture_depth:
            capture.append(chunk)

    parser = expat.ParserCreate()
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise MalformedFileError(path, f"is not well-formed XML ({exc})") from None
    if not out:
        raise MalformedFileError(path, "has no <object> (MindSpore refuses such files too)")
    return out


def _voc_object(path: str, obj: _VocObject) -> tuple[str, list[float], int, int]:
    """One ``<object>``, checked: ``(name, [xmin, ymin, xmax, ymax], difficult, truncated)``."""
    if obj.box is None:
        raise MalformedFileError(path, "an <object> has no <bndbox>")
    xmin, ymin, xmax, ymax = (_number(path, t, obj.box.get(t)) for t in _BOX_TAGS)
    if not (xmin > 0 and ymin > 0 and xmax > xmin and ymax > ymin):
        raise MalformedFileError(
            path,
            f"an object's box (xmin, ymin, xmax, ymax) = ({xmin:g}, {ymin:g}, {xmax:g}, "
            f"{ymax:g}) is not 0 < xmin < xmax and 0 < ymin < ymax",
        )
    name = "".join(obj.fields.get("name", ()))
    difficult = _flag(path, "difficult", obj.fields.get("difficult"))
    truncated = _flag(path, "truncated", obj.fields.get("truncated"))
    return name, [xmin, ymin, xmax, ymax], difficult, truncated


def _check_class_indexing(op: str, class_indexing: Any) -> dict[str, int] | None:
    if class_indexing is None:
        return None
    if not isinstance(class_indexing, dict):
        raise TypeError(
            f"{op}: class_indexing must be a dict of class name to int label. "
            f"Received: class_indexing={class_indexing!r}"
        )
    for name, label in class_indexing.items():
        if not isinstance(name, str) or isinstance(label, bool) or not isinstance(label, int):
            raise TypeError(
                f"{op}: class_indexing must map str class names to int labels. "
                f"Received: class_indexing={class_indexing!r}"
            )
        if not 0 <= label <= _UINT32_MAX:
            raise ValueError(
                f"{op}: class_indexing labels must be in [0, {_UINT32_MAX}] (the label column "
                f"is uint32). Received: class_indexing[{name!r}]={label}"
            )
    return dict(class_indexing) or None  # {} means the default, as in MindSpore


class VOCDataset(_ImageSource):
    """PASCAL VOC (MindSpore 2.10's ``VOCDataset``).

    Args:
        dataset_dir: the folder holding ``ImageSets``, ``JPEGImages``, ``Annotations`` and
            ``SegmentationClass``.
        task: "Segmentation" (rows ``image, target``) or "Detection" (rows ``image, bbox,
            label, difficult, truncate``).
        usage: the image-set list read: ``ImageSets/Segmentation/<usage>.txt`` or
            ``ImageSets/Main/<usage>.txt`` (e.g. "train", "val", "trainval").
        class_indexing: "Detection" only: ``{class name: label}``; objects of other classes
            are left out, and so are images left with no object. Default (None or ``{}``):
            the class names found in the annotations, sorted, numbered from 0.
        num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id: as in
            :class:`GeneratorDataset` (shuffled by default).
        decode: decode the images (and targets) to HWC uint8 RGB instead of returning their
            encoded bytes.
        cache: only None (jisu has no cache server).
        extra_metadata: add a last column ``_meta-filename`` (the image id, a str). Unlike
            MindSpore, which hides ``_meta-`` columns until renamed, jisu shows it.
        decrypt: a callable taking a file path and returning the file's decrypted bytes,
            used for images and targets.

    Detection: ``bbox`` is float32 ``(N, 4)`` ``[xmin, ymin, xmax - xmin, ymax - ymin]``;
    ``label``, ``difficult`` and ``truncate`` are uint32 ``(N, 1)``. An object without a
    ``<name>`` is left out; every object needs a ``<bndbox>`` with
    ``0 < xmin < xmax, 0 < ymin < ymax`` and a file needs at least one ``<object>``
    (MindSpore's rules).

    Symbolic links: every file read (the list, annotations, images, targets) must resolve
    inside ``dataset_dir``'s real path (``dataset_dir`` itself may be a link, and so may files
    and folders inside it that point within it); a file that leads out through a link is
    refused with a :class:`MalformedFileError` naming it and the link: annotations and the
    list when the data set is built, images and targets when read (skippable in error
    samples mode "skip"). A download cache whose files are links into one folder (Hugging
    Face's ``blobs``) is allowed when the list is such a link too (see :class:`DataFolder`).

    Raises:
        TypeError / ValueError: a wrong argument, a missing folder, list or annotation file,
            a list without images, or no image with an object of the classes asked for.
        MalformedFileError: a malformed list or annotation file (named), or one that leads
            out of ``dataset_dir``.
    """

    def __init__(
        self,
        dataset_dir: str,
        task: str = "Segmentation",
        usage: str = "train",
        class_indexing: dict[str, int] | None = None,
        num_samples: int | None = None,
        num_parallel_workers: int | None = None,
        shuffle: bool | None = None,
        decode: bool = False,
        sampler: Any = None,
        num_shards: int | None = None,
        shard_id: int | None = None,
        cache: Any = None,
        extra_metadata: bool = False,
        decrypt: Callable[[str], bytes] | None = None,
    ) -> None:
        op = self.op_name
        root = _check_dir(op, dataset_dir)
        task = _check_str(op, "task", task)
        if task not in _TASK_LIST_FOLDER:
            raise ValueError(
                f"{op}: task must be 'Segmentation' or 'Detection'. Received: task={task!r}"
            )
        usage = _check_str(op, "usage", usage)
        if not usage:
            raise ValueError(f"{op}: usage must not be empty (e.g. 'train')")
        indexing = _check_class_indexing(op, class_indexing)
        if task == "Segmentation" and class_indexing is not None:
            raise ValueError(
                f"{op}: class_indexing applies to task 'Detection' only; pass None for task "
                "'Segmentation'"
            )
        decode = _check_bool(op, "decode", decode)
        extra_metadata = _check_bool(op, "extra_metadata", extra_metadata)
        decrypt = _check_decrypt(op, decrypt)
        check_cache(op, cache)
        self.dataset_dir, self.task, self.usage = root, task, usage

        list_file = os.path.join(root, "ImageSets", _TASK_LIST_FOLDER[task], usage + ".txt")
        if not os.path.isfile(list_file):
            raise ValueError(f"{op}: the image-set list '{list_file}' does not exist")
        second = "Annotations" if task == "Detection" else "SegmentationClass"
        for folder in ("JPEGImages", second):
            if not os.path.isdir(os.path.join(root, folder)):
                raise ValueError(f"{op}: '{os.path.join(root, folder)}' is not a folder")
        folder = DataFolder(op, root, list_file)
        ids = read_image_ids(list_file, folder)
        if not ids:
            raise ValueError(f"{op}: the image-set list '{list_file}' lists no image")
        images = [os.path.join(root, "JPEGImages", i + ".jpg") for i in ids]
        if task == "Segmentation":
            masks = [os.path.join(root, "SegmentationClass", i + ".png") for i in ids]
            reader = _ImageRows(
                images, masks, None, ids if extra_metadata else None, decode, decrypt, folder
            )
            self._class_indexing: dict[str, int] | None = None
            self._second = masks
            columns = ["image", "target"]
        else:
            reader, self._class_indexing, self._second = self._detection_rows(
                root, ids, images, indexing, extra_metadata, decode, decrypt, list_file, folder
            )
            columns = ["image", "bbox", "label", "difficult", "truncate"]
        if extra_metadata:
            columns.append("_meta-filename")
        options = ReadOptions(
            num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id
        )
        super().__init__(reader, columns, options)

    def _detection_rows(
        self,
        root: str,
        ids: list[str],
        images: list[str],
        indexing: dict[str, int] | None,
        extra_metadata: bool,
        decode: bool,
        decrypt: Any,
        list_file: str,
        folder: DataFolder,
    ) -> tuple[_ImageRows, dict[str, int], list[str]]:
        op = self.op_name
        parsed: dict[str, list] = {}  # a list may repeat an id: parse its file once
        for image_id in ids:
            if image_id not in parsed:
                path = os.path.join(root, "Annotations", image_id + ".xml")
                data = _read_capped(op, path, MAX_ANNOTATION_BYTES, "annotation file", folder)
                parsed[image_id] = parse_voc_objects(path, data)
        if indexing is None:  # MindSpore: the names found, sorted, numbered from 0
            names = sorted({o[0] for objects in parsed.values() for o in objects if o[0]})
            indexing = {name: k for k, name in enumerate(names)}
        kept_images, annotations, meta, xml_paths = [], [], [], []
        for image_id, image in zip(ids, images):
            objects = [o for o in parsed[image_id] if o[0] and o[0] in indexing]
            if not objects:  # MindSpore leaves such images out
                continue
            # float32 throughout, as MindSpore computes the widths and heights
            boxes = np.array([o[1] for o in objects], dtype=np.float32)
            boxes[:, 2:] -= boxes[:, :2]  # [xmin, ymin, width, height]
            annotations.append(
                (
                    boxes,
                    np.array([[indexing[o[0]]] for o in objects], dtype=np.uint32),
                    np.array([[o[2]] for o in objects], dtype=np.uint32),
                    np.array([[o[3]] for o in objects], dtype=np.uint32),
                )
            )
            kept_images.append(image)
            meta.append(image_id)
            xml_paths.append(os.path.join(root, "Annotations", image_id + ".xml"))
        if not kept_images:
            raise ValueError(
                f"{op}: no image listed in '{list_file}' has an object of the classes "
                f"{sorted(indexing)}"
            )
        reader = _ImageRows(
            kept_images,
            None,
            annotations,
            meta if extra_metadata else None,
            decode,
            decrypt,
            folder,
        )
        return reader, indexing, xml_paths

    def _files_of(self, index: int) -> str:
        return f"'{self.source.images[index]}', '{self._second[index]}'"

    def get_class_indexing(self) -> dict[str, int]:
        """``{class name: label}`` of task "Detection": ``class_indexing`` as given, or the
        sorted class names of the annotations numbered from 0."""
        if self._class_indexing is None:
            raise NotImplementedError(
                f"{self.op_name}: only task 'Detection' has get_class_indexing"
            )
        return dict(self._class_indexing)
