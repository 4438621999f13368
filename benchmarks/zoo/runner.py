"""Run one zoo project on jisu, level by level (the child process of ``harness.py``).

The project is copied into a temporary directory, its imports swapped (``mindspore`` ->
``jisu``, see :mod:`rewrite`) and its device target forced to CPU; then the project's driver
(``drivers/<name>.py``) is imported and the levels run in order, each only if the one before
passed:

- ``imports``: the driver imports the project's own modules (network, loss, config, train cell);
- ``forward``: one forward pass of a fresh network in eval mode; every output finite;
- ``train``: ``steps`` steps on a fixed batch through the project's own wiring; losses finite
  and the last below the first;
- ``reload``: the trained network saved with ``save_checkpoint``, loaded with
  ``load_checkpoint`` + ``load_param_into_net`` into a fresh one: same eval output;
- ``export``: where the project exports: ``export(net, *inputs, file_name, file_format="ONNX")``
  on the trained network, checked in onnxruntime against the network's own output (a ported
  project changes its configured ``file_format`` from MINDIR/AIR to ONNX; the format it
  configures, and jisu's refusal of MINDIR/AIR, are recorded as ``project_format``).

Each level's result (passed, seconds, or the exception's type, message and innermost frame in
jisu or in the project) is written to the JSON file after every level, so a run killed by the
harness's timeout still tells where it was.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import types
import warnings
from pathlib import Path
from typing import Any, ClassVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rewrite  # noqa: E402
import synth  # noqa: E402

LEVELS = ("imports", "forward", "train", "reload", "export")


def load_driver(name: str, folder: Path | None = None) -> types.ModuleType:
    """The driver module ``<folder>/<name>.py`` (default folder: ``drivers/`` here)."""
    path = (folder or HERE / "drivers") / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"zoo_driver_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def repo_root(zoo: Path, driver: types.ModuleType) -> Path:
    """The repository the driver's project lives in: ``--zoo`` itself, or a sibling snapshot
    named by the driver's ``REPO`` (``mindspore-lab+mindcv`` next to ``mindspore-ai+models``)."""
    repo = getattr(driver, "REPO", None)
    return zoo if repo is None else zoo.parent / repo


def stage(zoo: Path, driver: types.ModuleType, workdir: Path) -> tuple[Path, dict]:
    """Copy the driver's project (``PROJECT``, plus ``ALSO`` paths of the same repository) into
    ``workdir`` and rewrite it; return the project's copy and the rewrite's counts."""
    root = repo_root(zoo, driver)
    src = root / driver.PROJECT
    if not src.is_dir():
        raise FileNotFoundError(f"no project {driver.PROJECT!r} under {root}")
    ignore = shutil.ignore_patterns(
        ".git", "*.ckpt", "*.mindir", "*.om", "*.air", "*.onnx", "*.png", "*.jpg", "*.pdf",
        "*.so", "cpp_infer", "ascend310_infer",
    )  # fmt: skip
    dest = workdir / driver.PROJECT
    shutil.copytree(src, dest, ignore=ignore)
    for extra in getattr(driver, "ALSO", ()):
        if (root / extra).is_dir():
            shutil.copytree(root / extra, workdir / extra, ignore=ignore, dirs_exist_ok=True)
        else:
            (workdir / extra).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / extra, workdir / extra)
    return dest, rewrite.rewrite_tree(workdir)


class _Stub(types.ModuleType):
    """A stand-in for a third-party package a project imports only for data preparation
    (``gensim`` for word vectors, ``pycocotools``): any attribute is a further stand-in, and
    calling one fails, saying so."""

    __path__: ClassVar[list] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Stub(f"{self.__name__}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.__name__} is stubbed by the zoo harness (driver STUBS)")


class _StubFinder:
    def __init__(self, names: list[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if any(fullname == n or fullname.startswith(n + ".") for n in self.names):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return _Stub(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def pin_mode(jisu: Any, mode: int, result: dict) -> None:
    """Make ``set_context(mode=...)`` keep ``mode`` (PYNATIVE, or GRAPH under ``--graph``):
    most projects ask for GRAPH_MODE themselves, and the harness decides where it compiles.
    The modes the project asked for are listed in the result."""
    original = jisu.context.set_context
    asked = result.setdefault("mode_asked", [])

    def set_context(**kwargs: Any) -> None:
        if "mode" in kwargs:
            asked.append(kwargs["mode"])
            kwargs["mode"] = mode
        original(**kwargs)

    jisu.context.set_context = set_context
    jisu.set_context = set_context
    original(mode=mode)


def innermost(tb: Any, roots: dict[str, str]) -> str | None:
    """``file:line in function`` of the last traceback frame under one of ``roots`` (a
    directory -> the name it is shown under: ``jisu/...``, ``project:src/...``)."""
    found = None
    for frame in traceback.extract_tb(tb):
        if any(frame.filename.startswith(r) for r in roots):
            found = frame
    if found is None:
        return None
    name = found.filename
    for root, shown in roots.items():
        if name.startswith(root):
            name = shown + name[len(root) :]
            break
    return f"{name}:{found.lineno} in {found.name}"


def failure(exc: BaseException, roots: dict[str, str]) -> dict:
    """The record of a level's failure: the root cause (jisu's first-step check and other
    wrappers re-raise ``from`` the original error), with the wrapper's message kept."""
    outer = exc
    while exc.__cause__ is not None and exc.__cause__ is not exc:
        exc = exc.__cause__
    message = " ".join(str(exc).strip().splitlines())
    hint = None
    owner = re.match(r"'(\w+)' object has no attribute", str(exc))
    if owner and "jisu" in sys.modules:
        import jisu.nn

        if owner.group(1) in ("Tensor", "Parameter"):
            hint = "Tensor method"
        elif isinstance(getattr(jisu.nn, owner.group(1), None), type):
            hint = "nn layer"
    record = {
        "area_hint": hint,
        "type": type(exc).__name__,
        "message": message[:600],
        "where": innermost(exc.__traceback__, roots),
    }
    if outer is not exc:
        record["outer"] = f"{type(outer).__name__}: {' '.join(str(outer).split())[:300]}"
    return record


def project_format(project: Path) -> str | None:
    """The export format a project configures (``file_format`` in its YAML configs or the
    default of its export script's ``--file_format``), the most common one; None if none."""
    found: dict[str, int] = {}
    pattern = re.compile(
        r"""^\s*file_format\s*[:=]\s*["']?(MINDIR|AIR|ONNX)\b"""
        r"""|--file_format["'].*default\s*=\s*["'](MINDIR|AIR|ONNX)\b""",
        re.M | re.I,
    )
    paths = [*project.glob("*.yaml"), *project.glob("config*/*.yaml"), *project.glob("export*.py")]
    for path in paths:
        for match in pattern.finditer(path.read_text(errors="replace")):
            fmt = (match.group(1) or match.group(2)).upper()
            found[fmt] = found.get(fmt, 0) + 1
    return max(found, key=found.get) if found else None


def run(args: argparse.Namespace) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    import jisu

    driver = load_driver(args.project, Path(args.drivers) if args.drivers else None)
    result: dict[str, Any] = {"project": args.project, "path": driver.PROJECT, "levels": {}}
    out = Path(args.json)

    def save() -> None:
        out.write_text(json.dumps(result, indent=1, default=str))

    workdir = Path(tempfile.mkdtemp(prefix=f"zoo_{args.project}_"))
    try:
        project, counts = stage(Path(args.zoo), driver, workdir)
    except Exception as exc:
        result["levels"]["imports"] = {"ok": False, "error": failure(exc, {})}
        save()
        return result
    result["rewrite"] = counts
    roots = {
        str(Path(jisu.__file__).parent) + "/": "jisu/",
        str(project) + "/": "project:",
        str(workdir) + "/": "zoo:",
    }
    os.chdir(project)
    for extra in reversed([".", *getattr(driver, "PATHS", [])]):
        sys.path.insert(0, str((project / extra).resolve()))
    sys.argv = [str(project / "train.py"), *getattr(driver, "ARGV", [])]
    jisu.set_context(device_target="CPU")
    pin_mode(jisu, jisu.GRAPH_MODE if args.graph else jisu.PYNATIVE_MODE, result)
    stubs = list(getattr(driver, "STUBS", []))
    if stubs:
        sys.meta_path.insert(0, _StubFinder(stubs))
        result["stubs"] = stubs
    p = types.SimpleNamespace(dir=project, workdir=workdir, steps=args.steps, graph=args.graph)
    exports = getattr(driver, "EXPORT", False)

    def level(name: str, body) -> bool:
        start = time.perf_counter()
        record: dict[str, Any] = {}
        result["levels"][name] = record
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                record.update(body() or {})
            record["ok"] = "error" not in record
            notes = sorted({str(w.message)[:200] for w in caught if "jisu" in str(w.filename)})
            if notes:
                record["warnings"] = notes[:5]
        except Exception as exc:
            record["ok"] = False
            record["error"] = failure(exc, roots)
            if args.verbose:
                traceback.print_exc()
        record["seconds"] = round(time.perf_counter() - start, 2)
        save()
        return record["ok"]

    def do_imports() -> dict:
        driver.imports(p)
        if getattr(driver, "TRAIN_PY", True):  # informative: the level does not depend on it
            return {"train_py": synth.import_train_py(getattr(driver, "TRAIN_MODULE", "train"))}
        return {}

    def do_forward() -> dict:
        torch.manual_seed(0)
        net = driver.network(p)
        net.set_train(False) if hasattr(net, "set_train") else net.eval()
        with torch.no_grad():
            output = net(*driver.inputs(p))
        if not synth.finite(output):
            return {"error": {"type": "NonFinite", "message": "forward output not finite"}}
        return {"shape": synth.shape_of(output)}

    def do_train() -> dict:
        torch.manual_seed(0)
        losses = [float(x) for x in driver.train(p, args.steps)]
        record: dict[str, Any] = {"losses": [round(x, 5) for x in losses]}
        model = getattr(p, "model", None)
        if args.graph:
            step = getattr(model, "train_network", None) if model is not None else None
            if step is None:
                record["graph"] = "eager: the project's own loop (GRAPH_MODE compiles Model's step)"
            elif hasattr(step, "is_compiled"):
                record["graph"] = "compiled" if step.is_compiled else "fell back to eager"
            else:
                record["graph"] = f"not compiled ({type(step).__name__})"
        if not losses or not all(synth.finite(x) for x in losses):
            record["error"] = {"type": "NonFinite", "message": f"losses {losses}"}
        elif len(losses) > 1 and not losses[-1] < losses[0]:
            record["error"] = {"type": "NotFalling", "message": f"losses {losses}"}
        return record

    def do_reload() -> dict:
        net = p.trained if getattr(p, "trained", None) is not None else driver.network(p)
        path = str(workdir / "reload.ckpt")
        jisu.save_checkpoint(net, path)
        torch.manual_seed(1)
        fresh = driver.network(p)
        missing = jisu.load_param_into_net(fresh, jisu.load_checkpoint(path))
        record: dict[str, Any] = {"not_loaded": list(missing or [])[:10]}
        # every loaded tensor is the trained one (in the fresh network's dtype)
        trained = dict(net.state_dict())
        differ = [
            name
            for name, value in fresh.state_dict().items()
            if name in trained
            and value.is_floating_point()
            and not torch.equal(value, trained[name].to(value.dtype))
        ]
        if differ:
            record["error"] = {"type": "Mismatch", "message": f"tensors differ: {differ[:5]}"}
            return record
        level = getattr(net, "_jisu_amp", None)
        if level in ("O2", "O3"):
            # Model converted the trained network in place: evaluate the reload the same way
            # (unless the driver's network() already did)
            try:
                jisu.amp.auto_mixed_precision(fresh, level)
                record["amp"] = level
            except ValueError:
                pass
        inputs = driver.inputs(p)
        outs = []
        for n in (net, fresh):
            n.set_train(False) if hasattr(n, "set_train") else n.eval()
            try:
                with torch.no_grad():
                    outs.append(synth.flat(n(*inputs)))
            except Exception as exc:
                if n is fresh:
                    raise
                # e.g. a network converted in place by amp O2/O3 takes no float32 input
                record["note"] = f"the trained network itself fails: {failure(exc, roots)}"
                outs.append(None)
        if not all(synth.finite(o) for o in outs[1]):
            record["error"] = {"type": "NonFinite", "message": "reloaded output not finite"}
        elif outs[0] is not None:
            # a network trained at amp O2/O3 (or to_float) computes in fp16/bf16: its outputs
            # and the float32 reload's agree to low precision's rounding, not float32's
            low = getattr(net, "_jisu_amp", None) in ("O2", "O3") or any(
                a.dtype in (torch.float16, torch.bfloat16) for a in outs[0]
            )
            atol, rtol = (3e-2, 3e-2) if low else (1e-4, 1e-3)
            record["tolerance"] = "low precision" if low else "float32"
            same = len(outs[0]) == len(outs[1]) and all(
                torch.allclose(a.float(), b.float(), atol=atol, rtol=rtol) for a, b in zip(*outs)
            )
            if not same:
                record["error"] = {"type": "Mismatch", "message": "reloaded output differs"}
        return record

    def do_export() -> dict:
        record: dict[str, Any] = {}
        ckpt = workdir / "reload.ckpt"
        if ckpt.exists():
            # as the zoo's export.py does: a fresh network with the trained checkpoint loaded
            # (in float32 where training converted the network to amp O2/O3's half precision)
            torch.manual_seed(2)
            net = driver.network(p)
            jisu.load_param_into_net(net, jisu.load_checkpoint(str(ckpt)))
            record["network"] = "fresh + trained checkpoint"
        else:
            net = p.trained if getattr(p, "trained", None) is not None else driver.network(p)
        net.set_train(False) if hasattr(net, "set_train") else net.eval()
        name = str(workdir / "exported")
        inputs = driver.inputs(p)
        own = project_format(project)
        if own:
            # what the project's own export would ask for: MINDIR/AIR are refused by name
            record["project_format"] = own
            if own != "ONNX":
                try:
                    jisu.export(net, *inputs, file_name=name, file_format=own)
                except (NotImplementedError, ValueError) as exc:
                    record["project_format_refused"] = f"{type(exc).__name__}: {exc}"[:300]
        exported = False
        if hasattr(driver, "export"):
            try:
                driver.export(p, net, name)
                exported = True
            except NotImplementedError as exc:  # the driver asks for MINDIR/AIR: refused
                if "MindSpore runtime format" not in str(exc):
                    raise
                record["project_format_refused"] = f"{type(exc).__name__}: {exc}"[:300]
        if not exported:
            # a ported project sets file_format="ONNX" in its config; export checks the model
            # in onnxruntime against the network's own output (raises on a mismatch)
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    jisu.export(net, *inputs, file_name=name, file_format="ONNX")
                notes = [str(w.message)[:300] for w in caught]
                notes = [n for n in notes if n.startswith("export:")]
                if notes:  # e.g. the TorchScript exporter used where the dynamo one failed
                    record["exporter_note"] = notes[0]
            except Exception as exc:
                # export's own one-line message (network class, exporter's reason) is the
                # blocker; the root cause's frame says where in jisu or the project it arose
                record["error"] = failure(exc, roots)
                if str(exc).startswith("export:"):
                    record["error"]["message"] = " ".join(str(exc).split())[:600]
                    record["error"]["type"] = f"{type(exc).__name__} ({record['error']['type']})"
                return record
        files = sorted(workdir.glob("exported*"))
        record["files"] = [f"{f.name} ({f.stat().st_size} bytes)" for f in files]
        record["checked"] = "driver's export" if exported else "onnxruntime"
        return record

    bodies = {
        "imports": do_imports,
        "forward": do_forward,
        "train": do_train,
        "reload": do_reload,
        "export": do_export,
    }
    for name in LEVELS:
        if name not in args.levels or (name == "export" and not exports):
            continue
        if not level(name, bodies[name]):
            break
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--project", required=True, help="driver name (drivers/<name>.py)")
    parser.add_argument("--json", required=True)
    parser.add_argument("--drivers", help="folder of the drivers (default: drivers/ here)")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--graph", action="store_true")
    parser.add_argument("--levels", default=",".join(LEVELS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    parser.add_argument("--verbose", action="store_true", help="print each failure's traceback")
    args = parser.parse_args()
    args.levels = args.levels.split(",")
    run(args)


if __name__ == "__main__":
    main()
