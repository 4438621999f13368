"""MindSpore's tokenizers (``mindspore.dataset.text``): one string in, its tokens out.

Each takes one string (a 0-d NumPy array of str or bytes, or a Python str) and returns a 1-D
array of str tokens; ``with_offsets=True`` adds two uint32 arrays, each token's start and end
as UTF-8 byte offsets into the string (MindSpore's offsets are bytes, not characters). A string
with no token gives ``[""]``, as MindSpore. White space is ICU's (:data:`.icu.WHITE_SPACE`);
patterns are ICU's, run by Python's ``re`` (:func:`.icu.compile_pattern`).
"""

from __future__ import annotations

import re
import unicodedata
from enum import IntEnum
from typing import Any

import numpy as np

from ..core.error_types import ArgumentError
from ..core.operation import TensorOperation
from . import icu

__all__ = [
    "BasicTokenizer",
    "BertTokenizer",
    "NormalizeForm",
    "RegexTokenizer",
    "UnicodeCharTokenizer",
    "UnicodeScriptTokenizer",
    "WhitespaceTokenizer",
    "WordpieceTokenizer",
]


class NormalizeForm(IntEnum):
    """MindSpore's Unicode normalization forms (``NONE``: leave the text as it is)."""

    NONE = 0
    NFC = 1
    NFKC = 2
    NFD = 3
    NFKD = 4


def _check_bool(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool. Received {name}={value!r}")
    return value


def one_string(owner: str, value: Any) -> str:
    """The string of a tokenizer's input: a 0-d array of str/bytes, or a str."""
    if isinstance(value, (str, bytes)):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "US" or value.ndim != 0:
        shape = getattr(value, "shape", None)
        raise TypeError(
            f"{owner}: the input must be one string (a str or 0-d string array). Received "
            f"{type(value).__name__} of dtype {getattr(value, 'dtype', None)} and shape {shape}"
        )
    item = value.item()
    return item.decode("utf-8") if isinstance(item, bytes) else item


def _output(spans: list[tuple[int, int]], text: str, with_offsets: bool) -> Any:
    """Tokens ``text[a:b]`` for each span (``[""]`` when none), with byte offsets."""
    if not spans:
        tokens, starts, ends = [""], [0], [0]
    else:
        tokens = [text[a:b] for a, b in spans]
        byte_at = np.cumsum([0, *(len(c.encode("utf-8")) for c in text)])
        starts = [int(byte_at[a]) for a, _ in spans]
        ends = [int(byte_at[b]) for _, b in spans]
    out = np.array(tokens, dtype=str)
    if not with_offsets:
        return out
    return out, np.array(starts, np.uint32), np.array(ends, np.uint32)


class _Tokenizer(TensorOperation):
    pil_out = False

    def __init__(self, with_offsets: bool = False) -> None:
        self.with_offsets = _check_bool(type(self).__name__, "with_offsets", with_offsets)

    def spans(self, text: str) -> list[tuple[int, int]]:
        raise NotImplementedError  # each tokenizer defines it

    def apply(self, x: np.ndarray, rng: Any = None) -> Any:
        text = one_string(type(self).__name__, x)
        return _output(self.spans(text), text, self.with_offsets)


_NOT_SPACE = re.compile(f"[^{re.escape(icu.WHITE_SPACE)}]+")


class WhitespaceTokenizer(_Tokenizer):
    """Split on runs of ICU white space (spaces, tabs, newlines, U+3000 ...; not U+001C..1F,
    which Python's ``str.split`` splits on)."""

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in _NOT_SPACE.finditer(text)]


class UnicodeCharTokenizer(_Tokenizer):
    """One token per Unicode character."""

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [(i, i + 1) for i in range(len(text))]


class RegexTokenizer(_Tokenizer):
    """Split where ``delim_pattern`` matches; a delimiter that ``keep_delim_pattern`` matches
    as a whole is a token too (``""``: none is kept)."""

    def __init__(
        self, delim_pattern: str, keep_delim_pattern: str = "", with_offsets: bool = False
    ) -> None:
        super().__init__(with_offsets)
        for name, value in (("delim_pattern", delim_pattern), ("keep_delim_pattern",
                                                                keep_delim_pattern)):  # fmt: skip
            if not isinstance(value, str):
                raise TypeError(f"RegexTokenizer: {name} must be a str. Received {value!r}")
        self._delim = icu.compile_pattern("RegexTokenizer", delim_pattern)
        self._keep = (
            icu.compile_pattern("RegexTokenizer", keep_delim_pattern)
            if keep_delim_pattern
            else None
        )
        self.delim_pattern, self.keep_delim_pattern = delim_pattern, keep_delim_pattern

    def spans(self, text: str) -> list[tuple[int, int]]:
        out, start = [], 0
        for match in self._delim.finditer(text):
            a, b = match.span()
            if a == b:
                continue
            if a > start:
                out.append((start, a))
            if self._keep is not None and self._keep.fullmatch(match.group()):
                out.append((a, b))
            start = b
        if start < len(text):
            out.append((start, len(text)))
        return out


class UnicodeScriptTokenizer(_Tokenizer):
    """Split where the Unicode script changes (ICU's, Common and Inherited included: "abc123"
    -> "abc", "123"; a combining accent after its letter is a token of its own) and around
    runs of white space, which are tokens too with ``keep_whitespace=True``."""

    def __init__(self, keep_whitespace: bool = False, with_offsets: bool = False) -> None:
        self.keep_whitespace = _check_bool(
            "UnicodeScriptTokenizer", "keep_whitespace", keep_whitespace
        )
        super().__init__(with_offsets)

    def spans(self, text: str) -> list[tuple[int, int]]:
        out, start, kind = [], 0, None
        for i, char in enumerate(text):
            now = " " if icu.is_white_space(char) else icu.script_of(char)
            if now != kind:
                if kind is not None and (kind != " " or self.keep_whitespace):
                    out.append((start, i))
                start, kind = i, now
        if kind is not None and (kind != " " or self.keep_whitespace):
            out.append((start, len(text)))
        return out


_UNUSED = re.compile(r"\[(?:CLS|SEP|UNK|PAD|MASK|unused\d+)\]")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (
        0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B73F or 0x2B740 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF or 0xF900 <= code <= 0xFAFF or 0x2F800 <= code <= 0x2FA1F
    )  # fmt: skip


def _is_space(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    return char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf")


class BasicTokenizer(_Tokenizer):
    """BERT's basic tokenizer: splits on whitespace, around punctuation and CJK characters.

    ``lower_case``: case-folded, NFKD-normalized and accents removed (as MindSpore:
    "Straße" -> "strasse", "thé" -> "the"); otherwise ``normalization_form`` is applied.
    Control characters separate tokens, as whitespace does; ``keep_whitespace`` keeps each run
    of whitespace as a token of spaces. ``preserve_unused_token`` keeps BERT's markers
    (``[CLS] [SEP] [UNK] [PAD] [MASK] [unusedN]``) whole and unchanged. Offsets (with
    ``with_offsets``) index the normalized text, which is the input itself unless
    ``lower_case`` or ``normalization_form`` changes it."""

    def __init__(
        self, lower_case: bool = False, keep_whitespace: bool = False,
        normalization_form: NormalizeForm = NormalizeForm.NONE,
        preserve_unused_token: bool = True, with_offsets: bool = False,
    ) -> None:  # fmt: skip
        super().__init__(with_offsets)
        owner = type(self).__name__
        self.lower_case = _check_bool(owner, "lower_case", lower_case)
        self.keep_whitespace = _check_bool(owner, "keep_whitespace", keep_whitespace)
        self.preserve_unused_token = _check_bool(
            owner, "preserve_unused_token", preserve_unused_token
        )
        if not isinstance(normalization_form, NormalizeForm):
            raise TypeError(
                f"{owner}: normalization_form must be a NormalizeForm. "
                f"Received {normalization_form!r}"
            )
        self.normalization_form = normalization_form

    def _normalize(self, piece: str) -> str:
        if self.lower_case:
            piece = unicodedata.normalize("NFKD", piece.casefold())
            return "".join(c for c in piece if unicodedata.category(c) != "Mn")
        if self.normalization_form != NormalizeForm.NONE:
            return unicodedata.normalize(self.normalization_form.name, piece)
        return piece

    def _text_and_markers(self, text: str) -> tuple[str, set[int]]:
        """The normalized text, and where the preserved markers start in it."""
        if not self.preserve_unused_token:
            return self._normalize(text), set()
        out, markers, start = [], set(), 0
        for match in _UNUSED.finditer(text):
            out.append(self._normalize(text[start : match.start()]))
            markers.add(sum(len(p) for p in out))
            out.append(match.group())
            start = match.end()
        out.append(self._normalize(text[start:]))
        return "".join(out), markers

    def normalized_spans(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        text, markers = self._text_and_markers(text)
        spans: list[tuple[int, int]] = []
        i, n, word = 0, len(text), -1  # word: start of the word being read, -1 for none
        while i < n:
            if i in markers:
                end = text.index("]", i) + 1
                spans.extend([(word, i)] if word >= 0 else [])
                spans.append((i, end))
                word, i = -1, end
                continue
            char = text[i]
            if _is_space(char) or _is_control(char):
                spans.extend([(word, i)] if word >= 0 else [])
                end = i
                while end < n and (_is_space(text[end]) or _is_control(text[end])):
                    end += 1
                if self.keep_whitespace:
                    spans.append((i, -end))  # a run of whitespace, written as spaces
                word, i = -1, end
                continue
            if _is_punctuation(char) or _is_cjk(char):
                spans.extend([(word, i)] if word >= 0 else [])
                spans.append((i, i + 1))
                word, i = -1, i + 1
                continue
            word = i if word < 0 else word
            i += 1
        spans.extend([(word, n)] if word >= 0 else [])
        return text, spans

    def tokens(self, value: Any) -> tuple[list[str], list[tuple[int, int]], str]:
        text, spans = self.normalized_spans(one_string(type(self).__name__, value))
        tokens = [" " * (-b - a) if b < 0 else text[a:b] for a, b in spans]
        return tokens, [(a, abs(b)) for a, b in spans], text

    def apply(self, x: np.ndarray, rng: Any = None) -> Any:
        tokens, spans, text = self.tokens(x)
        if not tokens:
            return _output([], text, self.with_offsets)
        out = _output(spans, text, self.with_offsets)
        if self.with_offsets:
            return np.array(tokens, dtype=str), out[1], out[2]
        return np.array(tokens, dtype=str)


class WordpieceTokenizer(TensorOperation):
    """Splits each token of a 1-D array into the longest pieces in ``vocab`` (greedy, from
    the left; pieces after the first carry ``suffix_indicator``). A token with no such split,
    or longer than ``max_bytes_per_token`` UTF-8 bytes, becomes ``unknown_token`` (``""``:
    the token itself)."""

    pil_out = False

    def __init__(
        self, vocab: Any, suffix_indicator: str = "##", max_bytes_per_token: int = 100,
        unknown_token: str = "[UNK]", with_offsets: bool = False,
    ) -> None:  # fmt: skip
        owner = type(self).__name__
        from .utils import Vocab

        if vocab is None:  # MindSpore: a ValueError ("not provided"), another type a TypeError
            raise ArgumentError(f"{owner}: vocab must be a text.Vocab. Received None")
        if not isinstance(vocab, Vocab):
            raise TypeError(f"{owner}: vocab must be a text.Vocab. Received {type(vocab)}")
        if not isinstance(suffix_indicator, str) or not isinstance(unknown_token, str):
            raise TypeError(f"{owner}: suffix_indicator and unknown_token must be str")
        if (
            isinstance(max_bytes_per_token, bool)
            or not isinstance(max_bytes_per_token, int)
            or max_bytes_per_token < 0
        ):
            raise ValueError(
                f"{owner}: max_bytes_per_token must be an int >= 0. "
                f"Received {max_bytes_per_token!r}"
            )
        self.vocab, self.suffix_indicator = vocab, suffix_indicator
        self.max_bytes_per_token, self.unknown_token = max_bytes_per_token, unknown_token
        self.with_offsets = _check_bool(owner, "with_offsets", with_offsets)

    def pieces(self, token: str) -> list[tuple[str, int, int]]:
        """(piece, start byte, end byte) of one token."""
        size = len(token.encode("utf-8"))
        unknown = [(self.unknown_token or token, 0, size)]
        if size > self.max_bytes_per_token:
            return unknown
        out, start = [], 0
        while start < len(token):
            for end in range(len(token), start, -1):
                piece = token[start:end] if start == 0 else self.suffix_indicator + token[start:end]
                if piece in self.vocab:
                    a = len(token[:start].encode("utf-8"))
                    out.append((piece, a, a + len(token[start:end].encode("utf-8"))))
                    start = end
                    break
            else:
                return unknown
        return out

    def apply(self, x: np.ndarray, rng: Any = None) -> Any:
        if x.dtype.kind not in "US" or x.ndim != 1:
            raise TypeError(
                f"{type(self).__name__}: the input must be a 1-D array of strings. Received "
                f"dtype {x.dtype} and shape {x.shape}"
            )
        found = [p for t in x.tolist() for p in self.pieces(_decode(t))]
        tokens = np.array([p for p, _, _ in found] or [""], dtype=str)
        if not self.with_offsets:
            return tokens
        return (
            tokens,
            np.array([a for _, a, _ in found], np.uint32),
            np.array([b for _, _, b in found], np.uint32),
        )


def _decode(token: Any) -> str:
    return token.decode("utf-8") if isinstance(token, bytes) else token


class BertTokenizer(TensorOperation):
    """:class:`BasicTokenizer`, then :class:`WordpieceTokenizer` on each of its tokens (BERT's
    tokenizer; the arguments are theirs). Offsets index the normalized text."""

    pil_out = False

    def __init__(
        self, vocab: Any, suffix_indicator: str = "##", max_bytes_per_token: int = 100,
        unknown_token: str = "[UNK]", lower_case: bool = False, keep_whitespace: bool = False,
        normalization_form: NormalizeForm = NormalizeForm.NONE,
        preserve_unused_token: bool = True, with_offsets: bool = False,
    ) -> None:  # fmt: skip
        self.basic = BasicTokenizer(
            lower_case, keep_whitespace, normalization_form, preserve_unused_token, with_offsets
        )
        self.wordpiece = WordpieceTokenizer(
            vocab, suffix_indicator, max_bytes_per_token, unknown_token, with_offsets
        )
        self.with_offsets = with_offsets

    def apply(self, x: np.ndarray, rng: Any = None) -> Any:
        words, spans, text = self.basic.tokens(x)
        byte_at = np.cumsum([0, *(len(c.encode("utf-8")) for c in text)])
        found = []
        for word, (a, _) in zip(words, spans, strict=True):
            base = int(byte_at[a])
            found.extend((p, base + s, base + e) for p, s, e in self.wordpiece.pieces(word))
        tokens = np.array([p for p, _, _ in found] or [""], dtype=str)
        if not self.with_offsets:
            return tokens
        starts = np.array([s for _, s, _ in found] or [0], np.uint32)
        return tokens, starts, np.array([e for _, _, e in found] or [0], np.uint32)
