"""Build jisu's documentation site and check that it documents every public name.

    pip install torch==2.13.0 -e ".[docs]"
    python docs/site/build.py                 # -> docs/_build/html/index.html
    python docs/site/build.py --out DIR       # elsewhere
    python docs/site/build.py --check-only    # check an existing build's objects.inv

The build is Sphinx's, from scratch (``-E``), with warnings as errors (``-W --keep-going``:
all of them are listed, then it fails). The check reads the built ``objects.inv`` and fails,
naming them, if a public module or one of its public names (its ``__all__``; see
``_ext/jisu_api.py``) has no entry. Exit status: 0 when both pass, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_OUT = os.path.join(ROOT, "docs", "_build", "html")

# one line of objects.inv (format 2): name domain:role priority uri display-name
_ENTRY = re.compile(r"(?x)(.+?)\s+([^\s:]+):(\S+)\s+(-?\d+)\s+(\S*)\s+(.*)")


def build(out: str = DEFAULT_OUT, quiet: bool = True) -> None:
    """Run Sphinx into ``out``; raises ``subprocess.CalledProcessError`` on any warning.

    An earlier Sphinx output there (it has a ``.buildinfo``) is removed first, so pages
    whose source is gone do not linger; any other non-empty folder is refused.
    """
    if os.path.exists(os.path.join(out, ".buildinfo")):
        shutil.rmtree(out)
    elif os.path.isdir(out) and os.listdir(out):
        raise FileExistsError(f"docs: {out} is not empty and holds no Sphinx build")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-b", "html"]
    command += ["-q"] if quiet else []
    subprocess.run([*command, HERE, out], check=True, cwd=ROOT)


def documented_names(out: str = DEFAULT_OUT) -> set[str]:
    """The Python objects and modules in the build's ``objects.inv``."""
    with open(os.path.join(out, "objects.inv"), "rb") as f:
        header = [f.readline() for _ in range(4)]
        if not header[0].startswith(b"# Sphinx inventory version 2"):
            raise ValueError(f"{out}/objects.inv: not a version 2 inventory: {header[0]!r}")
        body = zlib.decompress(f.read()).decode("utf-8")
    names = set()
    for line in body.splitlines():
        match = _ENTRY.match(line.rstrip())
        if match and match.group(2) == "py":
            names.add(match.group(1))
    return names


def expected_names() -> set[str]:
    """Every public module and every public name of each, as dotted paths."""
    sys.path.insert(0, os.path.join(HERE, "_ext"))
    sys.path.insert(0, ROOT)
    import jisu_api

    names = set(jisu_api.public_modules())
    for modname in jisu_api.public_modules():
        names |= {f"{modname}.{name}" for name in jisu_api.public_names(modname)}
    return names


def missing_names(out: str = DEFAULT_OUT) -> list[str]:
    """The public names the built reference lacks, sorted."""
    return sorted(expected_names() - documented_names(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="output folder (%(default)s)")
    parser.add_argument("--check-only", action="store_true", help="do not build, only check")
    parser.add_argument("--verbose", action="store_true", help="Sphinx's progress output")
    args = parser.parse_args(argv)
    if not args.check_only:
        start = time.perf_counter()
        try:
            build(args.out, quiet=not args.verbose)
        except FileExistsError as error:
            print(error, file=sys.stderr)
            return 1
        except subprocess.CalledProcessError:
            print("docs: the build has warnings (listed above); it must have none", file=sys.stderr)
            return 1
        print(f"docs: built {args.out} in {time.perf_counter() - start:.0f} s")
    missing = missing_names(args.out)
    if missing:
        print(f"docs: {len(missing)} public names have no entry in the reference:", file=sys.stderr)
        for name in missing:
            print(f"  {name}", file=sys.stderr)
        return 1
    print(f"docs: all {len(expected_names())} public modules and names are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
