"""Starting worker processes: what the forkserver imports, deferred packages, the pools'
shared interface, and a pool shut down while its workers are still starting."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.processes import forkserver_boot
from jisu.dataset.engine.processes import start as process_start
from jisu.dataset.engine.processes.pool import ProcessPool
from jisu.dataset.engine.tasks import StageTask
from jisu.dataset.engine.thread_pool import ThreadPool
from jisu.dataset.engine.worker_pool import WorkerPool

# A fresh program whose process stage (a NumPy source, an op of its own) reports what its
# worker has imported: the worker sees what the forkserver imported, plus the stage's modules.
WORKER_MODULES = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jisu.dataset as ds

    NAMES = {names!r}

    def imported(x):
        import sys
        return np.array([name in sys.modules for name in NAMES])

    def uses_package_names(x):
        import jisu, jisu.dataset
        assert jisu.dataset.NumpySlicesDataset is not None and jisu.__version__
        return np.array(["__all__" in vars(sys.modules["jisu"])])  # set by jisu's __init__

    def first(op):
        data = ds.NumpySlicesDataset(np.arange(4), shuffle=False).map(
            op, python_multiprocessing=True, num_parallel_workers=1)
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        row = next(it)[0].tolist()
        it.close()
        return row

    print(json.dumps([dict(zip(NAMES, first(imported))), first(uses_package_names)]))
""")


def worker_modules(tmp_path, names: list[str]) -> tuple[dict[str, bool], list[bool]]:
    script = tmp_path / "run.py"
    script.write_text(WORKER_MODULES.format(names=names))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    imported, package_names = json.loads(result.stdout.splitlines()[-1])
    return imported, package_names


def test_a_worker_has_not_imported_the_parts_of_jisu_its_stage_does_not_use(tmp_path):
    """The forkserver does not run the ``__init__`` of ``jisu`` and ``jisu.dataset`` (they
    import all of jisu); names those define still work in a worker, and load it then."""
    unused = ["jisu.amp", "jisu.train", "jisu.dataset.record.writer", "jisu.dataset.device.module"]
    imported, package_names = worker_modules(tmp_path, ["jisu.dataset.engine.context", *unused])
    assert imported == {"jisu.dataset.engine.context": True, **dict.fromkeys(unused, False)}
    assert package_names == [True]  # jisu.__version__ ran jisu's __init__


def test_a_numpy_stage_does_not_import_torch_or_opencv_in_its_workers(tmp_path):
    imported, _ = worker_modules(tmp_path, ["torch", "cv2"])
    assert imported == {"torch": False, "cv2": False}


def test_the_forkserver_preloads_the_heavy_packages_a_users_module_of_ops_uses(monkeypatch):
    """A stage's op from a module of the user's that imports torch: the forkserver imports
    torch (once, not each worker); never the user's module itself, nor what is not imported
    here."""
    user = types.ModuleType("users_ops")
    user.torch = sys.modules["torch"]
    user.as_tensor = sys.modules["torch"].as_tensor
    user.helper = slow_identity  # a function of another user module
    monkeypatch.setitem(sys.modules, "users_ops", user)
    before = list(process_start._preload)
    monkeypatch.setattr(process_start, "_preload", before[:2])  # "__main__", the worker's
    try:
        process_start.preload(["users_ops", "jisu.dataset.ops.map", "not.imported.anywhere"])
        added = process_start._preload[2:]
    finally:
        process_start.mp_context().set_forkserver_preload(before)
    assert "torch" in added and "jisu.dataset.ops.map" in added
    assert not {"users_ops", __name__, "not.imported.anywhere"} & set(added)


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """``fakepkg`` (its ``__init__`` counts its runs, binds ``VALUE`` and imports
    ``fakepkg.inner``) with ``fakepkg.inner`` (a package too) and ``fakepkg.inner.leaf``."""
    root = tmp_path / "fakepkg"
    (root / "inner").mkdir(parents=True)
    (root / "__init__.py").write_text(
        "import builtins\n"
        "builtins.fakepkg_runs = getattr(builtins, 'fakepkg_runs', []) + ['fakepkg']\n"
        "from . import inner\n"
        "VALUE = inner.INNER + 1\n"
    )
    (root / "inner" / "__init__.py").write_text(
        "import builtins\n"
        "builtins.fakepkg_runs = getattr(builtins, 'fakepkg_runs', []) + ['inner']\n"
        "INNER = 41\n"
    )
    (root / "inner" / "leaf.py").write_text("LEAF = 'leaf'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(forkserver_boot, "DEFERRED", ("fakepkg", "fakepkg.inner"))
    import builtins

    monkeypatch.setattr(builtins, "fakepkg_runs", [], raising=False)
    yield builtins
    for name in [m for m in sys.modules if m == "fakepkg" or m.startswith("fakepkg.")]:
        del sys.modules[name]


def test_a_deferred_package_runs_its_init_on_first_use_of_a_name_it_defines(fake_package):
    assert forkserver_boot.install() == ["fakepkg", "fakepkg.inner"]
    import fakepkg.inner.leaf
    from fakepkg import inner

    assert fakepkg.inner.leaf.LEAF == "leaf" and inner is sys.modules["fakepkg.inner"]
    assert fake_package.fakepkg_runs == []  # submodules alone run no __init__
    assert fakepkg.VALUE == 42  # the parent's __init__ runs, and then the child's (its import)
    assert fake_package.fakepkg_runs == ["fakepkg", "inner"]
    assert inner.INNER == 41 and fake_package.fakepkg_runs == ["fakepkg", "inner"]
    assert type(fakepkg) is type(sys) and type(inner) is type(sys)  # plain modules now
    with pytest.raises(AttributeError):
        fakepkg.missing  # noqa: B018


def test_a_deferred_child_package_runs_its_parents_init_first(fake_package):
    forkserver_boot.install()
    from fakepkg.inner import INNER

    assert INNER == 41 and fake_package.fakepkg_runs == ["fakepkg", "inner"]


def test_nothing_is_deferred_when_a_package_is_imported_already(fake_package):
    import fakepkg

    assert forkserver_boot.install() == []
    assert sys.modules["fakepkg"] is fakepkg and fakepkg.VALUE == 42


def slow_identity(x):
    return x


def test_both_pools_are_worker_pools_and_a_pool_shut_down_while_starting_leaves_no_process():
    data = ds.NumpySlicesDataset(np.arange(8), shuffle=False).map(
        slow_identity, python_multiprocessing=True, num_parallel_workers=1
    )
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    next(it)
    ctx = it._ctx
    threads = ThreadPool("threads", 1, ctx, StageTask(data, "fetch_rows"))
    processes = ProcessPool("processes", 2, ctx, StageTask(data, "fetch_rows"))
    try:
        assert isinstance(threads, WorkerPool) and isinstance(processes, WorkerPool)
        assert threads.pids == []
    finally:
        threads.shutdown(5)
        processes.shutdown(30)  # at once: its workers may be starting, or not started yet
    it.close()
    workers = [w.process for w in processes._workers.slots if w is not None]
    assert not any(p.is_alive() for p in workers)
    assert processes.pids == [p.pid for p in workers]


def _environment_of_a_worker(x):
    import os

    return np.array([os.environ.get("JISU_TEST_SET", ""), os.environ.get("JISU_TEST_UNSET", "-")])


@pytest.mark.parametrize("pipeline_process", [False, True])
def test_workers_run_in_the_environment_of_the_program_when_they_start(
    monkeypatch, pipeline_process
):
    """A variable set (or removed) after the forkserver started reaches the workers started
    later, as with fork or spawn: credentials a program sets once its first pool ran."""
    monkeypatch.setenv("JISU_TEST_UNSET", "there when the forkserver started")
    process_start.ensure_forkserver()
    monkeypatch.setenv("JISU_TEST_SET", "set later")
    monkeypatch.delenv("JISU_TEST_UNSET")
    ds.config.set_pipeline_process(pipeline_process)
    try:
        data = ds.NumpySlicesDataset(np.arange(2), shuffle=False).map(
            _environment_of_a_worker, python_multiprocessing=True, num_parallel_workers=1
        )
        rows = [r[0].tolist() for r in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    finally:
        ds.config.set_pipeline_process(False)
    assert rows == [["set later", "-"]] * 2
