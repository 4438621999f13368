"""The ICU behaviour MindSpore's text ops rely on, rebuilt from Python's ``unicodedata``, ``re``
and fontTools' Unicode script table (fontTools comes with matplotlib, a jisu dependency).

* :data:`WHITE_SPACE`: ICU's ``White_Space`` (``u_isUWhiteSpace``), which MindSpore's
  tokenizers and ``\\s`` split on. Python's ``str.isspace`` also counts U+001C..U+001F, which
  ICU does not.
* :func:`compile_pattern`: an ICU regular expression as a Python ``re`` pattern: ``\\p{..}`` /
  ``\\P{..}`` (general categories, scripts) and ``\\s``/``\\S`` (ICU's white space) are
  rewritten as character classes; the rest of ICU's common syntax is Python's too.
* :func:`replacement`: an ICU replacement string (``$1``, ``\\$``) as a function for ``re.sub``.
* :func:`nfkc_casefold`: ICU's ``NFKC_Casefold`` normalizer (MindSpore's ``CaseFold``).
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable

from ..core.error_types import PipelineValueError

WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_WHITE_SPACE_SET = frozenset(WHITE_SPACE)

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), removed by NFKC_Casefold.
_IGNORABLE = (
    (0xAD, 0xAD), (0x34F, 0x34F), (0x61C, 0x61C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
_IGNORABLE_RE = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _IGNORABLE) + "]")

_GROUPS = {
    "letter": "L", "casedletter": "LC", "mark": "M", "number": "N", "punctuation": "P",
    "symbol": "S", "separator": "Z", "other": "C", "uppercaseletter": "Lu",
    "lowercaseletter": "Ll", "titlecaseletter": "Lt", "modifierletter": "Lm",
    "otherletter": "Lo", "nonspacingmark": "Mn", "spacingmark": "Mc", "enclosingmark": "Me",
    "decimalnumber": "Nd", "letternumber": "Nl", "othernumber": "No",
    "connectorpunctuation": "Pc", "dashpunctuation": "Pd", "openpunctuation": "Ps",
    "closepunctuation": "Pe", "initialpunctuation": "Pi", "finalpunctuation": "Pf",
    "otherpunctuation": "Po", "mathsymbol": "Sm", "currencysymbol": "Sc",
    "modifiersymbol": "Sk", "othersymbol": "So", "spaceseparator": "Zs",
    "lineseparator": "Zl", "paragraphseparator": "Zp", "control": "Cc", "format": "Cf",
    "surrogate": "Cs", "privateuse": "Co", "unassigned": "Cn",
}  # fmt: skip
_CATEGORIES = {c.lower(): c for c in (*_GROUPS.values(),)} | {"l&": "LC"}


def is_white_space(char: str) -> bool:
    """Whether ``char`` is ICU white space (``u_isUWhiteSpace``)."""
    return char in _WHITE_SPACE_SET


def script_of(char: str) -> str:
    """``char``'s Unicode script as an ISO 15924 code ("Latn", "Hani"; "Zyyy" for Common,
    "Zinh" for Inherited), as ICU's ``uscript_getScript``."""
    from fontTools.unicodedata import script

    return script(char)


def nfkc_casefold(text: str) -> str:
    """ICU's NFKC_Casefold: compatibility-normalized, case-folded (full folding: "ß" -> "ss"),
    default-ignorable code points (soft hyphen, zero-width space ...) removed."""
    text = _IGNORABLE_RE.sub("", text)
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFD", text).casefold())
    return unicodedata.normalize("NFKC", folded.casefold())


@functools.cache
def _category_ranges() -> dict[str, list[tuple[int, int]]]:
    """Every general category's code point ranges (one pass over the code space, once)."""
    out: dict[str, list[tuple[int, int]]] = {}
    start, current = 0, unicodedata.category("\0")
    for code in range(1, sys.maxunicode + 2):
        cat = unicodedata.category(chr(code)) if code <= sys.maxunicode else None
        if cat != current:
            out.setdefault(current, []).append((start, code - 1))
            start, current = code, cat
    return out


def _script_ranges(code: str) -> list[tuple[int, int]]:
    from fontTools.unicodedata import Scripts

    starts, values = Scripts.RANGES, Scripts.VALUES
    ends = [*starts[1:], sys.maxunicode + 1]
    return [(a, b - 1) for a, b, v in zip(starts, ends, values, strict=True) if v == code]


def _script_code(name: str) -> str | None:
    from fontTools.unicodedata import Scripts, script_code

    codes = {c.lower(): c for c in Scripts.NAMES}
    if name.lower() in codes:
        return codes[name.lower()]
    code = script_code(name, default=None)
    return None if code in (None, "Zzzz") and name.lower() != "unknown" else code


def property_ranges(spec: str) -> list[tuple[int, int]] | None:
    """The code point ranges of ``\\p{spec}`` (a general category or a script, ICU's names:
    "Lu", "L", "Letter", "Han", "Script=Latin", "gc=Nd"); None for a name it does not know."""
    key, _, value = spec.partition("=")
    if not value:
        key, value = "", key
    key = key.strip().replace("_", "").replace(" ", "").lower()
    name = value.strip().replace(" ", "").replace("-", "")
    folded = name.replace("_", "").lower()
    if key in ("", "gc", "generalcategory"):
        cat = _CATEGORIES.get(folded) or _GROUPS.get(folded)
        if cat is not None:
            cats = _category_ranges()
            if cat == "LC":
                return sorted(r for c in ("Lu", "Ll", "Lt") for r in cats.get(c, []))
            return sorted(r for c, rs in cats.items() if c.startswith(cat) for r in rs)
        if key:
            return None
    if key in ("", "sc", "script", "scx", "scriptextensions"):
        code = _script_code(name)
        return None if code is None else _script_ranges(code)
    return None


def _class_body(ranges: list[tuple[int, int]]) -> str:
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, start = [], 0
    for a, b in sorted(ranges):
        if a > start:
            out.append((start, a - 1))
        start = max(start, b + 1)
    return out + ([(start, sys.maxunicode)] if start <= sys.maxunicode else [])


_WS_RANGES = [(ord(c), ord(c)) for c in sorted(WHITE_SPACE)]
_PROPERTY = re.compile(r"\\([pP])(?:\{([^}]*)\}|([A-Za-z]))")


def translate(pattern: str) -> str:
    """``pattern`` (ICU syntax) as Python ``re`` syntax. Raises ValueError for an unknown
    ``\\p{..}`` name."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        ranges, negate, step = None, False, 2
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "pP":
                match = _PROPERTY.match(pattern, i)
                if match is None:
                    raise ValueError(f"invalid property escape at {i} in {pattern!r}")
                spec = match.group(2) if match.group(2) is not None else match.group(3)
                ranges, negate, step = property_ranges(spec), nxt == "P", match.end() - i
                if ranges is None:
                    raise ValueError(f"unknown Unicode property \\{nxt}{{{spec}}} in {pattern!r}")
            elif nxt in "sS":
                ranges, negate = _WS_RANGES, nxt == "S"
            if ranges is None:
                out.append(pattern[i : i + 2])
                i += 2
                continue
            if in_class:
                out.append(_class_body(_complement(ranges) if negate else ranges))
            else:
                out.append(("[^" if negate else "[") + _class_body(ranges) + "]")
            i += step
            continue
        if char == "[" and not in_class:
            in_class = True
            end = i + 1 + (pattern.startswith("^", i + 1))
            end += pattern.startswith("]", end)  # a "]" first in a class is a literal
            out.append(pattern[i:end])
            i = end
            continue
        if char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


def compile_pattern(owner: str, pattern: str) -> re.Pattern:
    """``pattern`` (ICU syntax) compiled by ``re``; an error naming ``owner`` when invalid, a
    ValueError when the op is made and a RuntimeError too (MindSpore 2.10's, when it runs)."""
    try:
        return re.compile(translate(pattern))
    except (re.error, ValueError) as err:
        raise PipelineValueError(f"{owner}: invalid pattern {pattern!r}: {err}") from err


_DOLLAR = re.compile(r"\\(.)|\$(\d+)|\$\{(\w+)\}|\$", re.S)


def replacement(owner: str, replace: str, compiled: re.Pattern) -> Callable[[re.Match], str]:
    """ICU's replacement ``replace`` for ``compiled``'s matches: ``$n`` is group n (as many
    digits as name a group), ``${name}`` a named group, ``\\x`` the character x."""
    parts: list[str | int] = []
    pos = 0
    for m in _DOLLAR.finditer(replace):
        parts.append(replace[pos : m.start()])
        pos = m.end()
        if m.group(1) is not None:
            parts.append(m.group(1))
        elif m.group(2) is not None:
            digits = m.group(2)
            n = len(digits)
            while n > 1 and int(digits[:n]) > compiled.groups:
                n -= 1
            if int(digits[:n]) > compiled.groups:
                raise ValueError(f"{owner}: {replace!r} names group {digits[:n]}, which "
                                 f"the pattern does not have")  # fmt: skip
            parts.extend([int(digits[:n]), digits[n:]])
        elif m.group(3) is not None:
            if m.group(3) not in compiled.groupindex:
                raise ValueError(f"{owner}: {replace!r} names no group of the pattern")
            parts.append(compiled.groupindex[m.group(3)])
        else:
            raise ValueError(f"{owner}: a '$' in {replace!r} must name a group (or be '\\$')")
    parts.append(replace[pos:])

    def expand(match: re.Match) -> str:
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in parts)

    return expand
