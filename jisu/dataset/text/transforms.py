"""MindSpore's text ops (``mindspore.dataset.text.transforms``) on NumPy arrays of strings.

String columns are NumPy arrays of str (or bytes, read as UTF-8); these ops run in
``dataset.map(operations=..., input_columns=...)`` and eagerly (``text.Lookup(vocab)(tokens)``).
The tokenizers are in :mod:`.tokenizers` and named here too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.error_types import ArgumentError, PipelineTypeError, PipelineValueError
from ..core.operation import TensorOperation
from ..core.rows import to_numpy_dtype
from .normalizers import FilterWikipediaXML
from .tokenizers import (
    BasicTokenizer,
    BertTokenizer,
    RegexTokenizer,
    UnicodeCharTokenizer,
    WhitespaceTokenizer,
    WordpieceTokenizer,
)
from .utils import Vocab
from .vectors import ToVectors

__all__ = [
    "AddToken", "BasicTokenizer", "BertTokenizer", "FilterWikipediaXML", "Lookup", "Ngram",
    "PythonTokenizer", "RegexTokenizer", "SlidingWindow", "ToNumber", "ToVectors", "Truncate",
    "TruncateSequencePair",
    "UnicodeCharTokenizer", "WhitespaceTokenizer", "WordpieceTokenizer",
]  # fmt: skip


def _int_at_least(owner: str, name: str, value: Any, low: int = 1) -> int:
    """``value`` checked to be an int >= ``low``. Another type is MindSpore's TypeError (and
    jisu's earlier ValueError: an :class:`ArgumentError`); a smaller int a ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentError(f"{owner}: {name} must be an int. Received {name}={value!r}")
    if value < low:
        raise ValueError(f"{owner}: {name} must be an int >= {low}. Received {name}={value!r}")
    return value


def _numeric_dtype(owner: str, data_type: Any, error: type[TypeError] = TypeError) -> np.dtype:
    """``data_type`` (a NumPy, torch or ``mstype`` dtype; not a name: MindSpore 2.10 refuses
    ``"int32"`` with a TypeError) as a numeric NumPy dtype. A dtype that is no number raises
    ``error`` (MindSpore's Lookup refuses it only when run: a :class:`PipelineTypeError`)."""
    if isinstance(data_type, str):
        raise TypeError(f"{owner}: data_type must be a dtype, not a name. Received {data_type!r}")
    try:
        dtype = to_numpy_dtype(data_type)
    except TypeError as err:
        raise TypeError(
            f"{owner}: data_type must be a numeric dtype. Received {data_type!r}"
        ) from err
    if dtype.kind not in "iuf":
        raise error(f"{owner}: data_type must be a numeric dtype. Received {data_type!r}")
    return dtype


def _strings(owner: str, x: np.ndarray) -> np.ndarray:
    """``x`` as an array of str (bytes decoded as UTF-8)."""
    if x.dtype.kind == "S":
        return np.char.decode(x, "utf-8")
    if x.dtype.kind != "U":
        raise TypeError(f"{owner}: the input must be strings. Received dtype {x.dtype}")
    return x


class _TextOp(TensorOperation):
    pil_out = False


class Lookup(_TextOp):
    """Each token's id in ``vocab`` (any shape; ``data_type``, int32 by default). A token not
    in the vocabulary takes ``unknown_token``'s id, or is an error when there is none."""

    def __init__(
        self, vocab: Vocab, unknown_token: str | None = None, data_type: Any = None
    ) -> None:
        if not isinstance(vocab, Vocab):
            raise TypeError(f"Lookup: vocab must be a text.Vocab. Received {type(vocab).__name__}")
        if unknown_token is not None and not isinstance(unknown_token, str):
            raise TypeError(f"Lookup: unknown_token must be a str. Received {unknown_token!r}")
        if unknown_token is not None and unknown_token not in vocab:  # MindSpore: when run
            raise PipelineValueError(f"Lookup: unknown_token {unknown_token!r} is not in the vocab")
        self.vocab, self.unknown_token = vocab, unknown_token
        self.data_type = _numeric_dtype(
            "Lookup", np.int32 if data_type is None else data_type, PipelineTypeError
        )
        self._unknown_id = None if unknown_token is None else vocab._id(unknown_token)

    def apply(self, x: np.ndarray, rng: Any = None) -> np.ndarray:
        words = _strings("Lookup", x)
        ids = []
        for word in words.reshape(-1).tolist():
            found = self.vocab._id(word)
            if found is None:
                if self._unknown_id is None:
                    raise ValueError(
                        f"Lookup: {word!r} is not in the vocab and no unknown_token was given"
                    )
                found = self._unknown_id
            ids.append(found)
        return np.array(ids, dtype=self.data_type).reshape(words.shape)


_INT_PREFIX = re.compile(r"\s*[+-]?\d+")


class ToNumber(_TextOp):
    """Strings parsed as numbers of ``data_type`` (int or float). As MindSpore (C++'s
    ``stoi``), an integer is read from the string's leading digits ("12abc" -> 12, "1.5" ->
    1); a string with none, or a value outside ``data_type``'s range, is an error."""

    def __init__(self, data_type: Any) -> None:
        self.data_type = _numeric_dtype("ToNumber", data_type)

    def _parse(self, word: str) -> int | float:
        if self.data_type.kind == "f":
            try:
                return float(word)
            except ValueError:
                raise ValueError(f"ToNumber: {word!r} is not a number") from None
        match = _INT_PREFIX.match(word)
        if match is None:
            raise ValueError(f"ToNumber: {word!r} is not an integer")
        value = int(match.group())
        info = np.iinfo(self.data_type)
        if not info.min <= value <= info.max:
            raise ValueError(f"ToNumber: {word!r} is out of the range of {self.data_type}")
        return value

    def apply(self, x: np.ndarray, rng: Any = None) -> np.ndarray:
        words = _strings("ToNumber", x)
        values = [self._parse(w) for w in words.reshape(-1).tolist()]
        out = np.array(values, dtype=np.float64 if self.data_type.kind == "f" else np.int64)
        if self.data_type.kind == "f" and np.isfinite(out).all():
            info = np.finfo(self.data_type)
            if (np.abs(out) > info.max).any():
                raise ValueError(f"ToNumber: a value is out of the range of {self.data_type}")
        return out.astype(self.data_type).reshape(words.shape)


class Truncate(_TextOp):
    """The first ``max_seq_len`` items along the last axis (1-D or 2-D input)."""

    def __init__(self, max_seq_len: int) -> None:
        self.max_seq_len = _int_at_least("Truncate", "max_seq_len", max_seq_len)

    def apply(self, x: np.ndarray, rng: Any = None) -> np.ndarray:
        if x.ndim not in (1, 2):
            raise ValueError(f"Truncate: the input must be 1-D or 2-D. Received shape {x.shape}")
        return x[..., : self.max_seq_len]


class TruncateSequencePair(_TextOp):
    """Two 1-D sequences cut to ``max_length`` items together: the longer one loses its last
    item until they fit (the second when they are as long), as BERT does. ``max_length`` 0
    leaves both empty, as MindSpore; a negative one is MindSpore's run-time RuntimeError."""

    def __init__(self, max_length: int) -> None:
        if isinstance(max_length, int) and not isinstance(max_length, bool) and max_length < 0:
            raise PipelineValueError(
                f"TruncateSequencePair: max_length must be an int >= 0. Received {max_length}"
            )
        self.max_length = _int_at_least("TruncateSequencePair", "max_length", max_length, 0)

    def apply(self, first: np.ndarray, second: np.ndarray, rng: Any = None) -> tuple:
        a, b = len(first), len(second)
        while a + b > self.max_length:
            if a > b:
                a -= 1
            else:
                b -= 1
        return first[:a], second[:b]


class SlidingWindow(_TextOp):
    """Windows of ``width`` consecutive items of a 1-D input, one per row (none when the
    input is shorter than ``width``)."""

    def __init__(self, width: int, axis: int = 0) -> None:
        self.width = _int_at_least("SlidingWindow", "width", width)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"SlidingWindow: axis must be an int. Received axis={axis!r}")
        self.axis = axis

    def apply(self, x: np.ndarray, rng: Any = None) -> np.ndarray:
        if x.ndim != 1 or self.axis not in (0, -1):
            raise ValueError(
                f"SlidingWindow: the input must be 1-D (axis 0). Received shape {x.shape}, "
                f"axis={self.axis}"
            )
        if len(x) < self.width:
            return x[:0]
        return np.lib.stride_tricks.sliding_window_view(x, self.width).copy()


class Ngram(_TextOp):
    """The n-grams of a 1-D array of strings for each n in ``n``, joined with ``separator``;
    ``left_pad``/``right_pad`` = (token, width) pads each end with up to ``n - 1`` tokens.
    An n with no n-gram gives one ``""``, as MindSpore."""

    def __init__(
        self, n: int | list[int], left_pad: tuple[str, int] = ("", 0),
        right_pad: tuple[str, int] = ("", 0), separator: str = " ",
    ) -> None:  # fmt: skip
        sizes = [n] if isinstance(n, int) and not isinstance(n, bool) else n
        if not isinstance(sizes, (list, tuple)) or not sizes:  # MindSpore: a ValueError
            raise ArgumentError(f"Ngram: n must be an int or a list of ints. Received n={n!r}")
        self.n = [_int_at_least("Ngram", "n", v) for v in sizes]
        for name, pad in (("left_pad", left_pad), ("right_pad", right_pad)):
            if not (
                isinstance(pad, tuple) and len(pad) == 2 and isinstance(pad[0], str)
                and isinstance(pad[1], int) and not isinstance(pad[1], bool) and pad[1] >= 0
            ):  # fmt: skip
                raise ArgumentError(  # MindSpore: a ValueError
                    f"Ngram: {name} must be a (str, int >= 0) tuple. Received {pad!r}"
                )
        if not isinstance(separator, str):
            raise TypeError(f"Ngram: separator must be a str. Received {separator!r}")
        self.left_pad, self.right_pad, self.separator = left_pad, right_pad, separator

    def apply(self, x: np.ndarray, rng: Any = None) -> np.ndarray:
        if x.ndim != 1:
            raise ValueError(f"Ngram: the input must be 1-D. Received shape {x.shape}")
        words = _strings("Ngram", x).tolist()
        out = []
        for n in self.n:
            left = [self.left_pad[0]] * min(self.left_pad[1], n - 1)
            right = [self.right_pad[0]] * min(self.right_pad[1], n - 1)
            seq = left + words + right
            grams = [self.separator.join(seq[i : i + n]) for i in range(len(seq) - n + 1)]
            out.extend(grams or [""])
        return np.array(out, dtype=str)


class AddToken(_TextOp):
    """``token`` added at the beginning (``begin=True``) or the end of a 1-D array."""

    def __init__(self, token: str, begin: bool = True) -> None:
        if not isinstance(token, str):
            raise TypeError(f"AddToken: token must be a str. Received token={token!r}")
        if not isinstance(begin, bool):
            raise TypeError(f"AddToken: begin must be a bool. Received begin={begin!r}")
        self.token, self.begin = token, begin

    def apply(self, x: np.ndarray, rng: Any = None) -> np.ndarray:
        if x.ndim != 1:
            raise ValueError(f"AddToken: the input must be 1-D. Received shape {x.shape}")
        words = _strings("AddToken", x).tolist()
        return np.array([self.token, *words] if self.begin else [*words, self.token], dtype=str)


class PythonTokenizer:
    """A Python function ``str -> list[str]`` as a tokenizer (MindSpore's
    ``PythonTokenizer``): the tokens as an array of str."""

    def __init__(self, tokenizer: Callable[[str], list[str]]) -> None:
        if not callable(tokenizer):
            raise TypeError(f"PythonTokenizer: tokenizer must be callable. Received {tokenizer!r}")
        self.tokenizer = tokenizer

    def __call__(self, in_array: Any) -> np.ndarray:
        from .tokenizers import one_string

        tokens = self.tokenizer(one_string("PythonTokenizer", in_array))
        return np.array(list(tokens) or [""], dtype=str)
