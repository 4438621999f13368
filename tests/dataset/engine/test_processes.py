"""python_multiprocessing=True: worker processes with shared-memory results."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import jisu.dataset as ds
from jisu.dataset import transforms, vision
from jisu.dataset.engine.processes.pool import WorkerDiedError
from tests.conftest import image_source, rows_of


def state(pid: int) -> str | None:
    """The state letter of /proc/PID/status ("R", "S", "Z" for a zombie, ...); None once the
    process is gone (it ended and its parent reaped it)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1]
    except (FileNotFoundError, ProcessLookupError):  # gone, also between open and read
        pass
    return None


def alive(pid: int) -> bool:
    return state(pid) not in (None, "Z")


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("PPid:"))


def wait_dead(pids: list[int], timeout: float = 120.0) -> list[int]:
    """The pids still running after waiting up to ``timeout`` for them to end."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def wait_reaped(pids: list[int], timeout: float = 120.0) -> list[int]:
    """The pids still running or left as zombies after waiting up to ``timeout``."""
    deadline = time.monotonic() + timeout
    while any(state(p) is not None for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if state(p) is not None]


def shm_entries() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def python_noise(x):
    """Pure-Python work holding the GIL, then a result that depends on the input."""
    total = 0
    for v in range(2000):
        total += v
    return x + (total % 7)


def pipeline(random_access: bool, processes: bool, workers: int, n: int = 48):
    data = image_source(n, (10, 12, 3), 3, random_access)
    data = data.map(
        [
            vision.RandomCrop(8, padding=1),
            vision.RandomHorizontalFlip(),
            transforms.RandomApply([vision.RandomVerticalFlip(1.0)]),
        ],
        "image",
        num_parallel_workers=workers,
        python_multiprocessing=processes,
    )
    data = data.map(
        python_noise, "label", num_parallel_workers=workers, python_multiprocessing=processes
    )
    return data.map([vision.Rescale(1 / 255, 0), vision.HWC2CHW()], "image").batch(
        8, num_parallel_workers=workers, python_multiprocessing=processes
    )


@pytest.mark.parametrize("random_access", [True, False])
def test_processes_threads_and_one_worker_agree_bit_for_bit(random_access):
    one = rows_of(pipeline(random_access, False, 1), None, num_epochs=2)
    threads = rows_of(pipeline(random_access, False, 2), None, num_epochs=2)
    processes = rows_of(pipeline(random_access, True, 2), None, num_epochs=2)
    assert one == threads == processes


def test_workers_are_kept_across_epochs_and_results_are_zero_copy(at_least_two_cpus):
    data = (
        ds.NumpySlicesDataset(np.arange(64, dtype=np.float32), shuffle=False)
        .map(python_noise, python_multiprocessing=True, num_parallel_workers=2)
        .batch(8)
    )
    it = data.create_tuple_iterator(num_epochs=3, output_numpy=True)
    pids, views = [], 0
    for _ in range(3):
        for (batch,) in it:
            pids.append(tuple(it.worker_pids()))
            views += isinstance(batch.base, np.ndarray)  # a view of a shared-memory slab
    assert len(set(pids)) == 1 and len(pids[0]) == 2
    assert views > 0
    assert not wait_dead(list(pids[0]))


def failing(x):
    if int(x) == 5:
        raise ValueError("sample five is bad")
    return x


def test_worker_exception_names_op_column_sample_and_keeps_the_traceback():
    data = ds.NumpySlicesDataset({"v": np.arange(20)}, shuffle=False).map(
        failing, "v", python_multiprocessing=True, num_parallel_workers=2
    )
    with pytest.raises(ValueError) as info:
        rows_of(data)
    message = str(info.value)
    assert "map: operation failing" in message and "['v']" in message and "sample 5" in message
    remote = str(info.value.__cause__)
    assert "Traceback in the worker process" in remote
    assert 'raise ValueError("sample five is bad")' in remote and "in failing" in remote


def slow(x):
    time.sleep(0.02)
    return x


HOLD_GUARD_S = 60  # a held sample goes on by itself after this: no worker waits for ever


def holds_sample_1(folder: str):
    """An op that holds sample 1 (and the rest of its task) until the file ``folder/release``
    exists, having written its worker's pid to ``folder/held_by``; the other samples pass (files:
    the op runs in worker processes). Rows come out in order, so while sample 1 is held the
    consumer gets no row after sample 0."""

    def held(x):
        if int(x) == 1:
            mark = os.path.join(folder, "held_by")
            with open(mark + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.replace(mark + ".tmp", mark)
            deadline = time.monotonic() + HOLD_GUARD_S
            while not os.path.exists(os.path.join(folder, "release")):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
        return x

    return held


def wait_for_file(path, guard_s: float = HOLD_GUARD_S) -> str:
    """The text of ``path`` once it exists (a synchronisation point; ``guard_s`` only turns a
    hang into a failure)."""
    deadline = time.monotonic() + guard_s
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)
    with open(path) as f:
        return f.read()


@pytest.mark.timeout(90)  # a hang guard: without the sentinel, the wait for sample 1 never ends
def test_sigkill_of_a_worker_is_a_clear_error_without_waiting_for_the_work(tmp_path):
    """The worker holding the sample the consumer waits for is killed: the death is noticed
    through the worker's sentinel, as the only way out (that sample is never released before
    the error, so nothing else can end the wait): an ordering, not a clock."""
    data = ds.NumpySlicesDataset(np.arange(2000), shuffle=False).map(
        holds_sample_1(str(tmp_path)), python_multiprocessing=True, num_parallel_workers=2
    )
    it = data.create_tuple_iterator(output_numpy=True)
    try:
        assert int(next(it)[0]) == 0
        victim = int(wait_for_file(tmp_path / "held_by"))  # it now holds sample 1
        assert victim in it.worker_pids()
        os.kill(victim, signal.SIGKILL)
        rows = []
        with pytest.raises(WorkerDiedError, match=rf"pid {victim}\) killed by SIGKILL"):
            for row in it:
                rows.append(int(row[0]))
        assert rows == []  # the error came in sample 1's place
    finally:
        (tmp_path / "release").touch()
    # the forkserver, the workers' parent, reaps them: no zombie is left, now or at shutdown
    assert not wait_reaped([victim])
    others = it.worker_pids()
    it.close()
    assert not wait_reaped(others)


def test_a_dead_forkserver_is_reported_reaped_and_its_workers_stopped():
    """The forkserver (this process's child, the workers' parent) dies: its live workers are
    not mistaken for dead ones, they are stopped, and the forkserver leaves no zombie."""
    data = ds.NumpySlicesDataset(np.arange(2000), shuffle=False).map(
        slow, python_multiprocessing=True, num_parallel_workers=2
    )
    it = data.create_tuple_iterator(output_numpy=True)
    next(it)
    workers = it.worker_pids()
    forkserver = parent(workers[0])
    assert parent(forkserver) == os.getpid()
    os.kill(forkserver, signal.SIGKILL)
    with pytest.raises(WorkerDiedError, match="the forkserver process that starts jisu's workers"):
        list(it)
    it.close()
    assert not wait_reaped([forkserver])
    assert not wait_dead(workers)  # orphans: reaping them is their new parent's (init's) job


def test_opt_in_restart_replaces_a_dead_worker_without_changing_output():
    def build():
        return (
            ds.NumpySlicesDataset(np.arange(120), shuffle=True)
            .map(slow, python_multiprocessing=True, num_parallel_workers=2)
            .batch(10)
        )

    expected = rows_of(build())
    ds.config.set_worker_restart(True)
    try:
        it = build().create_tuple_iterator(num_epochs=1, output_numpy=True)
        got = [next(it)[0].tolist()]
        victim = it.worker_pids()[0]
        os.kill(victim, signal.SIGKILL)
        got += [row[0].tolist() for row in it]
    finally:
        ds.config.set_worker_restart(False)
    assert got == expected
    assert not wait_reaped([victim])


def ending_close(it):
    next(it)
    it.close()


def ending_finish(it):
    assert len(list(it)) == 9  # the 9 batches after the first: the epoch ran to its end


def ending_exception(it):
    with pytest.raises(RuntimeError):
        for i, _ in enumerate(it):
            if i == 2:
                raise RuntimeError("the training loop failed")
    it.close()


def ending_gc(it):
    next(it)


@pytest.mark.parametrize("ending", [ending_close, ending_finish, ending_exception, ending_gc])
def test_every_ending_leaves_no_process_and_no_shm_entry(ending):
    before = shm_entries()
    data = (
        ds.NumpySlicesDataset(np.zeros((40, 256), np.float32), shuffle=False)
        .map(python_noise, python_multiprocessing=True, num_parallel_workers=2)
        .batch(4)
    )
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    next(it)
    pids = it.worker_pids()
    ending(it)
    del it
    assert not wait_dead(pids)
    assert shm_entries() <= before


@pytest.mark.parametrize("how", ["exit", "keyboard_interrupt", "sigkill_parent"])
def test_program_end_leaves_no_worker_and_no_shm_entry(tmp_path, at_least_two_cpus, how):
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(f"""
        import faulthandler, os, signal, sys, time, _thread, threading
        import numpy as np
        import jisu.dataset as ds

        # a hang says where every thread is (once seen under load in a full run: 300 s)
        faulthandler.dump_traceback_later(240, exit=True)

        def work(x):
            time.sleep(0.01)
            return x

        data = ds.NumpySlicesDataset(np.arange(100000), shuffle=False).map(
            work, python_multiprocessing=True, num_parallel_workers=2)
        it = data.create_tuple_iterator()
        next(it)
        print(" ".join(map(str, it.worker_pids())), flush=True)
        if "{how}" == "keyboard_interrupt":
            # Ctrl-C, again every second as a user would: an interrupt that lands inside a
            # finalizer (a slab given back as its arrays die) is swallowed by CPython
            def interrupt():
                while True:
                    time.sleep(0.3)
                    _thread.interrupt_main()

            threading.Thread(target=interrupt, daemon=True).start()
            for _ in it:
                pass
        if "{how}" == "sigkill_parent":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(0)
    """)
    )
    before = shm_entries()
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )  # a hang guard, not a verdict
    assert "Timeout (0:04:00)!" not in result.stderr, result.stderr
    pids = [int(p) for p in result.stdout.split()]
    assert len(pids) == 2, result.stderr
    if how == "keyboard_interrupt":
        assert "KeyboardInterrupt" in result.stderr
    assert not wait_dead(pids)
    assert shm_entries() <= before


def test_shared_memory_budget_is_checked_before_use(monkeypatch):
    import jisu.dataset.engine.processes.pool as process_pool

    monkeypatch.setattr(process_pool, "shared_memory_available", lambda: 1 << 20)
    data = (
        ds.NumpySlicesDataset(np.zeros((64, 1 << 16), np.float32), shuffle=False)
        .map(python_noise, python_multiprocessing=True, num_parallel_workers=2)
        .batch(4)
    )
    with pytest.raises(
        MemoryError,
        match=r"need \d+ MiB of shared memory .* only 1 MiB is "
        r"available. Use fewer num_parallel_workers",
    ):
        rows_of(data)


def test_unpicklable_stage_fails_with_a_clear_message():
    import threading

    lock = threading.Lock()

    def uses_lock(x):
        with lock:
            return x

    data = ds.NumpySlicesDataset(np.arange(4), shuffle=False).map(
        uses_lock, python_multiprocessing=True
    )
    with pytest.raises(TypeError, match="python_multiprocessing=True sends the stage's ops"):
        rows_of(data)


class BigListSource:
    """A random-access source whose metadata is a 1-million-entry Python list."""

    def __init__(self):
        self.paths = [f"/data/images/{i:07d}.jpg" for i in range(1_000_000)]

    def __len__(self):
        return 4000

    def __getitem__(self, i):
        # touch entries all over the list, as a real loader reading its index would
        path = self.paths[(i * 7919) % len(self.paths)]
        return np.frombuffer(path.encode(), dtype=np.uint8).copy()


def status_kib(pid: int, field: str) -> int:
    """A memory figure of /proc/PID/status, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    raise AssertionError(f"no {field}")


def rss_kib(pid: int) -> int:
    return status_kib(pid, "VmRSS")


def test_a_big_python_list_in_the_source_does_not_grow_worker_memory():
    data = ds.GeneratorDataset(
        BigListSource(), ["path"], shuffle=True, num_parallel_workers=2, python_multiprocessing=True
    )
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    for _ in range(1000):  # a quarter of the epoch: both workers are loaded and have worked
        next(it)
    pids = it.worker_pids()
    start = {pid: rss_kib(pid) for pid in pids}
    for _ in it:
        end = {pid: rss_kib(pid) for pid in pids if alive(pid)}
    growth_mib = max(end[pid] - start[pid] for pid in end) / 1024
    assert growth_mib < 16, f"worker RSS grew by {growth_mib:.1f} MiB over the epoch"


def private_kib(pid: int) -> int:
    """Anonymous (private) resident memory of a process: what a copy of an array costs."""
    return status_kib(pid, "RssAnon")


def double(row):
    return row * 2


def scribble(row):
    """Writes into its input (as careless user code may), then returns something new."""
    out = row * 2
    row[...] = -1
    return out


def worker_private_mib(rows: np.ndarray) -> float:
    """Private memory of the busiest worker, two thirds into an epoch over ``rows``."""
    it = (
        ds.NumpySlicesDataset(rows, shuffle=False)
        .map(double, python_multiprocessing=True, num_parallel_workers=2)
        .batch(64)
        .create_tuple_iterator(num_epochs=1, output_numpy=True)
    )
    for _ in range(len(rows) // 64 * 2 // 3):  # both workers have read much of the data
        next(it)
    mib = max(private_kib(pid) for pid in it.worker_pids()) / 1024
    it.close()
    return mib


def test_a_numpy_source_is_shared_with_workers_not_copied_into_each():
    data_mib = 64
    big = np.arange(data_mib * 1024 * 1024 // 8, dtype=np.int64).reshape(-1, 1024)
    baseline = worker_private_mib(big[:64])  # a worker with next to no data
    growth = worker_private_mib(big) - baseline
    assert growth < data_mib / 4, f"each worker holds {growth:.0f} MiB more: a copy"


def test_workers_writing_into_a_shared_source_change_only_their_own_copy():
    rows = np.arange(4 * 1024 * 1024 // 8, dtype=np.int64).reshape(-1, 1024)  # 4 MiB: shared
    original = rows.copy()
    data = (
        ds.NumpySlicesDataset(rows, shuffle=False)
        .map(scribble, python_multiprocessing=True, num_parallel_workers=2)
        .batch(64)
    )
    got = np.concatenate(
        [b[0] for b in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    )
    np.testing.assert_array_equal(got, original * 2)
    np.testing.assert_array_equal(rows, original)  # the parent's data is untouched


def test_holding_every_batch_does_not_block_the_pipeline():
    """More batches alive than shared-memory buffers: the rest travel pickled, nothing hangs."""
    data = (
        ds.NumpySlicesDataset(np.arange(50 * 64, dtype=np.int64).reshape(-1, 64), shuffle=False)
        .map(python_noise, python_multiprocessing=True, num_parallel_workers=2)
        .batch(1)
    )
    batches = [row[0] for row in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert len(batches) == 50
    expected = np.arange(50 * 64).reshape(50, 1, 64) + python_noise(0)
    np.testing.assert_array_equal(np.stack(batches), expected)


def test_resize_starts_and_stops_worker_processes_without_changing_output():
    """AutoTune resizes process stages too: new workers join, surplus ones exit after their
    task, and the output is the fixed pool's, in order."""

    def build():
        return (
            ds.NumpySlicesDataset(np.arange(160), shuffle=True)
            .map(slow, python_multiprocessing=True, num_parallel_workers=1)
            .batch(10, num_parallel_workers=1)
        )

    expected = rows_of(build())
    it = build().create_tuple_iterator(num_epochs=1, output_numpy=True)
    got = [next(it)[0].tolist()]
    (pool,) = it._ctx._pools.values()
    (first,) = it.worker_pids()
    pool.resize(3)
    assert pool.workers == 3 and len(it.worker_pids()) == 3
    got += [next(it)[0].tolist() for _ in range(5)]
    added = [pid for pid in it.worker_pids() if pid != first]
    pool.resize(1)  # the two newest go once their tasks are done
    assert pool.workers == 1
    got.append(next(it)[0].tolist())
    assert not wait_dead(added)  # the surplus workers exited while the epoch went on
    deadline = time.monotonic() + 10  # and the pool's collector thread took note
    while it.worker_pids() != [first] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert it.worker_pids() == [first]
    got += [row[0].tolist() for row in it]
    assert got == expected
