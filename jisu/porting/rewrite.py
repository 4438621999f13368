"""Swap ``mindspore`` for ``jisu`` in a project's Python code, the way a user ports a script.

The rewrite is token-based: every *name* token ``mindspore`` that starts a dotted path
(``import mindspore as ms``, ``from mindspore.ops import operations as P``,
``mindspore.common.dtype.float32``, ``isinstance(x, mindspore.Tensor)``) becomes ``jisu``;
strings, comments, other names (``mindspore_hub``, ``my_mindspore``) and attributes called
``mindspore`` (``obj.mindspore``) are left alone. The text around each name keeps its exact
spelling, so line numbers in tracebacks match the project's own files.

The device target is a configuration value, not an import: :func:`force_device_config` turns
``device_target: Ascend`` / ``"GPU"`` in YAML configs and ``device_target="Ascend"`` defaults in
Python sources into the device asked for (``"CPU"`` to try a project on a laptop, ``"GPU"`` to
run an Ascend project on CUDA).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

SOURCE = "mindspore"
TARGET = "jisu"
DEVICES = ("CPU", "GPU")

_TARGETS = "Ascend|GPU|CPU|Davinci"
_YAML_TARGET = re.compile(rf"""^(\s*device_target\s*:\s*)(["']?)({_TARGETS})\2""", re.M)
_PY_TARGET = re.compile(
    rf"""(device_target["']?\s*[:=]\s*(?:default\s*=\s*)?)(["'])({_TARGETS})\2"""
)
_PY_ARG_DEFAULT = re.compile(
    rf"""(["']--device_target["'][^)]*?default\s*=\s*)(["'])({_TARGETS})\2""", re.S
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


def force_device_config(text: str, yaml: bool, device: str = "CPU") -> tuple[str, int]:
    """``text`` with its device-target defaults (Ascend, GPU, CPU) set to ``device``, in a YAML
    config (``yaml``) or a Python source; returns the text and the number of values changed."""
    if device not in DEVICES:
        raise ValueError(
            f"force_device_config: device must be one of {DEVICES}. Received {device!r}"
        )
    changed = 0

    def swap(match: re.Match) -> str:
        nonlocal changed
        changed += match.group(3) != device
        return f"{match.group(1)}{match.group(2)}{device}{match.group(2)}"

    if yaml:
        text = _YAML_TARGET.sub(swap, text)
    else:
        text = _PY_ARG_DEFAULT.sub(swap, _PY_TARGET.sub(swap, text))
    return text, changed


def force_cpu_config(text: str, yaml: bool) -> tuple[str, int]:
    """:func:`force_device_config` to ``"CPU"`` (the zoo harness's setting)."""
    return force_device_config(text, yaml, "CPU")


def rewrite_file(path: Path, device: str | None) -> tuple[int, int]:
    """Rewrite one ``.py``/``.yaml``/``.yml`` file in place; returns (names swapped, device
    targets changed). Files that are not UTF-8 text are left alone."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return 0, 0
    yaml = path.suffix != ".py"
    new, names = (text, 0) if yaml else rewrite_source(text)
    targets = 0
    if device is not None:
        new, targets = force_device_config(new, yaml=yaml, device=device)
    if names or targets:
        path.write_text(new, encoding="utf-8")
    return names, targets


def rewrite_tree(root: Path, device: str | None = "CPU") -> dict[str, int]:
    """Rewrite every ``.py``, ``.yaml`` and ``.yml`` file under ``root`` in place, device
    targets set to ``device`` (None: left as they are).

    Returns counts: ``files`` rewritten, ``names`` replaced, ``device_targets`` changed.
    """
    stats = {"files": 0, "names": 0, "device_targets": 0}
    for path in sorted(Path(root).rglob("*")):
        if not path.is_file() or path.suffix not in (".py", ".yaml", ".yml"):
            continue
        names, targets = rewrite_file(path, device)
        if names or targets:
            stats["files"] += 1
            stats["names"] += names
            stats["device_targets"] += targets
    return stats
