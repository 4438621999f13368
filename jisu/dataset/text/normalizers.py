"""MindSpore's string-to-string text ops: ``CaseFold``, ``NormalizeUTF8``, ``RegexReplace``,
``FilterWikipediaXML``.

Each maps every string of an array (any shape; a str is a 0-d array) to a string, keeping the
shape; bytes are read as UTF-8. MindSpore runs them on ICU; jisu on ``unicodedata`` and ``re``
through :mod:`.icu` (the porting guide lists where the two differ).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.error_types import PipelineValueError
from ..core.operation import TensorOperation
from . import icu
from .tokenizers import NormalizeForm

__all__ = ["CaseFold", "FilterWikipediaXML", "NormalizeUTF8", "RegexReplace"]


def _map_strings(owner: str, x: Any, fn: Callable[[str], str]) -> np.ndarray:
    if isinstance(x, (str, bytes)):
        x = np.asarray(x)
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "US":
        raise TypeError(
            f"{owner}: the input must be strings. Received dtype {getattr(x, 'dtype', type(x))}"
        )
    items = [fn(s.decode("utf-8") if isinstance(s, bytes) else s) for s in x.reshape(-1).tolist()]
    return np.array(items, dtype=str).reshape(x.shape)


class _StringMap(TensorOperation):
    pil_out = False

    def convert(self, text: str) -> str:
        raise NotImplementedError  # each op defines it

    def apply(self, x: np.ndarray, rng: Any = None) -> np.ndarray:
        return _map_strings(type(self).__name__, x, self.convert)


class CaseFold(_StringMap):
    """Each string case-folded as ICU's NFKC_Casefold, MindSpore's: full case folding ("ß" ->
    "ss"), compatibility-normalized ("ﬁ" -> "fi", "Ⅻ" -> "xii", full-width letters to
    ASCII), and default-ignorable characters (soft hyphen, zero-width space) removed.

    Example:
        >>> CaseFold()("Straße ＡＢＣ")  # array('strasse abc')
    """

    def convert(self, text: str) -> str:
        return icu.nfkc_casefold(text)


class NormalizeUTF8(_StringMap):
    """Each string in Unicode normalization form ``normalize_form`` (NFKC by default;
    ``NormalizeForm.NONE`` leaves it as it is).

    Raises:
        TypeError: ``normalize_form`` is not a :class:`NormalizeForm`.
    """

    def __init__(self, normalize_form: NormalizeForm = NormalizeForm.NFKC) -> None:
        if not isinstance(normalize_form, NormalizeForm):
            raise TypeError(
                "NormalizeUTF8: normalize_form must be a text.NormalizeForm. "
                f"Received normalize_form={normalize_form!r}"
            )
        self.normalize_form = normalize_form

    def convert(self, text: str) -> str:
        if self.normalize_form == NormalizeForm.NONE:
            return text
        return unicodedata.normalize(self.normalize_form.name, text)


class RegexReplace(_StringMap):
    """Matches of ``pattern`` (ICU syntax: ``\\p{Ll}``, ``\\p{Han}``, ``\\s`` as ICU's white
    space) replaced by ``replace`` (``$1`` names a group, ``\\$`` is a dollar), all of them or
    (``replace_all=False``) the first.

    Raises:
        TypeError: ``pattern``/``replace`` is not a str, ``replace_all`` not a bool.
        ValueError: an invalid pattern, or ``replace`` naming a group the pattern lacks (also a
            RuntimeError: MindSpore finds it when it runs).
    """

    def __init__(self, pattern: str, replace: str, replace_all: bool = True) -> None:
        for name, value, kind in (
            ("pattern", pattern, str), ("replace", replace, str), ("replace_all", replace_all, bool)
        ):  # fmt: skip
            if not isinstance(value, kind):
                raise TypeError(
                    f"RegexReplace: {name} must be a {kind.__name__}. Received {name}={value!r}"
                )
        try:
            self._compiled = icu.compile_pattern("RegexReplace", pattern)
            self._expand = icu.replacement("RegexReplace", replace, self._compiled)
        except ValueError as err:  # MindSpore: a RuntimeError when the pipeline runs
            raise PipelineValueError(str(err)) from None
        self.pattern, self.replace, self.replace_all = pattern, replace, replace_all

    def convert(self, text: str) -> str:
        return self._compiled.sub(self._expand, text, count=0 if self.replace_all else 1)


#: ICU's ``.``: any character but a line terminator
_NOT_EOL = "[^\n\r\x85\u2028\u2029]"
#: the substitutions of Matt Mahoney's wikifil.pl as MindSpore 2.10 applies them: in the
#: code-unit order of their patterns (it keeps them in a sorted map), so entities go before
#: tags, and letters/digits are spelled before the bracket rules, which then find nothing
#: (``[[Category:x]]`` keeps its words; tests/fixtures/text_vectors records 59 strings)
_WIKI_STEPS = [
    (re.compile("&[^;]*;"), " "),
    *((re.compile(str(d)), f" {w} ") for d, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])),
    (re.compile(f"<{_NOT_EOL}*>"), ""),
    (re.compile("<[^>]*>"), ""),
    (re.compile("[A-Z]"), lambda m: m.group().lower()),
    (re.compile("[^a-z\n]+"), " "),
    (re.compile("\n "), ""),
    (re.compile("\n\\s*\n"), "n"),  # ICU reads the replacement "\n" as a plain "n"
    (re.compile(r"\s+"), " "),
]  # fmt: skip


class FilterWikipediaXML(_StringMap):
    """Each string of a Wikipedia XML dump cleaned to lower-case ASCII words: entities and
    tags dropped, letters lowered, digits spelled ("2" -> "two"), anything else one space,
    trimmed; MindSpore 2.10's rules and order, recorded in ``tests/fixtures/text_vectors``.
    On an array jisu cleans every string (MindSpore 2.10 leaves all but the first empty).

    Example:
        >>> FilterWikipediaXML()("Welcome    to    China 2")  # array('welcome to china two')
    """

    def convert(self, text: str) -> str:
        for pattern, replacement in _WIKI_STEPS:
            text = pattern.sub(replacement, text)
        return text.strip(" ")
