"""MindSpore's pre-trained word vectors: ``Vectors``, ``GloVe``, ``FastText`` and ``CharNGram``
tables read from text files, and the ``ToVectors`` op that looks tokens up in them.

A vector file holds one ``token v1 v2 ... vD`` per line, separated by single spaces (a tab is
part of the token; a second space is an empty value), as MindSpore 2.10 reads it
(``tests/fixtures/text_vectors`` records its answers): lines with a single value before the
first vector are skipped (fastText's ``count dim`` header), every later line must have the
first vector's ``D`` values, a repeated token keeps its first vector but still counts towards
``max_vectors``, and a file with no vector is an error. Values are float32.

The file is read as untrusted input: line by line, each line at most :data:`MAX_LINE_BYTES`
long, its value count checked before any array is made, and every error names the file and
the line. Unlike MindSpore (C's ``atof``: ``x`` reads as 0, ``5x`` as 5, ``0x10`` as 16), a
value that is not a decimal number (``nan``/``inf`` allowed) is an error.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

from ..core.error_types import PipelineTypeError, PipelineValueError, combined_type
from ..core.operation import TensorOperation

__all__ = ["CharNGram", "FastText", "GloVe", "ToVectors", "Vectors"]

#: the longest line read (bytes): a 300-value line is about 3 KB; a longer one is refused
#: instead of being held in memory whole
MAX_LINE_BYTES = 1 << 20
_INT32_MAX = 2**31 - 1
_FORBIDDEN = set("\\/:*?\"<>|`&';")
_NUMBER = re.compile(rb"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|(?i:nan|inf|infinity))")
#: a missing file: jisu's FileNotFoundError, MindSpore's RuntimeError
MissingFileError = combined_type(FileNotFoundError, RuntimeError)


def _check_from_file(owner: str, file_path: Any, max_vectors: Any) -> int:
    """MindSpore's argument checks of ``from_file``; returns the line limit (0: none)."""
    if not isinstance(file_path, str):
        raise TypeError(f"{owner}.from_file: file_path must be a str. Received {file_path!r}")
    name = os.path.basename(os.path.realpath(file_path))
    if set(name) & _FORBIDDEN:
        raise ValueError(
            f"{owner}.from_file: the file name must not contain any of \\/:*?\"<>|`&';. "
            f"Received file_path={file_path!r}"
        )
    if name.startswith(" ") or name.endswith(" "):
        raise ValueError(
            f"{owner}.from_file: the file name must not start or end with a space. "
            f"Received file_path={file_path!r}"
        )
    if max_vectors is None:
        return 0
    if isinstance(max_vectors, bool) or not isinstance(max_vectors, int):
        raise TypeError(f"{owner}.from_file: max_vectors must be an int. Received {max_vectors!r}")
    if not 0 <= max_vectors <= _INT32_MAX:
        raise ValueError(
            f"{owner}.from_file: max_vectors must be in [0, {_INT32_MAX}] (0: no limit). "
            f"Received max_vectors={max_vectors}"
        )
    return max_vectors


def _parse_values(where: str, values: list[bytes], text: bytes) -> np.ndarray:
    """``values`` as float32; ``text`` is the line after its token. NumPy parses (it also
    takes ``1_0`` and spaces around a number, refused here); a value that is not a number is
    an error naming it."""
    try:
        if b"_" not in text:
            with np.errstate(over="ignore"):  # 1e40 is inf in float32, as in MindSpore
                return np.array(values, dtype=np.float64).astype(np.float32)
    except ValueError:
        pass
    bad = next((v for v in values if not _NUMBER.fullmatch(v)), values[0])
    raise PipelineValueError(f"{where}: {bad[:40]!r} is not a number")


def read_vectors(owner: str, path: str, max_vectors: int = 0) -> tuple[dict[str, int], np.ndarray]:
    """The tokens (each to its row) and the float32 ``(n, dim)`` table of the vector file at
    ``path``, at most ``max_vectors`` lines of vectors (0: all). See the module's docstring
    for the format.

    Raises:
        FileNotFoundError: no file at ``path`` (also a RuntimeError, as in MindSpore).
        ValueError: a line that breaks the format, or no vector in the file (also a
            RuntimeError).
    """
    if not os.path.isfile(path):
        raise MissingFileError(f"{owner}: no file at {path!r}")
    index: dict[str, int] = {}
    rows: list[np.ndarray] = []
    dim = 0
    loaded = 0
    with open(path, "rb") as f:
        for number, line in enumerate(iter(lambda: f.readline(MAX_LINE_BYTES + 1), b""), 1):
            if max_vectors and loaded >= max_vectors:
                break
            where = f"{owner}: {path!r} line {number}"
            if len(line) > MAX_LINE_BYTES:
                raise PipelineValueError(f"{where} is longer than {MAX_LINE_BYTES} bytes")
            fields = line.rstrip(b"\n").removesuffix(b"\r").split(b" ")
            if len(fields) > 1 and not fields[-1]:
                fields.pop()  # one space at the end of a line is no value (MindSpore's reading)
            values = fields[1:]
            if len(values) == 1 and not dim:
                continue  # a header ("400000 300") or a one-value line before the first vector
            if len(values) <= 1:
                raise PipelineValueError(
                    f"{where}: a token needs a vector of several values separated by single "
                    f"spaces; the line holds {len(values)}"
                )
            if dim and len(values) != dim:
                raise PipelineValueError(
                    f"{where}: every vector must have {dim} values (the first one's); this one "
                    f"has {len(values)}"
                )
            try:
                token = fields[0].decode("utf-8")
            except UnicodeDecodeError:
                raise PipelineValueError(f"{where}: the token is not UTF-8") from None
            dim = len(values)
            loaded += 1
            if token not in index:
                rows.append(_parse_values(where, values, line[len(fields[0]) :]))
                index[token] = len(rows) - 1
    if not rows:
        raise PipelineValueError(f"{owner}: {path!r} holds no vector (it is empty or a header)")
    return index, np.stack(rows)


class Vectors:
    """Pre-trained word vectors: a token-to-vector table (float32, one ``dim`` for all) for
    :class:`ToVectors`. Build it with :meth:`from_file`. Immutable and thread-safe.

    Example:
        >>> vectors = Vectors.from_file("vectors.txt", max_vectors=50000)
        >>> ToVectors(vectors)(np.array(["the", "cat"]))  # (2, dim) float32
    """

    def __init__(self, index: dict[str, int], table: np.ndarray) -> None:
        self._index = index
        self._table = table
        table.flags.writeable = False

    @classmethod
    def from_file(cls, file_path: str, max_vectors: int | None = None) -> Vectors:
        """The table in the vector file ``file_path`` (``token v1 ... vD`` per line), its first
        ``max_vectors`` vectors (None or 0: all).

        Raises:
            TypeError: ``file_path`` is not a str, ``max_vectors`` not an int.
            ValueError: ``max_vectors`` is not in [0, 2**31 - 1]; a file name with one of
                ``\\/:*?"<>|`&';`` or starting/ending with a space; a line that breaks the
                format or a file without vectors (these two also RuntimeErrors, as MindSpore's).
            FileNotFoundError: no file at ``file_path`` (also a RuntimeError).
        """
        owner = cls.__name__
        limit = _check_from_file(owner, file_path, max_vectors)
        if not os.path.isfile(file_path):
            raise MissingFileError(f"{owner}.from_file: no file at {file_path!r}")
        cls._check_name(file_path)
        return cls(*read_vectors(owner, file_path, limit))

    @classmethod
    def _check_name(cls, file_path: str) -> None:
        """Refuse a file name this kind of table does not read (GloVe, FastText)."""

    @property
    def dim(self) -> int:
        """The length of every vector."""
        return self._table.shape[1]

    def __len__(self) -> int:
        return len(self._index)

    def lookup(self, token: str) -> np.ndarray | None:
        """``token``'s vector (read-only), or None when the table has none."""
        row = self._index.get(token)
        return None if row is None else self._table[row]


class GloVe(Vectors):
    """GloVe vectors (Stanford's ``glove.6B.<size>d.txt`` files). MindSpore 2.10 reads only
    files named ``glove.6B.<name without a dot>.txt``; ``Vectors.from_file`` reads any."""

    @classmethod
    def _check_name(cls, file_path: str) -> None:
        if not re.fullmatch(r"glove\.6B\.[^.]*\.txt", os.path.basename(file_path)):
            raise PipelineValueError(
                "GloVe.from_file: the file must be named glove.6B.<name>.txt, as MindSpore's "
                f"(Vectors.from_file reads any name). Received file_path={file_path!r}"
            )


class FastText(Vectors):
    """fastText vectors (``*.vec`` files, whose ``count dim`` first line is skipped)."""

    @classmethod
    def _check_name(cls, file_path: str) -> None:
        if os.path.basename(file_path).rpartition(".")[2] != "vec":
            raise PipelineValueError(
                "FastText.from_file: the file name must end in .vec, as MindSpore's "
                f"(Vectors.from_file reads any name). Received file_path={file_path!r}"
            )


class CharNGram(Vectors):
    """Character n-gram vectors (``2gram-ab``, ``3gram-#BEGIN#ab``, ``4gram-abc#END#`` ...):
    a token's vector is the mean of the vectors of its 2-, 3- and 4-grams found in the table,
    the token taken between ``#BEGIN#`` and ``#END#``; the zero vector/``unk_init`` when none is.
    The n-grams are of the token's UTF-8 bytes, as MindSpore 2.10's (so a non-ASCII letter
    is two or more "characters")."""

    def __init__(self, index: dict[str, int], table: np.ndarray) -> None:
        super().__init__({}, table)
        self._bytes_index = {token.encode("utf-8"): row for token, row in index.items()}

    def __len__(self) -> int:
        return len(self._bytes_index)

    def lookup(self, token: str) -> np.ndarray | None:
        units = [b"#BEGIN#", *(bytes((b,)) for b in token.encode("utf-8")), b"#END#"]
        total = np.zeros(self.dim, np.float32)
        found = 0
        for n in (2, 3, 4):
            for start in range(len(units) - n + 1):
                key = b"%dgram-" % n + b"".join(units[start : start + n])
                row = self._bytes_index.get(key)
                if row is not None:
                    total += self._table[row]
                    found += 1
        return total / np.float32(found) if found else None


def _ascii_lower(token: str) -> str:
    """``token`` with A-Z lowered and nothing else changed (MindSpore lowers bytes in the C
    locale: "É" and "İ" stay)."""
    return token.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


class ToVectors(TensorOperation):
    """Each token's vector in ``vectors`` (float32): a str gives ``(dim,)``, an array of
    ``n`` strings (any shape) ``(n, dim)``, and an array of one string ``(dim,)``, as
    MindSpore 2.10 shapes it. A token the table lacks gets ``unk_init`` (zeros by default).

    Args:
        vectors: a :class:`Vectors` (or ``GloVe``/``FastText``/``CharNGram``) table.
        unk_init: the vector (a list/tuple of ``dim`` numbers) for unknown tokens; None or
            empty: zeros.
        lower_case_backup: look every token up with A-Z lowered (MindSpore 2.10 does so for
            every token, not only for those missing in their own case).

    Raises:
        TypeError: ``vectors`` is no table, ``unk_init`` no list/tuple of numbers,
            ``lower_case_backup`` no bool.
        ValueError: ``unk_init`` is not ``vectors.dim`` long (also a RuntimeError: MindSpore
            finds it when the op runs).
    """

    pil_out = False

    def __init__(
        self,
        vectors: Vectors,
        unk_init: list | tuple | None = None,
        lower_case_backup: bool = False,
    ) -> None:
        if not isinstance(vectors, Vectors):
            raise TypeError(
                f"ToVectors: vectors must be a text.Vectors (from_file). Received {vectors!r}"
            )
        if unk_init is not None and not isinstance(unk_init, (list, tuple)):
            raise TypeError(f"ToVectors: unk_init must be a list or tuple. Received {unk_init!r}")
        for i, value in enumerate(unk_init or ()):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(
                    f"ToVectors: unk_init[{i}] must be an int or float. Received {value!r}"
                )
        if not isinstance(lower_case_backup, bool):
            raise TypeError(
                f"ToVectors: lower_case_backup must be a bool. Received {lower_case_backup!r}"
            )
        if unk_init and len(unk_init) != vectors.dim:
            raise PipelineValueError(
                f"ToVectors: unk_init must have the vectors' {vectors.dim} values. "
                f"Received {len(unk_init)}"
            )
        self.vectors, self.unk_init, self.lower_case_backup = vectors, unk_init, lower_case_backup
        self._unknown = np.array(unk_init or [0.0] * vectors.dim, dtype=np.float32)

    def apply(self, x: Any, rng: Any = None) -> np.ndarray:
        if isinstance(x, (str, bytes)):
            x = np.asarray(x)
        if not isinstance(x, np.ndarray) or x.dtype.kind not in "US":
            raise PipelineTypeError(
                "ToVectors: the input must be strings. "
                f"Received {getattr(x, 'dtype', type(x).__name__)}"
            )
        if x.size == 0:
            raise PipelineValueError("ToVectors: the input holds no token")
        rows = []
        for token in x.reshape(-1).tolist():
            token = token.decode("utf-8") if isinstance(token, bytes) else token
            found = self.vectors.lookup(_ascii_lower(token) if self.lower_case_backup else token)
            rows.append(self._unknown if found is None else found)
        return rows[0].copy() if len(rows) == 1 else np.stack(rows)
