"""``jisu port``: copy a MindSpore project, swap its imports for jisu's, optionally set its
device target and export format, and say which MindSpore names it uses that jisu refuses or
lacks (with the file and line of the first use), before the first run finds them one by one.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .names import NameUse, names_in_source, resolve
from .rewrite import DEVICES, rewrite_file

EXPORT_FORMATS = ("ONNX", "TORCH_EXPORT")

# file_format defaults that no PyTorch runtime reads: a YAML value, a Python default or keyword
_YAML_FORMAT = re.compile(r"""^(\s*file_format\s*:\s*)(["']?)(MINDIR|AIR)\2""", re.M)
_PY_FORMAT = re.compile(r"""(file_format["']?\s*[:=]\s*(?:default\s*=\s*)?)(["'])(MINDIR|AIR)\2""")
_PY_ARG_FORMAT = re.compile(
    r"""(["']--file_format["'][^)]*?default\s*=\s*)(["'])(MINDIR|AIR)\2""", re.S
)
_IGNORED = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")


@dataclass
class PortReport:
    """What :func:`port_project` did and found."""

    files: int = 0  #: files changed
    names_swapped: int = 0  #: ``mindspore`` name tokens that became ``jisu``
    device_targets: int = 0  #: device-target defaults changed
    export_formats: int = 0  #: MINDIR/AIR export defaults changed
    #: MindSpore name -> (how jisu answers it, "file:line" of its first use)
    uses: dict[str, tuple[NameUse, str]] = field(default_factory=dict)
    #: "file:line" of each MINDIR/AIR export default left as it is
    runtime_formats: list[str] = field(default_factory=list)

    def by_status(self, status: str) -> list[tuple[NameUse, str]]:
        """The uses whose answer is ``status``, by name."""
        return [self.uses[n] for n in sorted(self.uses) if self.uses[n][0].status == status]

    def summary(self) -> str:
        """The report as text, the refused and missing names with where they are used."""
        provided = len(self.by_status("provided"))
        lines = [
            f"{self.files} files changed: {self.names_swapped} imports/names swapped to jisu, "
            f"{self.device_targets} device targets set, {self.export_formats} export formats set",
            f"{len(self.uses)} MindSpore names used: {provided} provided, "
            f"{len(self.by_status('refused'))} refused (they raise with the reason when used), "
            f"{len(self.by_status('missing'))} missing",
        ]
        for use, where in self.by_status("refused"):
            lines.append(f"  refused  {use.name}  ({where}): {use.reason}")
        for use, where in self.by_status("missing"):
            extra = f": {use.reason}" if use.reason else ""
            lines.append(f"  missing  {use.name}  ({where}){extra}")
        if self.runtime_formats:
            lines.append(
                "export: file_format MINDIR/AIR are MindSpore runtime formats; pass "
                "--export-format ONNX to set them ("
                + ", ".join(self.runtime_formats[:5])
                + (", ..." if len(self.runtime_formats) > 5 else "")
                + ")"
            )
        return "\n".join(lines)


def port_project(
    src: str | Path,
    dst: str | Path | None = None,
    device: str | None = None,
    export_format: str | None = None,
) -> PortReport:
    """Port the MindSpore project ``src`` (a folder or one ``.py`` file) into ``dst``.

    Args:
        src: the project.
        dst: where the ported copy goes; must not exist. None: only check ``src`` (nothing is
            written).
        device: set device-target defaults in ``.py``/``.yaml`` files to ``"CPU"`` or
            ``"GPU"`` (None: leave them).
        export_format: set ``file_format`` defaults of ``MINDIR``/``AIR`` to ``"ONNX"`` or
            ``"TORCH_EXPORT"`` (None: leave them, and list where they are).

    Returns:
        A :class:`PortReport`: the counts, and how jisu answers every MindSpore name used.

    Raises:
        FileNotFoundError: ``src`` does not exist.
        FileExistsError: ``dst`` exists (a port never writes over files).
        ValueError: ``device`` or ``export_format`` is not one of the choices.
    """
    src = Path(src)
    if device is not None and device not in DEVICES:
        raise ValueError(f"port_project: device must be one of {DEVICES}. Received {device!r}")
    if export_format is not None and export_format not in EXPORT_FORMATS:
        raise ValueError(
            f"port_project: export_format must be one of {EXPORT_FORMATS}. "
            f"Received {export_format!r}"
        )
    if not src.exists():
        raise FileNotFoundError(f"port_project: no such project: {src}")
    report = PortReport()
    _survey(src, report)
    if dst is None:
        return report
    dst = Path(dst)
    if dst.exists():
        raise FileExistsError(f"port_project: '{dst}' exists; give a new folder")
    if src.is_dir():
        shutil.copytree(src, dst, symlinks=True, ignore=_IGNORED)
        files = sorted(p for p in dst.rglob("*") if p.is_file() and not p.is_symlink())
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        files = [dst]
    for path in files:
        if path.suffix not in (".py", ".yaml", ".yml"):
            continue
        names, targets = rewrite_file(path, device)
        formats = _set_export_format(path, export_format) if export_format else 0
        report.files += bool(names or targets or formats)
        report.names_swapped += names
        report.device_targets += targets
        report.export_formats += formats
    if export_format:
        report.runtime_formats = []
    return report


def _sources(src: Path) -> list[Path]:
    if src.is_file():
        return [src]
    return sorted(
        p for p in src.rglob("*")
        if p.is_file() and p.suffix in (".py", ".yaml", ".yml") and ".git" not in p.parts
    )  # fmt: skip


def _survey(src: Path, report: PortReport) -> None:
    """Every MindSpore name ``src`` uses (first use), resolved; MINDIR/AIR export defaults."""
    first: dict[str, str] = {}
    for path in _sources(src):
        where = path.name if src.is_file() else str(path.relative_to(src))
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if path.suffix == ".py":
            for name, line in sorted(names_in_source(text, str(path)).lines.items()):
                first.setdefault(name, f"{where}:{line}")
        for pattern in (_YAML_FORMAT,) if path.suffix != ".py" else (_PY_FORMAT, _PY_ARG_FORMAT):
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                report.runtime_formats.append(f"{where}:{line}")
    report.uses = {name: (resolve(name), where) for name, where in sorted(first.items())}


def _set_export_format(path: Path, export_format: str) -> int:
    """Set the MINDIR/AIR ``file_format`` defaults of one file to ``export_format``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return 0
    patterns = (_YAML_FORMAT,) if path.suffix != ".py" else (_PY_FORMAT, _PY_ARG_FORMAT)
    count = 0
    for pattern in patterns:
        text, n = pattern.subn(rf"\g<1>\g<2>{export_format}\g<2>", text)
        count += n
    if count:
        path.write_text(text, encoding="utf-8")
    return count
