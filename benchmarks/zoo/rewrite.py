"""Swap ``mindspore`` for ``jisu`` in a project's Python code, the way a user ports a script.

The rewrite is token-based: every *name* token ``mindspore`` that starts a dotted path
(``import mindspore as ms``, ``from mindspore.ops import operations as P``,
``mindspore.common.dtype.float32``, ``isinstance(x, mindspore.Tensor)``) becomes ``jisu``;
strings, comments, other names (``mindspore_hub``, ``my_mindspore``) and attributes called
``mindspore`` (``obj.mindspore``) are left alone. The text around each name keeps its exact
spelling, so line numbers in tracebacks match the project's own files.

The device target is a configuration value, not an import: :func:`force_cpu_config` turns
``device_target: Ascend`` / ``"GPU"`` in YAML configs and ``device_target="Ascend"`` defaults in
Python sources into ``CPU``.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

SOURCE = "mindspore"
TARGET = "jisu"

_YAML_TARGET = re.compile(r"""^(\s*device_target\s*:\s*)(["']?)(Ascend|GPU|Davinci)\2""", re.M)
_PY_TARGET = re.compile(
    r"""(device_target["']?\s*[:=]\s*(?:default\s*=\s*)?)(["'])(Ascend|GPU|Davinci)\2"""
)
_PY_ARG_DEFAULT = re.compile(
    r"""(["']--device_target["'][^)]*?default\s*=\s*)(["'])(Ascend|GPU|Davinci)\2""", re.S
)


def rewrite_source(text: str, source: str = SOURCE, target: str = TARGET) -> tuple[str, int]:
    """``text`` with each ``source`` name token that starts a dotted path replaced by ``target``.

    Returns the new text and the number of replacements. Text that does not tokenize (Python 2
    code, a half-written file) is returned unchanged with a count of 0.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text, 0
    hits: list[tuple[int, int]] = []  # (row, col) of each name to replace
    previous = None  # the previous significant token
    for tok in tokens:
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT):
            if tok.type == tokenize.NEWLINE:
                previous = None
            continue
        attribute = previous is not None and previous.type == tokenize.OP and previous.string == "."
        if tok.type == tokenize.NAME and tok.string == source and not attribute:
            hits.append(tok.start)
        previous = tok
    if not hits:
        return text, 0
    lines = text.splitlines(keepends=True)
    for row, col in reversed(hits):  # right to left: earlier columns stay valid
        line = lines[row - 1]
        lines[row - 1] = line[:col] + target + line[col + len(source) :]
    return "".join(lines), len(hits)


def force_cpu_config(text: str, yaml: bool) -> tuple[str, int]:
    """``text`` with Ascend/GPU device-target defaults set to ``CPU`` (YAML or Python)."""
    if yaml:
        return _YAML_TARGET.subn(r"\1\2CPU\2", text)
    text, n1 = _PY_TARGET.subn(r"\1\2CPU\2", text)
    text, n2 = _PY_ARG_DEFAULT.subn(r"\1\2CPU\2", text)
    return text, n1 + n2


def rewrite_tree(root: Path) -> dict[str, int]:
    """Rewrite every ``.py``, ``.yaml`` and ``.yml`` file under ``root`` in place.

    Returns counts: ``files`` rewritten, ``names`` replaced, ``device_targets`` forced to CPU.
    """
    stats = {"files": 0, "names": 0, "device_targets": 0}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in (".py", ".yaml", ".yml"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new, names = (text, 0) if path.suffix != ".py" else rewrite_source(text)
        new, targets = force_cpu_config(new, yaml=path.suffix != ".py")
        if names or targets:
            path.write_text(new, encoding="utf-8")
            stats["files"] += 1
            stats["names"] += names
            stats["device_targets"] += targets
    return stats
