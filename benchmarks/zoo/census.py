"""Census of the MindSpore names a model zoo's code uses, and which of them jisu provides.

Reads the Python files of local snapshots of MindSpore model repositories (``mindspore-ai/models``,
mindcv, mindocr, mindyolo: their code is never copied into jisu's repository), follows the import
aliases (``import mindspore as ms``, ``from mindspore.ops import operations as P``,
``from mindspore import nn``, ...) and lists every dotted ``mindspore`` name the code touches
(``mindspore.ops.operations.ReduceSum``), with the keyword arguments it is called with and the
number of *projects* using it. A project is a folder two levels under ``official/`` or
``research/`` (``official/cv/ResNet``) for the zoo, the repository itself for the suites.

Then each name is resolved in jisu (``mindspore`` -> ``jisu``: the module imported, the
attributes followed) and the coverage printed: names used by at least ``--min-projects``
projects, how many resolve, and the ones that do not, most used first::

    python benchmarks/zoo/census.py /path/to/models [/path/to/mindcv ...] --json census.json

A name jisu refuses on purpose (see docs/porting.md) resolves to an object that raises when used;
it counts as provided, since the user then gets MindSpore's name and the reason.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import sys
from pathlib import Path

from jisu.porting.names import Collector
from jisu.porting.names import resolve as resolve_name


def project_of(path: Path, repo: Path) -> str:
    """The project a file belongs to: ``official/cv/ResNet`` in the zoo, else the repository."""
    parts = path.relative_to(repo).parts
    if parts and parts[0] in ("official", "research", "community") and len(parts) > 3:
        return f"{repo.name}/{'/'.join(parts[:3])}"
    return repo.name


def scan(repos: list[Path]) -> tuple[dict[str, set[str]], dict[tuple[str, str], set[str]], int]:
    """name -> projects using it; (name, keyword) -> projects; number of projects."""
    names: dict[str, set[str]] = collections.defaultdict(set)
    keywords: dict[tuple[str, str], set[str]] = collections.defaultdict(set)
    projects: set[str] = set()
    for repo in repos:
        for path in sorted(repo.rglob("*.py")):
            try:
                tree = ast.parse(path.read_bytes(), filename=str(path))
            except (SyntaxError, ValueError):
                continue
            collector = Collector()
            collector.visit(tree)
            if not collector.names:
                continue
            project = project_of(path, repo)
            projects.add(project)
            for name in collector.names:
                names[name].add(project)
            for key in collector.keywords:
                keywords[key].add(project)
    return names, keywords, len(projects)


def resolve(name: str, target: str = "jisu") -> bool:
    """Whether ``name`` (``mindspore.x.y``) resolves in ``target``; a name jisu refuses by name
    counts as missing here (docs/porting.md says why)."""
    return resolve_name(name, target).status == "provided"


def namespace(name: str) -> str:
    """The namespace a name is counted under: ``mindspore.ops.operations``, ``mindspore.nn``, ..."""
    parts = name.split(".")
    ops_modules = ("operations", "functional", "composite")
    if len(parts) > 2 and parts[1] == "ops" and parts[2] in ops_modules:
        return ".".join(parts[:3])
    if len(parts) > 2 and parts[1] in ("ops", "nn", "numpy", "dataset", "train", "common", "mint"):
        return ".".join(parts[:2])
    return "mindspore (top level and the rest)"


def namespace_table(counted: dict[str, int], resolved: dict[str, bool]) -> str:
    """Markdown: per namespace, the names used by enough projects and how many resolve."""
    rows: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for name in counted:
        row = rows[namespace(name)]
        row[0] += 1
        row[1] += resolved[name]
    lines = ["| namespace | names | provided | share |", "|---|---|---|---|"]
    for ns, (total, ok) in sorted(rows.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| `{ns}` | {total} | {ok} | {100 * ok / total:.0f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="+", type=Path, help="local snapshots of the repositories")
    parser.add_argument("--min-projects", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the whole census here")
    parser.add_argument("--missing", type=int, default=60, help="how many missing names to print")
    parser.add_argument(
        "--by-namespace", action="store_true", help="a Markdown table of coverage per namespace"
    )
    args = parser.parse_args(argv)

    names, keywords, n_projects = scan(args.repos)
    counted = {n: len(p) for n, p in names.items() if len(p) >= args.min_projects}
    resolved = {n: resolve(n) for n in counted}
    missing = sorted((n for n, ok in resolved.items() if not ok), key=lambda n: -counted[n])
    ok = sum(resolved.values())
    print(f"{n_projects} projects, {len(names)} distinct mindspore names; "
          f"{len(counted)} used by >= {args.min_projects} projects, of which jisu resolves "
          f"{ok} ({100 * ok / max(len(counted), 1):.1f} %)")  # fmt: skip
    weighted = sum(counted[n] for n in resolved if resolved[n])
    print(f"weighted by projects: {100 * weighted / max(sum(counted.values()), 1):.1f} %")
    if args.by_namespace:
        print(namespace_table(counted, resolved))
    for name in missing[: args.missing]:
        print(f"  missing  {counted[name]:4d}  {name}")
    if args.json:
        args.json.write_text(json.dumps({
            "projects": n_projects,
            "names": {n: {"projects": len(p), "resolves": resolved.get(n)}
                      for n, p in sorted(names.items(), key=lambda kv: -len(kv[1]))},
            "keywords": {f"{n}({k}=)": len(p) for (n, k), p in
                         sorted(keywords.items(), key=lambda kv: -len(kv[1]))
                         if len(p) >= args.min_projects},
        }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
