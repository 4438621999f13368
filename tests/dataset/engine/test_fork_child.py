"""A child made with multiprocessing's "fork" after a pipeline ran worker processes runs
pipelines with worker processes of its own (issue 47, item 7): it starts its own forkserver,
since the parent's is not its child (multiprocessing's check of it failed with a bare
``ChildProcessError``).

pytest's timeout and the pipe's poll are hang guards only: the verdict is the child's answer.
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest

import jisu.dataset as ds

pytestmark = pytest.mark.timeout(120)


def double(x):
    return x * 2


def _total() -> int:
    data = ds.NumpySlicesDataset({"v": np.arange(6)}, shuffle=False).map(
        double, "v", num_parallel_workers=2, python_multiprocessing=True
    )
    it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        return sum(int(row[0]) for row in it)
    finally:
        it.close()


def _child(conn) -> None:
    try:
        conn.send(("ok", _total()))
    except BaseException as exc:  # the answer goes to the parent whatever happens
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def test_a_forked_child_runs_pipelines_with_worker_processes():
    assert _total() == 30  # the parent's forkserver now runs
    context = multiprocessing.get_context("fork")
    parent_end, child_end = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(child_end,))
    child.start()
    child_end.close()
    try:
        assert parent_end.poll(90), "the forked child gave no answer"
        answer = parent_end.recv()
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join()
    assert answer == ("ok", 30)
    assert child.exitcode == 0
    assert _total() == 30  # the parent's own pipelines still run


def _close_and_exit(it, conn) -> None:
    it.close()  # the parent's iterator, inherited: its workers are not this process's
    conn.send("closed")
    conn.close()


@pytest.mark.parametrize("pipeline_process", [False, True], ids=["in-process", "pipeline-process"])
def test_a_forked_child_closing_the_parents_iterator_leaves_it_running(pipeline_process):
    """A child that closes (or, exiting, finalizes) its copy of an iterator that runs in the
    parent does not stop the parent's worker processes or pipeline process."""
    ds.config.set_pipeline_process(pipeline_process)
    try:
        data = ds.NumpySlicesDataset({"v": np.arange(6)}, shuffle=False).map(
            double, "v", num_parallel_workers=2, python_multiprocessing=True
        )
        it = data.create_tuple_iterator(num_epochs=1, output_numpy=True)
        first = int(next(it)[0])
        context = multiprocessing.get_context("fork")
        parent_end, child_end = context.Pipe(duplex=False)
        child = context.Process(target=_close_and_exit, args=(it, child_end))
        child.start()
        child_end.close()
        assert parent_end.poll(60) and parent_end.recv() == "closed"
        child.join(30)
        try:
            rest = [int(row[0]) for row in it]
        finally:
            it.close()
    finally:
        ds.config.set_pipeline_process(False)
    assert [first, *rest] == [0, 2, 4, 6, 8, 10]
