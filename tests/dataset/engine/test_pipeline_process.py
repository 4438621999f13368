"""``config.set_pipeline_process(True)``: the whole pipeline in a child process.

The child runs the pipeline the parent would have run (same seed, settings, epoch, position),
so every check here compares against the same pipeline run in this process: rows, order,
epochs and resumes are the same, errors keep their type, op, sample and traceback, and no
ending leaves a process behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import jisu.dataset as ds
from jisu.dataset import RaggedArray, transforms, vision
from jisu.dataset.engine.errors import PipelineError
from jisu.dataset.engine.processes.pool import RemoteTraceback, WorkerDiedError
from tests.conftest import image_source
from tests.dataset.engine.test_processes import python_noise, wait_dead


@pytest.fixture
def child_mode():
    """Iterators created inside ``with child_mode():`` run in a pipeline process."""
    from contextlib import contextmanager

    @contextmanager
    def on():
        ds.config.set_pipeline_process(True)
        try:
            yield
        finally:
            ds.config.set_pipeline_process(False)

    yield on
    ds.config.set_pipeline_process(False)


def augmenting(random_access: bool, processes: bool = False, n: int = 40):
    data = image_source(n, (10, 12, 3), 5, random_access)
    data = data.map(
        [
            vision.RandomCrop(8, padding=1),
            vision.RandomHorizontalFlip(),
            transforms.RandomApply([vision.RandomVerticalFlip(1.0)]),
        ],
        "image",
        num_parallel_workers=2,
        python_multiprocessing=processes,
    )
    data = data.map(python_noise, "label", num_parallel_workers=2)
    return data.map([vision.Rescale(1 / 255, 0), vision.HWC2CHW()], "image").batch(6)


def epochs(iterator, count: int) -> list[list]:
    """``count`` epochs of an iterator, each a list of rows as Python values."""
    out = []
    try:
        for _ in range(count):
            out.append([[column.tolist() for column in row] for row in iterator])
    finally:
        iterator.close()
    return out


@pytest.mark.parametrize("random_access, processes", [(True, False), (False, False), (True, True)])
def test_same_rows_in_the_same_order_every_epoch(child_mode, random_access, processes):
    data = augmenting(random_access, processes)
    here = epochs(data.create_tuple_iterator(num_epochs=3, output_numpy=True), 3)
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=3, output_numpy=True)
    there = epochs(iterator, 3)
    assert there == here
    assert here[0] != here[1]  # the epochs differ (the augmentation redraws): a real check


def test_torch_output_and_dicts_match(child_mode):
    data = augmenting(True)
    here = [b["image"].clone() for b in data.create_dict_iterator(num_epochs=1)]
    with child_mode():
        iterator = data.create_dict_iterator(num_epochs=1)
    there = [b["image"].clone() for b in iterator]
    assert len(there) == len(here) and all(torch.equal(a, b) for a, b in zip(here, there))


@pytest.mark.parametrize("random_access", [True, False])
@pytest.mark.parametrize("stop_at", [0, 3, 6])
def test_resume_from_a_state_continues_exactly(child_mode, random_access, stop_at):
    """A state taken in one mode restores in the other, and the rows after it are those of
    an uninterrupted run."""
    data = augmenting(random_access)
    whole = epochs(data.create_tuple_iterator(num_epochs=2, output_numpy=True), 2)
    flat = [row for epoch in whole for row in epoch]
    with child_mode():
        first = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    consumed = [[c.tolist() for c in next(first)] for _ in range(stop_at)]
    state = first.get_state()
    first.close()
    second = data.create_tuple_iterator(num_epochs=2, output_numpy=True)  # in this process
    second.set_state(state)
    rest = [row for epoch in epochs(second, 2) for row in epoch]
    assert consumed + rest == flat
    with child_mode():  # and back: a state of this process restored in a child
        third = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    third.set_state(state)
    assert [row for epoch in epochs(third, 2) for row in epoch] == rest


def test_big_rows_travel_in_shared_memory_and_held_batches_stay_intact(child_mode):
    """Rows of 200 KiB go through slabs; holding 40 of them (more than the slabs) must
    neither stall the pipeline nor let a slab be reused under a held batch."""
    n, size = 40, 50_000
    values = np.arange(n * size, dtype=np.float32).reshape(n, size)
    data = ds.NumpySlicesDataset({"x": values}, shuffle=False)
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    held = [row[0] for row in iterator]
    assert len(held) == n
    for k, row in enumerate(held):
        np.testing.assert_array_equal(row, values[k])


def test_ragged_batches_cross_intact(child_mode):
    rows = [np.arange(k % 7, dtype=np.int32) + k for k in range(30)]
    data = ds.GeneratorDataset(lambda: ((r,) for r in rows), ["x"]).batch(4, ragged="x")
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    batches = [batch for (batch,) in iterator]
    assert all(isinstance(batch, RaggedArray) for batch in batches)
    got = [r for batch in batches for r in batch]
    assert len(got) == len(rows)
    for g, want in zip(got, rows):
        np.testing.assert_array_equal(g, want)


def test_an_op_error_keeps_its_type_op_sample_and_traceback(child_mode):
    def fails_on_five(x):
        if int(x) == 5:
            raise ValueError("five is not welcome")
        return x

    data = ds.NumpySlicesDataset({"x": np.arange(12)}, shuffle=False).map(fails_on_five, "x")
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    got = []
    with pytest.raises(ValueError, match="five is not welcome") as info:
        for row in iterator:
            got.append(int(row[0]))
    assert got == [0, 1, 2, 3, 4]  # every row before the failing one arrived
    message = str(info.value)
    assert "fails_on_five" in message and "5" in message
    assert isinstance(info.value.__cause__, RemoteTraceback)
    assert "fails_on_five" in str(info.value.__cause__)


def test_a_killed_pipeline_process_is_an_error_not_a_hang(child_mode):
    def slow(x):
        import time

        time.sleep(0.05)
        return x

    data = ds.NumpySlicesDataset({"x": np.arange(10_000)}, shuffle=False).map(slow, "x")
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    next(iterator)
    child = iterator.worker_pids()[0]
    os.kill(child, signal.SIGKILL)
    with pytest.raises(WorkerDiedError, match=r"pipeline process \(pid \d+\) killed by SIGKILL"):
        for _ in iterator:
            pass
    assert not wait_dead([child])


def close(it):
    it.close()


def finish(it):
    for _ in it:
        pass


def fail_in_the_loop(it):
    with pytest.raises(RuntimeError):
        for i, _ in enumerate(it):
            if i == 2:
                raise RuntimeError("the training loop failed")
    it.close()


def drop(it):
    pass  # the iterator is garbage-collected


@pytest.mark.parametrize("ending", [close, finish, fail_in_the_loop, drop])
def test_every_ending_leaves_no_process(child_mode, ending):
    data = (
        ds.NumpySlicesDataset(np.zeros((40, 256), np.float32), shuffle=False)
        .map(python_noise, python_multiprocessing=True, num_parallel_workers=2)
        .batch(4)
    )
    with child_mode():
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    next(it)
    pids = it.worker_pids()
    assert len(pids) == 3  # the pipeline process and its two workers
    ending(it)
    del it
    assert not wait_dead(pids)


@pytest.mark.parametrize("how", ["exit", "sigkill_parent"])
def test_program_end_leaves_no_pipeline_process(tmp_path, how):
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(f"""
        import os, signal, sys, time
        import numpy as np
        import jisu.dataset as ds

        def work(x):
            time.sleep(0.01)
            return x

        ds.config.set_pipeline_process(True)
        data = ds.NumpySlicesDataset(np.arange(100000), shuffle=False).map(work)
        it = data.create_tuple_iterator()
        next(it)
        print(" ".join(map(str, it.worker_pids())), flush=True)
        if "{how}" == "sigkill_parent":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(0)
    """)
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )  # a hang guard, not a verdict
    pids = [int(p) for p in result.stdout.split()]
    assert len(pids) == 1, result.stderr
    assert not wait_dead(pids, timeout=60)


def test_a_pipeline_that_cannot_be_sent_says_why(child_mode):
    rows = ((np.int32(k),) for k in range(5))  # a generator object: it does not pickle
    data = ds.GeneratorDataset(rows, ["x"])
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1)
    with pytest.raises(PipelineError, match=r"cannot be sent to a child process.*cloudpickle"):
        next(iterator)


def test_skipped_samples_are_counted_as_in_this_process(child_mode):
    def odd_fails(x):
        if int(x) % 2:
            raise ValueError("odd")
        return x

    ds.config.set_error_samples_mode("skip")
    try:
        data = ds.NumpySlicesDataset({"x": np.arange(10)}, shuffle=False).map(odd_fails, "x")
        here = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        rows_here = [int(r[0]) for r in here]
        with child_mode():
            there = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        rows_there = [int(r[0]) for r in there]
    finally:
        ds.config.set_error_samples_mode("raise")
    assert rows_there == rows_here == [0, 2, 4, 6, 8]
    assert there.skipped_samples == here.skipped_samples == 5


def test_profile_comes_from_the_pipeline_process(child_mode):
    ds.config.set_enable_profiler(True)
    try:
        reports = []
        for child in (False, True):
            data = augmenting(True)
            ds.config.set_pipeline_process(child)
            iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
            ds.config.set_pipeline_process(False)
            for _ in iterator:
                pass
            reports.append(iterator.profile())  # after the end: kept from before it stopped
    finally:
        ds.config.set_enable_profiler(False)
    here, there = reports
    assert there["output"]["batches"] == here["output"]["batches"]
    assert [s["stage"] for s in there["stages"]] == [s["stage"] for s in here["stages"]]
    assert [s["rows"] for s in there["stages"]] == [s["rows"] for s in here["stages"]]
    ops = [{(op["op"], op["calls"]) for op in s["ops"]} for s in there["stages"]]
    assert ops == [{(op["op"], op["calls"]) for op in s["ops"]} for s in here["stages"]]
    assert any(ops)  # the op times crossed too


def test_model_train_in_a_pipeline_process_trains_the_same_weights(child_mode):
    from tests.train.test_model import data as train_data
    from tests.train.test_model import model

    weights = []
    for child in (False, True):
        train, _, _ = train_data()
        m = model()
        ds.config.set_pipeline_process(child)
        try:
            m.train(2, train, dataset_sink_mode=False)
        finally:
            ds.config.set_pipeline_process(False)
        weights.append([p.detach().clone() for p in m.network.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*weights))


def test_the_switch_takes_a_bool():
    with pytest.raises(TypeError, match="set_pipeline_process: the argument must be a bool"):
        ds.config.set_pipeline_process("yes")
    assert ds.config.get_pipeline_process() is False


# ---------------------------------------------------------------------- review findings
def test_closing_while_the_child_is_blocked_sending_lets_it_exit_by_itself(child_mode):
    """Rows waiting in the pipe (pickled rows just under the slab size, more than the pipe
    holds) must not leave the child blocked: it stops when told, and is not killed."""
    rows = np.zeros((64, 15_000), np.float32)  # 60 KB rows: pickled in their message
    data = ds.NumpySlicesDataset({"x": rows}, shuffle=False)
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    next(iterator)
    process = iterator._ctx._process  # the ChildPipeline's
    iterator.close()
    assert process.exitcode == 0  # it ran its own shutdown (a kill would be -9)


def test_sync_wait_is_refused_with_a_reason(child_mode):
    data = ds.NumpySlicesDataset({"x": np.arange(8)}, shuffle=False).sync_wait("go").batch(2)
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1)
    with pytest.raises(PipelineError, match="sync_wait"):
        next(iterator)


def test_autotune_runs_in_the_pipeline_process(child_mode, tmp_path):
    data = augmenting(True)
    here = epochs(data.create_tuple_iterator(num_epochs=1, output_numpy=True), 1)
    ds.config.set_enable_autotune(True, filepath=str(tmp_path / "tuned.json"))
    try:
        with child_mode():
            iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        there = epochs(iterator, 1)
    finally:
        ds.config.set_enable_autotune(False)
    assert there == here


def test_values_only_cloudpickle_can_send_arrive(child_mode):
    class Local:  # defined in a function: plain pickle cannot find it by name
        def __init__(self, k):
            self.k = k

    def rows():
        for k in range(5):
            yield ({"local": Local(k)},)  # a dict stays one value (an object array is refused)

    data = ds.GeneratorDataset(rows, ["obj"])
    with child_mode():
        iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    assert [row[0].item()["local"].k for row in iterator] == list(range(5))


def test_questions_from_another_thread_while_a_read_waits(child_mode):
    import threading

    def slow(x):
        import time

        time.sleep(0.3)
        return x

    ds.config.set_enable_profiler(True)
    try:
        data = ds.NumpySlicesDataset({"x": np.arange(20)}, shuffle=False).map(slow, "x")
        with child_mode():
            iterator = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        next(iterator)
        outcome = {}

        def read():
            try:
                outcome["rows"] = [int(r[0]) for r in iterator]
            except BaseException as exc:
                outcome["error"] = exc

        reader = threading.Thread(target=read)
        reader.start()
        report = iterator.profile()  # while the reader waits in next()
        pids = iterator.worker_pids()
        iterator.close()  # from this thread, while the reader waits
        reader.join(60)
    finally:
        ds.config.set_enable_profiler(False)
    assert not reader.is_alive()
    assert "stages" in report and len(pids) == 1
    assert not isinstance(outcome.get("error"), WorkerDiedError), outcome
