"""Results that reach the parent but cannot be taken in there (issue 47, items 2, 3 and 10):
a value that pickles but does not rebuild, a result too large for the parent's memory, rows
larger than the shared memory of the pipeline process. Each is an error at the iterator naming
the op and the sample, never a dead collector thread and an iterator waiting forever.

Timeouts are hang guards only (pytest's); the verdict is the error raised.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from multiprocessing.connection import Connection

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset.engine.processes import pipeline_child
from jisu.dataset.engine.processes.workers import RemoteTraceback

pytestmark = pytest.mark.timeout(90)


class TwoArgs(Exception):
    """An exception that pickles (its args hold only ``a``) but whose rebuild fails."""

    def __init__(self, a, b):
        super().__init__(a)
        self.b = b


def _refuse_to_load():
    raise ValueError("this object refuses to be rebuilt")


class LoadsNowhere:
    """Pickles; rebuilding it raises wherever that happens."""

    def __reduce__(self):
        return (_refuse_to_load, ())


def _load_only_outside(pid):
    if os.getpid() == pid:
        raise ValueError("this object cannot be rebuilt in the parent")
    return "rebuilt"


class LoadsOnlyInWorker:
    """Rebuilds in the worker process (its own check passes) but not in the parent."""

    def __init__(self, pid):
        self.pid = pid

    def __reduce__(self):
        return (_load_only_outside, (self.pid,))


def two_args_at_3(x):
    return TwoArgs("bad", 2) if int(x) == 3 else x


def loads_nowhere_at_3(x):
    return LoadsNowhere() if int(x) == 3 else x


def _pipeline(op, processes=True, workers=2):
    return ds.NumpySlicesDataset({"v": np.arange(8)}, shuffle=False).map(
        op, "v", num_parallel_workers=workers, python_multiprocessing=processes
    )


def _drain(data):
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        return [row for row in it]
    finally:
        it.close()


@pytest.fixture(params=[False, True], ids=["in-process", "pipeline-process"])
def mode(request):
    ds.config.set_pipeline_process(request.param)
    yield request.param
    ds.config.set_pipeline_process(False)


@pytest.mark.parametrize(
    ("op", "kind", "reason"),
    [
        (two_args_at_3, "TwoArgs", "missing 1 required positional argument"),
        (loads_nowhere_at_3, "LoadsNowhere", "refuses to be rebuilt"),
    ],
)
def test_a_result_that_does_not_rebuild_names_op_column_and_sample(mode, op, kind, reason):
    with pytest.raises(RuntimeError) as info:
        _drain(_pipeline(op))
    message = str(info.value)
    assert f"map: operation {op.__name__} returned a value that cannot be rebuilt" in message
    assert f"{kind}' object in column 'v' at sample 3 of epoch 0" in message
    assert reason in message
    # the rebuild failure's traceback is kept (the worker's, as for any worker error)
    cause = info.value.__cause__
    while cause is not None and not isinstance(cause, RemoteTraceback):
        cause = cause.__cause__
    assert (cause is not None and "_refuse_to_load" in str(cause)) or kind == "TwoArgs"


def loads_only_in_worker_at_3(x):
    return LoadsOnlyInWorker(int(os.environ["JISU_TEST_PARENT"])) if int(x) == 3 else x


def test_a_result_the_parent_alone_cannot_rebuild_names_op_and_sample(monkeypatch):
    """The worker's own check passes; the parent's rebuild fails: its collector says so."""
    monkeypatch.setenv("JISU_TEST_PARENT", str(os.getpid()))
    with pytest.raises(ValueError) as info:
        _drain(_pipeline(loads_only_in_worker_at_3))
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "map(loads_only_in_worker_at_3) at sample 3 of epoch 0" in message
    assert "cannot be rebuilt in this process" in message
    assert "cannot be rebuilt in the parent" in message  # the rebuild's own error
    assert info.value.__cause__.__traceback__ is not None  # with its traceback


def test_the_pool_goes_on_after_a_result_that_did_not_rebuild():
    """Only that sample fails: the same pipeline's next iterator gives every row."""
    with pytest.raises(RuntimeError):
        _drain(_pipeline(two_args_at_3))
    assert [int(r[0]) for r in _drain(_pipeline(lambda x: x))] == list(range(8))


def test_a_row_that_does_not_rebuild_from_a_pipeline_process_names_column_and_row():
    """Threads in the pipeline process: the row goes to the parent pickled."""
    ds.config.set_pipeline_process(True)
    try:
        with pytest.raises(TypeError) as info:
            _drain(_pipeline(two_args_at_3, processes=False, workers=1))
    finally:
        ds.config.set_pipeline_process(False)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "column 'v' of row 3 of epoch 0" in message
    assert "missing 1 required positional argument" in message


def big_at_3(x):
    return np.zeros(1 << 21, np.uint8) if int(x) == 3 else x  # 2 MiB


def test_a_result_too_large_for_the_parent_is_an_error_naming_op_and_sample(monkeypatch):
    """A MemoryError while the collector reads a result (injected at the read: the size is
    read, the buffer cannot be had) stops that worker and fails the pipeline, naming the op
    and the sample, instead of killing the collector thread."""
    original = Connection._recv_bytes

    def recv_bytes(self, maxsize=None):
        buf = self._recv(4)  # the message's size, as multiprocessing reads it
        size = int.from_bytes(buf.getvalue(), "big", signed=True)
        if size > 1 << 20:
            raise MemoryError
        return _finish(self, buf, size)

    def _finish(self, buf, size):
        if size == -1:  # a large message: its real size follows
            size = int.from_bytes(self._recv(8).getvalue(), "big")
            if size > 1 << 20:
                raise MemoryError
        return self._recv(size)

    monkeypatch.setattr(Connection, "_recv_bytes", recv_bytes)
    assert original is not recv_bytes
    data = _pipeline(big_at_3, workers=1)
    with pytest.raises(MemoryError) as info:
        _drain(data)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "map(big_at_3) at sample 3 of epoch 0" in message
    assert "too large for this process's memory" in message


_UNDER_RLIMIT_AS = """
import resource
import numpy as np
import jisu.dataset as ds

def big_at_3(x):
    return np.ones(256 << 20, np.uint8) if int(x) == 3 else x  # 256 MiB

def vm_bytes():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))

data = ds.NumpySlicesDataset({"v": np.arange(6)}, shuffle=False).map(
    big_at_3, "v", num_parallel_workers=1, python_multiprocessing=True
)
it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
next(it)  # the worker (and its forkserver) run before the limit: only this process has it
limit = vm_bytes() + (160 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
control = bytearray(64 << 20)  # control: the limit leaves room for ordinary work
del control
try:
    for row in it:
        pass
    print("no error")
except MemoryError as exc:
    print("MemoryError", isinstance(exc, RuntimeError), str(exc))
finally:
    it.close()
"""


def test_a_result_too_large_under_rlimit_as_is_an_error_not_a_hang(tmp_path):
    """The same with a real address-space limit on the parent (a child process of the
    test): the 256 MiB result cannot be received, a 64 MiB control allocation can."""
    script = tmp_path / "too_large.py"
    script.write_text(_UNDER_RLIMIT_AS)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=80, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("MemoryError True"), done.stdout + done.stderr[-2000:]
    assert "map(big_at_3) at sample 3 of epoch 0" in done.stdout
    assert "too large for this process's memory" in done.stdout


class _Link:
    def __init__(self):
        self.sent = []

    def take_freed(self):
        return []

    def send(self, message, fd=None):
        self.sent.append(message)


def test_the_pipeline_process_checks_its_shared_memory_budget_up_front():
    """Rows whose slabs would not fit in the shared memory available are refused before any
    slab is made (a small injected budget; nothing large is allocated)."""
    link = _Link()
    slabs = pipeline_child._Slabs(link, limit=8, available=lambda: 16 << 20)  # 16 MiB
    small = (np.zeros(1 << 20, np.uint8),)  # 1 MiB rows: 8 slabs of 2 MiB fit
    slab_id, _ = slabs.place(small)
    assert slab_id is not None
    big = (np.zeros(4 << 20, np.uint8),)  # 4 MiB rows: 8 slabs of 5 MiB do not
    with pytest.raises(MemoryError, match=r"pipeline process: rows of 5\.0 MiB need 40 MiB"):
        slabs.place(big)
    assert [m[0] for m in link.sent] == ["slab"]  # no slab of the new size was made
    slabs.close()


def test_a_pipeline_process_refusing_its_rows_is_an_error_at_the_iterator():
    """End to end: the child's check fails (its budget cut to 1 MiB by the map, which runs in
    the child) and the iterator raises the child's MemoryError."""
    ds.config.set_pipeline_process(True)
    try:
        data = ds.NumpySlicesDataset({"v": np.zeros((2, 1 << 20), np.uint8)}, shuffle=False)
        with pytest.raises(MemoryError, match=r"pipeline process: rows of .* shared memory"):
            _drain(data.map(_budget_of_one_mib, "v"))
    finally:
        ds.config.set_pipeline_process(False)


def _budget_of_one_mib(x):
    """Runs in the pipeline process: its shared memory is 1 MiB from now on."""
    from jisu.dataset.engine.processes import pipeline_child as child

    child.shared_memory_available = _one_mib
    return x


def _one_mib():
    return 1 << 20


def test_rebuild_failure_is_none_for_what_rebuilds():
    from jisu.dataset.engine.processes.worker import plain, rebuild_failure

    assert rebuild_failure(np.arange(3)) is None
    assert rebuild_failure(object()) is None  # does not pickle: ForkingPickler's business
    assert isinstance(rebuild_failure(TwoArgs("a", 1)), TypeError)
    assert plain([np.arange(3), (1, "a", b"b", None)])
    assert not plain(np.array([TwoArgs("a", 1)], dtype=object))
    assert pickle.loads(pickle.dumps(LoadsOnlyInWorker(-1))) == "rebuilt"


def test_a_slab_the_pipeline_process_cannot_make_is_named(monkeypatch):
    """ENOMEM making a slab is said as such, not as a bare ``OSError: [Errno 12]``."""

    def no_memory(*args):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(pipeline_child, "Slab", no_memory)
    slabs = pipeline_child._Slabs(_Link(), limit=8, available=lambda: 1 << 40)
    with pytest.raises(OSError, match=r"cannot make a shared-memory buffer of 2\.0 MiB") as info:
        slabs.place((np.zeros(1 << 20, np.uint8),))
    assert isinstance(info.value, RuntimeError) and info.value.__cause__.errno == 12


def test_a_slab_the_parent_cannot_map_is_named(monkeypatch):
    """The parent's side of the same: ENOMEM mapping a slab of the pipeline process."""
    from types import SimpleNamespace

    from jisu.dataset.engine.processes import pipeline_host

    def no_memory(*args):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(pipeline_host, "mmap", SimpleNamespace(mmap=no_memory))
    ds.config.set_pipeline_process(True)
    try:
        data = ds.NumpySlicesDataset({"v": np.zeros((2, 1 << 17), np.uint8)}, shuffle=False)
        with pytest.raises(OSError, match=r"cannot map its shared-memory buffer of 1\.0 MiB"):
            _drain(data)
    finally:
        ds.config.set_pipeline_process(False)
