"""MindSpore's ``mindspore.log``: ``from jisu import log as logger; logger.info(...)``.

``info``, ``debug``, ``warning``, ``error`` and ``critical`` log on one Python logger,
``jisu.log`` (a child of ``jisu``, so ``logging.getLogger("jisu")`` configures it too), which
writes to stderr with MindSpore's line format (``[WARNING] ME(pid:thread,process):time
[file:line] message``). Its level comes from MindSpore's environment variable ``GLOG_v``: 0
DEBUG, 1 INFO, 2 WARNING (the default), 3 ERROR, 4 CRITICAL, read at the first message.
``GLOG_logtostderr=0`` (MindSpore: log to files under ``GLOG_log_dir`` instead) turns the
stderr handler off; files are not written, attach a ``logging`` handler to ``jisu.log`` for
that. ``logging`` is Python's module, as in MindSpore (``log.logging.info`` is its root logger).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from typing import Any, ClassVar

__all__ = [
    "critical",
    "debug",
    "error",
    "get_level",
    "get_log_config",
    "info",
    "logging",
    "warning",
]

_GLOG_TO_LEVEL = {"0": logging.DEBUG, "1": logging.INFO, "2": logging.WARNING,
                  "3": logging.ERROR, "4": logging.CRITICAL}  # fmt: skip
_FORMAT = (
    "[%(levelname)s] ME(%(process)d:%(thread)d,%(processName)s):%(asctime)s "
    "[%(pathname)s:%(lineno)d] %(message)s"
)
_logger: logging.Logger | None = None
_LEVEL_VAR, _STDERR_VAR = "GLOG_v", "GLOG_logtostderr"  # MindSpore's (glog's) spelling


def _get_logger() -> logging.Logger:
    """The ``jisu.log`` logger, set up from ``GLOG_v`` and ``GLOG_logtostderr`` on first use."""
    global _logger
    if _logger is not None:
        return _logger
    glog = os.environ.get(_LEVEL_VAR, "2").strip()
    if glog not in _GLOG_TO_LEVEL:
        raise ValueError(f"log: GLOG_v must be one of 0, 1, 2, 3, 4. Received GLOG_v={glog!r}")
    logger = logging.getLogger("jisu.log")
    logger.setLevel(_GLOG_TO_LEVEL[glog])
    if os.environ.get(_STDERR_VAR, "1").strip() != "0":
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(_FORMAT))
        logger.addHandler(handler)
        logger.propagate = False  # printed once, by this handler
    _logger = logger
    return logger


def info(msg: str, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` with severity INFO."""
    _get_logger().info(msg, *args, stacklevel=2, **kwargs)


def debug(msg: str, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` with severity DEBUG."""
    _get_logger().debug(msg, *args, stacklevel=2, **kwargs)


def warning(msg: str, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` with severity WARNING."""
    _get_logger().warning(msg, *args, stacklevel=2, **kwargs)


def error(msg: str, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` with severity ERROR."""
    _get_logger().error(msg, *args, stacklevel=2, **kwargs)


def critical(msg: str, *args: Any, **kwargs: Any) -> None:
    """Log ``msg % args`` with severity CRITICAL."""
    _get_logger().critical(msg, *args, stacklevel=2, **kwargs)


def get_level() -> str:
    """The logger's level as MindSpore's GLOG level: "0" (DEBUG) to "4" (CRITICAL)."""
    level = _get_logger().getEffectiveLevel()
    return next((glog for glog, value in _GLOG_TO_LEVEL.items() if value >= level), "4")


def get_log_config() -> dict[str, str]:
    """MindSpore's settings as in effect: ``GLOG_v`` and ``GLOG_logtostderr``."""
    return {
        "GLOG_v": get_level(),
        "GLOG_logtostderr": os.environ.get(_STDERR_VAR, "1").strip(),
    }


class _LogActionOnce:
    """MindSpore's decorator that lets ``func`` log its warnings through ``logger`` only the
    first time any function decorated with ``key`` runs (or never, with ``no_warning``); later
    calls run with ``logger.warning`` silenced."""

    is_logged: ClassVar[dict[str, bool]] = {}

    def __init__(self, logger: Any, key: str, no_warning: bool = False) -> None:
        self.logger, self.key, self.no_warning = logger, key, no_warning

    def __call__(self, func: Any) -> Any:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not hasattr(self.logger, "warning"):
                return func(*args, **kwargs)
            old = self.logger.warning
            if self.no_warning or self.key in _LogActionOnce.is_logged:
                self.logger.warning = lambda *a, **k: None
            else:
                _LogActionOnce.is_logged[self.key] = True
            try:
                return func(*args, **kwargs)
            finally:
                self.logger.warning = old

        return wrapper
