"""``map(callbacks=...)`` with ``DSCallback``: the hooks MindSpore 2.10 calls, with its run
context, checked against ``tests/fixtures/ds_callbacks_config/expected.json`` (recorded by
``make_fixtures.py`` there)."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pytest

import jisu.dataset as ds

FIXTURE = Path(__file__).parents[2] / "fixtures" / "ds_callbacks_config" / "expected.json"
WANT = json.loads(FIXTURE.read_text())
HOOKS = ("ds_begin", "ds_epoch_begin", "ds_epoch_end", "ds_step_begin", "ds_step_end")

pytestmark = pytest.mark.timeout(120)


def recorder(log: list, step_size: int) -> ds.DSCallback:
    class Recorder(ds.DSCallback):
        pass

    for hook in HOOKS:
        setattr(
            Recorder,
            hook,
            lambda self, rc, hook=hook: log.append(
                [hook, rc.cur_epoch_num, rc.cur_step_num_in_epoch, rc.cur_step_num]
            ),
        )
    return Recorder(step_size)


def run(rows: int, step_size: int, **map_args) -> tuple[list, list]:
    log: list = []
    data = ds.NumpySlicesDataset(np.arange(rows), column_names=["x"], shuffle=False)
    data = data.map(lambda x: x, callbacks=recorder(log, step_size), **map_args)
    it = data.create_tuple_iterator(num_epochs=2, output_numpy=True)
    out = [int(row[0]) for _ in range(2) for row in it]
    return log, out


def by_hook(log: list) -> dict[str, list]:
    """Each hook's own calls, in order (MindSpore's map threads interleave step_begin and
    step_end of different steps by timing; each hook's sequence does not depend on it)."""
    return {hook: [c for c in log if c[0] == hook] for hook in HOOKS}


@pytest.mark.parametrize("case", sorted(WANT["callbacks"]))
@pytest.mark.parametrize("map_args", [{}, {"num_parallel_workers": 2}])
def test_hooks_are_mindspores(case, map_args):
    rows, step_size = (int(part[4:]) for part in case.split("_"))
    log, out = run(rows, step_size, **map_args)
    want = WANT["callbacks"][case]
    assert out == list(range(rows)) * 2
    assert by_hook(log) == by_hook(want)
    # the order that does not depend on timing: each step's begin before its end, the epoch's
    # hooks around its steps, ds_begin first
    assert log[0] == want[0] == ["ds_begin", 0, 0, 0]
    for epoch in (1, 2):
        calls = [c for c in log if c[1] == epoch]
        assert calls[0][0] == "ds_epoch_begin" and calls[-1][0] == "ds_epoch_end"
        for call in calls:
            if call[0] == "ds_step_end":
                assert calls.index(["ds_step_begin", *call[1:]]) < calls.index(call)


def test_hooks_run_in_this_process_with_the_map_in_worker_processes():
    log, out = run(4, 1, num_parallel_workers=2, python_multiprocessing=True)
    assert out == [0, 1, 2, 3] * 2
    assert by_hook(log) == by_hook(WANT["callbacks"]["rows4_step1"])


def test_the_map_keeps_its_workers():
    data = ds.NumpySlicesDataset(np.arange(8), column_names=["x"], shuffle=False)
    data = data.map(lambda x: x, num_parallel_workers=2, callbacks=recorder([], 1)).batch(2)
    assert "stage map#2 (fetch): 2 threads" in data.explain()
    assert data.get_dataset_size() == 4 and data.get_col_names() == ["x"]


def test_run_context_has_mindspores_attributes():
    seen = []

    class Cb(ds.DSCallback):
        def ds_step_end(self, rc):
            seen.append(sorted(a for a in dir(rc) if not a.startswith("_")))

    data = ds.NumpySlicesDataset(np.arange(2), column_names=["x"], shuffle=False)
    list(data.map(lambda x: x, callbacks=Cb()).create_tuple_iterator(num_epochs=1))
    assert seen[0] == WANT["run_context"]


def test_bad_callbacks_fail_as_mindspore():
    want = WANT["callback_errors"]

    class Full(ds.DSCallback):
        def ds_step_end(self, rc):
            pass

    class EmptyWaited(ds.WaitedDSCallback):
        pass

    source = ds.NumpySlicesDataset([1], ["x"])
    cases = {
        "no_hook": lambda: source.map(lambda x: x, callbacks=ds.DSCallback()),
        "waited_no_hook": lambda: source.map(lambda x: x, callbacks=EmptyWaited()),
        "not_callback": lambda: source.map(lambda x: x, callbacks=3),
        "list_with_int": lambda: source.map(lambda x: x, callbacks=[Full(), 3]),
        "step_size_0": lambda: Full(0),
        "step_size_str": lambda: Full("2"),
    }
    for name, make in cases.items():
        with pytest.raises(getattr(builtins, want[name]["error"])):
            make()
