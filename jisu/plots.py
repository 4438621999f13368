"""Whether charts can be drawn: matplotlib is an optional dependency (``jisu[plots]``).

The main job's curves (``jisu train``) and the charts of the ``jisu doctor`` report are
drawn by matplotlib; everything else about them (the numbers, the verdict, the report's
tables) works without it.
"""

from __future__ import annotations

INSTALL_HINT = 'pip install "jisu[plots]"'


def available() -> bool:
    """True when matplotlib can be imported (asked only when a chart is about to be drawn)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def missing_note(what: str = "curves") -> str:
    """One line saying that ``what`` was not drawn and how to get it."""
    return f"{what}: not drawn: matplotlib is not installed ({INSTALL_HINT})"
