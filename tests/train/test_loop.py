"""One training loop for both modes: eager (a window of one step, callbacks live around it)
and sink mode (a window of a whole sink, one read, callbacks replayed) give the same losses
and the same ``cb_params`` figures; ``cb_params`` is a typed TrainState read as MindSpore's."""

from __future__ import annotations

import time

import numpy as np
import pytest

from jisu.train import Callback, LambdaCallback
from jisu.train.state import TrainState
from tests.train.test_model import data, model

FIGURES = ("cur_epoch_num", "cur_step_num", "step_in_epoch", "batch_num", "samples_seen")
CLOCKS = ("data_wait_seconds", "copy_seconds", "step_seconds")


class Figures(Callback):
    """What the callbacks see at each step's end and each epoch's end."""

    def __init__(self) -> None:
        self.steps, self.epochs, self.clocks, self.flags = [], [], [], []

    def on_train_step_end(self, run_context):
        p = run_context.original_args()
        self.steps.append((*(p[name] for name in FIGURES), p.dataset_state, float(p.net_outputs)))
        self.flags.append(p.weights_current)

    def on_train_epoch_end(self, run_context):
        p = run_context.original_args()
        self.epochs.append(tuple(getattr(p, name) for name in FIGURES))
        self.clocks.append(tuple(getattr(p, name) for name in CLOCKS))


def run(sink: bool, epochs: int = 3, sink_size: int = -1) -> tuple[Figures, float]:
    figures = Figures()
    begin = time.perf_counter()
    model().train(
        epochs, data()[0], callbacks=[figures], dataset_sink_mode=sink, sink_size=sink_size
    )
    return figures, time.perf_counter() - begin


def test_eager_and_sink_give_the_same_losses_and_figures():
    (eager, eager_wall), (sink, sink_wall) = run(False), run(True)
    assert len(eager.steps) == len(sink.steps) == 15
    for a, b in zip(eager.steps, sink.steps):
        assert a[:-1] == b[:-1]  # counters, samples, the data iterator's state
        np.testing.assert_allclose(a[-1], b[-1], rtol=1e-6)
    assert eager.epochs == sink.epochs == [(e, 5 * e, 5, 5, 160 * e) for e in (1, 2, 3)]
    assert eager.flags == [True] * 15  # a window of one: its weights are current
    assert sink.flags == ([False] * 4 + [True]) * 3  # only a sink's last step's are
    for figures, wall in ((eager, eager_wall), (sink, sink_wall)):
        for before, after in zip([(0.0,) * 3, *figures.clocks], figures.clocks):
            assert all(b <= a for a, b in zip(after, before))  # cumulative
        assert sum(figures.clocks[-1]) <= wall and figures.clocks[-1][2] > 0


def test_short_sinks_over_endless_data_count_on_across_epochs():
    sink, _ = run(True, epochs=4, sink_size=3)
    assert [s[:5] for s in sink.steps[2:4]] == [(1, 3, 3, 3, 96), (2, 4, 1, 3, 128)]
    assert sink.flags == ([False] * 2 + [True]) * 4


def test_eager_callbacks_run_around_the_step_and_sink_callbacks_after_it():
    for sink, seen_at_begin in ((False, [0, 1, 2, 3, 4]), (True, [5, 5, 5, 5, 5])):
        m = model()
        step, done, seen = m._train_step, [], []

        def counting(*batch, step=step, done=done):
            done.append(1)
            return step(*batch)

        m._train_step = counting
        hook = LambdaCallback(
            on_train_step_begin=lambda rc, seen=seen, done=done: seen.append(len(done))
        )
        m.train(1, data()[0], callbacks=[hook], dataset_sink_mode=sink)
        assert seen == seen_at_begin


def test_a_stop_request_ends_an_eager_epoch_after_the_step_and_a_sink_after_the_sink():
    for sink, steps in ((False, 2), (True, 5)):
        seen = []

        def stop_at_2(rc, seen=seen):
            seen.append(rc.original_args().cur_step_num)
            if rc.original_args().cur_step_num == 2:
                rc.request_stop()

        model().train(3, data()[0], callbacks=[LambdaCallback(on_train_step_end=stop_at_2)],
                      dataset_sink_mode=sink)  # fmt: skip
        assert len(seen) == steps


def test_cb_params_is_a_typed_state_read_as_attributes_and_keys():
    seen = {}

    def note(rc):
        p = rc.original_args()
        if p.cur_step_num == 1:
            p.my_count = 0  # a user callback's own attribute
        p.my_count += 1
        seen.update(
            kind=type(p), count=p["my_count"], has=("my_count" in p, "steps_in_epoch" in p),
            default=p.get("steps_in_epoch", 7), wait=p.get("data_wait_seconds"),
        )  # fmt: skip

    model().train(1, data()[0], callbacks=[LambdaCallback(on_train_step_end=note)])
    assert seen["kind"] is TrainState and seen["count"] == 5
    assert seen["has"] == (True, False) and seen["default"] == 7
    assert isinstance(seen["wait"], float)


def test_a_train_state_is_a_mapping_of_its_attributes():
    state = TrainState(cur_epoch_num=2, step_in_epoch=5, batch_num=5)
    assert state["cur_epoch_num"] == 2 and state.get("nothing") is None
    state["extra"] = "x"
    assert state.extra == "x" and dict(state)["extra"] == "x"
    del state["extra"]
    assert "extra" not in state
    with pytest.raises(KeyError):
        state["extra"]
    assert state.resume_point() == (2, 0)  # a complete epoch: the next one
    state.step_in_epoch = 3
    assert state.resume_point() == (1, 3)
    state.begin_step()
    assert (state.cur_step_num, state.step_in_epoch) == (1, 4)


@pytest.mark.parametrize("sink", [False, True])
def test_a_lambda_callback_takes_jisus_hooks_too(sink):
    dispatched, exceptions, seen = [], [], []
    counting = LambdaCallback(
        on_train_step_dispatched=lambda rc: dispatched.append(rc.original_args().cur_epoch_num),
        on_train_exception=lambda rc: exceptions.append(True),
    )
    plain = LambdaCallback(on_train_step_end=lambda rc: seen.append(1))
    assert counting.wants_hook("on_train_step_dispatched") and not plain.wants_hook(
        "on_train_exception"
    )
    batches, _, _ = data()  # 160 rows in batches of 32: 5 steps an epoch
    model().train(2, batches, callbacks=[counting, plain], dataset_sink_mode=sink)
    assert dispatched == [1] * 5 + [2] * 5 and len(seen) == 10 and exceptions == []

    def fail(rc):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        model().train(1, batches, callbacks=[counting, LambdaCallback(on_train_step_end=fail)])
    assert exceptions == [True]
    with pytest.raises(ValueError, match="unknown hook"):
        LambdaCallback(on_train_step_dispatchd=print)
