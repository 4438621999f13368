"""Model.eval's callbacks: the hooks, their order and what ``cb_params`` carries (MindSpore's
``_eval_process``: ``mode``, ``cur_step_num``, ``batch_num``, ``net_outputs``, ``metrics``...)."""

from __future__ import annotations

import pytest
import torch

import jisu.dataset as ds
from jisu.train import Callback, TrainState
from tests.train.test_model import data, model


class EvalRecorder(Callback):
    """Notes each eval hook with the counters and outputs it sees."""

    def __init__(self):
        self.events = []
        self.outputs = []
        self.params = None

    def _note(self, hook, run_context):
        p = run_context.original_args()
        self.params = p
        self.events.append((hook, p["mode"], p.cur_step_num, p.get("metrics") is not None))
        if hook == "on_eval_step_end":
            self.outputs.append(p.net_outputs.detach().clone())

    def on_eval_begin(self, run_context):
        self._note("on_eval_begin", run_context)

    def on_eval_epoch_begin(self, run_context):
        self._note("on_eval_epoch_begin", run_context)

    def on_eval_step_begin(self, run_context):
        self._note("on_eval_step_begin", run_context)

    def on_eval_step_end(self, run_context):
        self._note("on_eval_step_end", run_context)

    def on_eval_epoch_end(self, run_context):
        self._note("on_eval_epoch_end", run_context)

    def on_eval_end(self, run_context):
        self._note("on_eval_end", run_context)


def valid_data(x, y, batch=50):
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def test_eval_hooks_fire_in_order_with_the_step_counter():
    train, x, y = data()
    m = model()
    m.train(1, train)
    recorder = EvalRecorder()
    result = m.eval(valid_data(x, y), callbacks=[recorder])
    steps = [
        e
        for s in range(1, 5)
        for e in (("on_eval_step_begin", "eval", s, False), ("on_eval_step_end", "eval", s, False))
    ]
    assert recorder.events == [
        ("on_eval_begin", "eval", 0, False),
        ("on_eval_epoch_begin", "eval", 0, False),
        *steps,
        ("on_eval_epoch_end", "eval", 4, True),  # the metrics are there at the pass's end
        ("on_eval_end", "eval", 4, True),
    ]
    params = recorder.params
    assert params.metrics == result
    assert params.network is m.network and params.eval_network is m.eval_network
    # each step's outputs are the eval network's on that batch
    with torch.no_grad():
        logits = m.network.eval()(torch.from_numpy(x))
    torch.testing.assert_close(torch.cat(recorder.outputs), logits)


def test_eval_cb_params_carry_mindspores_fields():
    _, x, y = data()
    m = model()
    valid = valid_data(x, y, batch=40)
    recorder = EvalRecorder()
    m.eval(valid, callbacks=[recorder])
    params = recorder.params
    assert isinstance(params, TrainState)  # the state type of training, in mode "eval"
    assert params.mode == "eval" and params["mode"] == "eval"
    assert params.batch_num == valid.get_dataset_size() == 4
    assert params.cur_step_num == 4 and params.valid_dataset is valid
    assert params.dataset_sink_mode is False
    assert params.samples_seen == 160
    assert params.data_wait_seconds >= 0 and params.step_seconds > 0


def test_eval_state_is_not_the_training_state():
    train, x, y = data()
    m = model()
    m.train(1, train)
    before = m.state_dict()
    m.eval(valid_data(x, y), callbacks=[EvalRecorder()])
    after = m.state_dict()
    assert {k: before[k] for k in ("epoch", "step_in_epoch", "cur_step_num")} == {
        k: after[k] for k in ("epoch", "step_in_epoch", "cur_step_num")
    }


@pytest.mark.parametrize("sink", [False, True])
def test_fit_evaluates_into_the_epoch_end_metrics(sink):
    train, x, y = data()
    seen = []

    class Metrics(Callback):
        def on_train_epoch_end(self, run_context):
            seen.append(dict(run_context.original_args().metrics))

    m = model()
    m.fit(2, train, valid_data(x, y), callbacks=[Metrics()], dataset_sink_mode=sink)
    assert [sorted(s) for s in seen] == [["acc", "loss"], ["acc", "loss"]]
    assert seen[-1] == m.eval(valid_data(x, y))
