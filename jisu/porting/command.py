"""The ``jisu port`` command (its parser and what it runs), kept beside the porting code."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .project import EXPORT_FORMATS, port_project
from .rewrite import DEVICES


def add_port_command(commands: Any, formatter_class: type, debug_flag: Any) -> None:
    """Add ``port`` to ``jisu``'s subcommands (``commands``, argparse's subparsers)."""
    port = commands.add_parser(
        "port",
        help="copy a MindSpore project with its imports swapped to jisu, and list what jisu "
        "refuses or lacks of what it uses",
        description="Copy the MindSpore project SRC (a folder or a .py file) to DST with every "
        "'mindspore' import and dotted name in its code swapped for 'jisu' (strings and "
        "comments untouched, line numbers kept), then list the MindSpore names it uses that "
        "jisu refuses (with the reason) or lacks, each with the file and line of its first "
        "use. Without DST, only the list. DST must not exist: a port never writes over files.",
        formatter_class=formatter_class,
    )
    port.add_argument("src", help="the MindSpore project: a folder or one .py file")
    port.add_argument("dst", nargs="?", help="where the ported copy goes (a new folder)")
    port.add_argument(
        "--device",
        choices=DEVICES,
        default=None,
        help="set the device_target defaults of the project's .py and .yaml files (Ascend, "
        "GPU) to this (default: leave them)",
    )
    port.add_argument(
        "--export-format",
        choices=EXPORT_FORMATS,
        default=None,
        help="set the file_format defaults MINDIR/AIR (MindSpore runtime formats) to this "
        "(default: leave them and list where they are)",
    )
    port.add_argument("--json", action="store_true", help="print the report as JSON")
    debug_flag(port)
    port.set_defaults(run=run_port)


def run_port(args: argparse.Namespace) -> int:
    """Port (or only check) the project; print the report. Returns 0."""
    report = port_project(args.src, args.dst, device=args.device, export_format=args.export_format)
    if args.json:
        print(
            json.dumps(
                {
                    "files": report.files,
                    "names_swapped": report.names_swapped,
                    "device_targets": report.device_targets,
                    "export_formats": report.export_formats,
                    "runtime_formats": report.runtime_formats,
                    "names": {
                        name: {"status": use.status, "reason": use.reason, "first_use": where}
                        for name, (use, where) in report.uses.items()
                    },
                },
                indent=1,
            )
        )
    else:
        if args.dst is not None:
            print(f"ported {args.src} -> {args.dst}")
        print(report.summary())
    return 0
