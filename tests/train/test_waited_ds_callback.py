"""``WaitedDSCallback`` in ``Model.train`` (dataset_sink_mode=False): the pipeline's step and
epoch hooks wait for the training's, and the events equal MindSpore 2.10's for its own
docstring example (``tests/fixtures/ds_callbacks_config/expected.json``: ``waited``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu.dataset as ds
from jisu.train import Callback, Model

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ds_callbacks_config" / "expected.json"
WANT = json.loads(FIXTURE.read_text())["waited"]

pytestmark = pytest.mark.timeout(120)  # a hang guard: a missed release would wait forever


@pytest.fixture(autouse=True)
def short_callback_timeout():
    before = ds.config.get_callback_timeout()
    ds.config.set_callback_timeout(20)  # a wait that is never released fails, not hangs
    yield
    ds.config.set_callback_timeout(before)


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))

    def forward(self, x, y):
        return ((self.scale * x - y) ** 2).mean()


@pytest.mark.parametrize("step_size", [1, 2])
def test_events_are_mindspores(step_size):
    events: list[str] = []

    class Waited(ds.WaitedDSCallback):
        def sync_epoch_begin(self, train_run_context, ds_run_context):
            events.append(
                f"ds_epoch_begin_{ds_run_context.cur_epoch_num}_{ds_run_context.cur_step_num}"
            )

        def sync_step_begin(self, train_run_context, ds_run_context):
            assert train_run_context.original_args().cur_step_num >= 1
            events.append(
                f"ds_step_begin_{ds_run_context.cur_epoch_num}_{ds_run_context.cur_step_num}"
            )

    class Train(Callback):
        def epoch_end(self, run_context):
            p = run_context.original_args()
            events.append(f"ms_epoch_end_{p.cur_epoch_num}_{p.cur_step_num}")

        def step_end(self, run_context):
            p = run_context.original_args()
            events.append(f"ms_step_end_{p.cur_epoch_num}_{p.cur_step_num}")

    waited = Waited(step_size)
    arr = np.array([1, 2, 3, 4], np.float32)
    data = ds.NumpySlicesDataset((arr, arr), column_names=["c1", "c2"], shuffle=False)
    data = data.map(lambda x: x, callbacks=waited)
    if step_size > 1:
        data = data.batch(step_size)
    net = Net()
    model = Model(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.01))
    model.train(2, data, dataset_sink_mode=False, callbacks=[Train(), waited])
    assert events == WANT[f"step{step_size}"]


def test_an_unreleased_wait_is_a_runtime_error():
    ds.config.set_callback_timeout(1)

    class Waited(ds.WaitedDSCallback):
        def sync_step_begin(self, train_run_context, ds_run_context):
            pass

    data = ds.NumpySlicesDataset(np.arange(3), column_names=["x"], shuffle=False)
    data = data.map(lambda x: x, callbacks=Waited())  # not given to a training loop
    with pytest.raises(RuntimeError, match="did not reach the matching step in 1 second"):
        list(data.create_tuple_iterator(num_epochs=1))
