"""VOC annotation XML: the objects of one annotation file, parsed safely and checked.

:func:`parse_voc_objects` reads an ``Annotations/<id>.xml`` file with expat as MindSpore reads
it (the first ``<name>``, ``<difficult>``, ``<truncated>`` and ``<bndbox>`` of each
``<object>``), refusing entity declarations (the "billion laughs" expansion) and never loading
external entities; each object is checked as its element ends (finite decimal coordinates,
``0 < xmin < xmax`` and ``0 < ymin < ymax``, flags that are integers in the uint32 range).
Separate from :mod:`.voc`, which finds the files and builds the rows: this module only turns
one file's bytes into checked objects.
"""

from __future__ import annotations

import re
from typing import Any
from xml.parsers import expat

from ..record.validate import MalformedFileError
from .annotated_images import _UINT32_MAX, FLOAT32_MAX

#: A decimal number as VOC files write coordinates (no hex, no "nan", no "1_000")
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+]?\d+")
_BOX_TAGS = ("xmin", "ymin", "xmax", "ymax")
_OBJECT_FIELDS = ("name", "difficult", "truncated")


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
