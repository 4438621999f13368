"""SummaryCollector (TensorBoard event files, read back with TensorBoard's own reader) and
CSVLogger (read back with the csv module), on real Model.train/fit runs.

Expectations are independent of the callbacks under test: losses and learning rates as a
separate callback saw them, a learning-rate formula, the loss-scale growth rule, metrics
computed directly from the network, and throughput from a fake clock that advances a fixed
time per step (no verdict depends on wall-clock time).
"""

from __future__ import annotations

import csv
import importlib.util
import sys

import numpy as np
import pytest
import torch
from torch import nn

import jisu
import jisu.dataset as ds
from jisu.amp import DynamicLossScaleManager
from jisu.train import Callback, CSVLogger, LearningRateScheduler, SummaryCollector
from jisu.train.callbacks import csv_logger, summary_collector

N, BATCH, STEPS = 160, 32, 5  # 5 steps an epoch
DT = 0.25  # fake seconds per step: an epoch takes 1.25 s, so 128 samples/s

needs_tensorboard = pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None, reason="tensorboard is not installed"
)


def data(seed=0):
    """A learnable 3-class problem: the class is the argmax of 3 of 8 features."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, 8)).astype(np.float32)
    y = x[:, :3].argmax(1).astype(np.int64)
    ds.config.set_seed(7)
    train = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=True).batch(BATCH)
    valid = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(40)
    return train, valid, x, y


def model(amp_level="O0", loss_scale_manager=None):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    return jisu.Model(
        net,
        nn.CrossEntropyLoss(),
        opt,
        metrics={"acc", "loss"},
        amp_level=amp_level,
        loss_scale_manager=loss_scale_manager,
    )


def one_over_step():
    """lr = 0.1 / (step + 1) after each step: step s (1-based) then trains at 0.1 / s."""
    return LearningRateScheduler(lambda lr, step: 0.1 / (step + 1))


class Clock:
    """A fake clock: the Recorder advances it by DT at every step."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Recorder(Callback):
    """What the run did, seen independently: each step's loss and learning rate, each
    epoch's data wait and samples, and (with ``x, y``) the metrics computed directly."""

    def __init__(self, clock=None, x=None, y=None):
        self.clock, self.x, self.y = clock, x, y
        self.losses, self.lrs, self.epochs = {}, {}, []

    def on_train_epoch_begin(self, run_context):
        p = run_context.original_args()
        self._begin = (p.data_wait_seconds, p.samples_seen)

    def on_train_step_begin(self, run_context):
        if self.clock is not None:
            self.clock.now += DT

    def on_train_step_end(self, run_context):
        p = run_context.original_args()
        self.losses[p.cur_step_num] = float(p.net_outputs)
        self.lrs[p.cur_step_num] = p.learning_rate  # the rate the step trained with, also replayed
        self._end = (p.data_wait_seconds, p.samples_seen)

    def on_train_epoch_end(self, run_context):
        p = run_context.original_args()
        record = {
            "epoch": p.cur_epoch_num,
            "step": p.cur_step_num,
            "wait": self._end[0] - self._begin[0],
            "samples": self._end[1] - self._begin[1],
        }
        if self.x is not None and p.metrics:
            with torch.no_grad():
                logits = p.network(torch.from_numpy(self.x))
            record["acc"] = float((logits.argmax(1).numpy() == self.y).mean())
            record["loss"] = nn.functional.cross_entropy(logits, torch.from_numpy(self.y)).item()
        self.epochs.append(record)


def scalars(folder):
    """{tag: [(step, value), ...]} of every event file in ``folder``, by TensorBoard's reader."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def f32(value):
    """``value`` as TensorBoard stores it (a float32)."""
    return float(np.float32(value))


# ---------------------------------------------------------------------- SummaryCollector
@needs_tensorboard
@pytest.mark.parametrize("sink", [False, True])
def test_summary_collector_writes_what_the_run_did(tmp_path, sink):
    train, valid, x, y = data()
    clock = Clock()
    recorder = Recorder(clock, x, y)
    collector = SummaryCollector(tmp_path / "tb", collect_freq=3)
    collector._clock = clock
    model().fit(
        2, train, valid, callbacks=[one_over_step(), collector, recorder], dataset_sink_mode=sink
    )
    got = scalars(tmp_path / "tb")
    assert set(got) == {
        "train/loss",
        "train/lr",
        "train/samples_per_second",
        "train/data_wait_share",
        "eval/acc",
        "eval/loss",
        "epoch",
    }  # no loss scale without a loss scale manager
    collected = [1, 3, 6, 9]  # the first step, then every 3rd of the 10
    assert got["train/loss"] == [(s, f32(recorder.losses[s])) for s in collected]
    assert got["train/lr"] == [(s, f32(0.1 / s)) for s in collected]
    assert [recorder.lrs[s] for s in collected] == pytest.approx([0.1 / s for s in collected])
    assert got["epoch"] == [(5, 1.0), (10, 2.0)]
    assert got["train/samples_per_second"] == [(5, 128.0), (10, 128.0)]  # 160 samples in 1.25 s
    assert [r["samples"] for r in recorder.epochs] == [N, N]
    for (step, share), record in zip(got["train/data_wait_share"], recorder.epochs):
        assert step == record["step"]
        assert share == pytest.approx(min(1.0, record["wait"] / (STEPS * DT)), rel=1e-6)
    for name in ("acc", "loss"):
        expected = [(r["step"], r[name]) for r in recorder.epochs]
        assert [s for s, _ in got[f"eval/{name}"]] == [s for s, _ in expected]
        assert [v for _, v in got[f"eval/{name}"]] == pytest.approx(
            [v for _, v in expected], rel=1e-5
        )
    assert collector._writer is None  # closed at on_train_end


@needs_tensorboard
@pytest.mark.parametrize("sink", [False, True])
def test_loss_scale_follows_the_dynamic_rule_at_O2(tmp_path, sink):
    # no overflow on this problem: the scale doubles every 3 clean steps, from 256
    manager = DynamicLossScaleManager(256.0, scale_factor=2.0, scale_window=3)
    collector = SummaryCollector(tmp_path, collect_freq=3)
    model("O2", manager).train(2, data()[0], callbacks=[collector], dataset_sink_mode=sink)
    # eager: at the collected steps (1, 3, 6, 9) and the epochs' ends (5, 10); sink mode:
    # a replayed step's scale is not known, so at the sinks' (= epochs') ends only
    steps = [5, 10] if sink else [1, 3, 5, 6, 9, 10]
    expected = [(s, 256.0 * 2 ** (s // 3)) for s in steps]
    assert scalars(tmp_path)["train/loss_scale"] == expected


@needs_tensorboard
def test_event_file_is_readable_after_a_crash_and_closed_by_a_with_block(tmp_path):
    def crash_at_step_8(run_context):
        if run_context.original_args().cur_step_num == 8:
            raise RuntimeError("boom")

    crash = jisu.train.LambdaCallback(on_train_step_end=crash_at_step_8)
    recorder = Recorder()
    collector = SummaryCollector(tmp_path / "a", collect_freq=3)
    with pytest.raises(RuntimeError, match="boom"):
        model().train(3, data()[0], callbacks=[recorder, collector, crash])
    # closed as the exception left train: every step collected before it is on disk
    assert collector._writer is None
    got = scalars(tmp_path / "a")
    assert got["train/loss"] == [(s, f32(recorder.losses[s])) for s in (1, 3, 6)]
    assert got["epoch"] == [(5, 1.0)]
    collector.close()  # idempotent

    collector = SummaryCollector(tmp_path / "b", collect_freq=3)
    with collector, pytest.raises(RuntimeError, match="boom"):  # closes as the error leaves
        model().train(3, data()[0], callbacks=[collector, crash])
    assert collector._writer is None
    assert [s for s, _ in scalars(tmp_path / "b")["train/loss"]] == [1, 3, 6]


@needs_tensorboard
def test_collect_specified_data_chooses_what_is_written(tmp_path):
    train, valid, *_ = data()
    no_lr = SummaryCollector(tmp_path / "a", collect_specified_data={"collect_lr": False})
    model().fit(1, train, valid, callbacks=[no_lr])
    assert "train/lr" not in scalars(tmp_path / "a") and "train/loss" in scalars(tmp_path / "a")
    only_metric = SummaryCollector(
        tmp_path / "b",
        collect_specified_data={"collect_metric": True, "collect_graph": False},
        keep_default_action=False,
    )
    model().fit(1, train, valid, callbacks=[only_metric])
    assert set(scalars(tmp_path / "b")) == {"train/loss", "eval/acc", "eval/loss", "epoch"}


@needs_tensorboard
def test_only_rank_0_writes(tmp_path, monkeypatch):
    for module in (summary_collector, csv_logger):
        monkeypatch.setattr(module, "is_main_process", lambda: False)
    collector = SummaryCollector(tmp_path / "tb", collect_freq=1)
    logger = CSVLogger(tmp_path / "log.csv")
    model().train(1, data()[0], callbacks=[collector, logger])
    assert not (tmp_path / "tb").exists() and not (tmp_path / "log.csv").exists()


def test_missing_tensorboard_names_the_extra(tmp_path, monkeypatch):
    for name in list(sys.modules):
        if name == "tensorboard" or name.startswith(("tensorboard.", "torch.utils.tensorboard")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard: ImportError
    with pytest.raises(ImportError, match=r'pip install "jisu\[tensorboard\]"'):
        SummaryCollector(tmp_path)
    CSVLogger(tmp_path / "log.csv")  # needs nothing extra


@needs_tensorboard
def test_summary_collector_bad_arguments_fail_clearly(tmp_path):
    with pytest.raises(ValueError, match=r"collect_freq must be an int >= 1. Received collect_f"):
        SummaryCollector(tmp_path, collect_freq=0)
    with pytest.raises(TypeError, match="summary_dir must be a folder path"):
        SummaryCollector(None)
    with pytest.raises(ValueError, match="max_file_size is a MindInsight feature"):
        SummaryCollector(tmp_path, max_file_size=1 << 30)
    with pytest.raises(ValueError, match=r"\['collect_graph'\] is not supported by jisu"):
        SummaryCollector(tmp_path, collect_specified_data={"collect_graph": True})
    with pytest.raises(ValueError, match="unknown collect_specified_data key 'collect_lrr'"):
        SummaryCollector(tmp_path, collect_specified_data={"collect_lrr": False})
    SummaryCollector(tmp_path, num_process=4)  # accepted for MindSpore's sake


# ---------------------------------------------------------------------- CSVLogger
def read_csv(path, separator=","):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter=separator))
    return rows[0], [dict(zip(rows[0], row)) for row in rows[1:]]


BASE = ["epoch", "step", "loss", "lr", "samples_per_second", "data_wait_share"]


@pytest.mark.parametrize("sink", [False, True])
def test_csv_logger_writes_a_row_per_epoch(tmp_path, sink):
    train, valid, x, y = data()
    clock = Clock()
    recorder = Recorder(clock, x, y)
    logger = CSVLogger(tmp_path / "log.csv")
    logger._clock = clock
    model().fit(
        3, train, valid, callbacks=[one_over_step(), logger, recorder], dataset_sink_mode=sink
    )
    header, rows = read_csv(tmp_path / "log.csv")
    assert header == [*BASE, "eval_acc", "eval_loss"]
    assert len(rows) == 3
    for row, record in zip(rows, recorder.epochs):
        step = record["step"]
        assert (int(row["epoch"]), int(row["step"])) == (record["epoch"], step)
        assert float(row["loss"]) == recorder.losses[step]  # full precision: exact
        assert float(row["lr"]) == pytest.approx(0.1 / step)  # the rate the last step used
        assert float(row["samples_per_second"]) == pytest.approx(N / (STEPS * DT))
        assert float(row["data_wait_share"]) == pytest.approx(record["wait"] / (STEPS * DT))
        assert float(row["eval_acc"]) == pytest.approx(record["acc"], rel=1e-6)
        assert float(row["eval_loss"]) == pytest.approx(record["loss"], rel=1e-5)
    assert [int(r["step"]) for r in rows] == [5, 10, 15]


def test_csv_logger_adds_a_later_metric_as_a_column(tmp_path):
    train, valid, x, y = data()
    recorder = Recorder(None, x, y)
    model().fit(
        3,
        train,
        valid,
        valid_frequency=2,  # epoch 1 has no metrics yet
        callbacks=[CSVLogger(tmp_path / "log.csv"), recorder],
    )
    header, rows = read_csv(tmp_path / "log.csv")
    assert header == [*BASE, "eval_acc", "eval_loss"]  # the old columns did not move
    assert [(r["epoch"], r["eval_acc"]) for r in rows[::2]] == [("1", ""), ("3", "")]
    assert float(rows[1]["eval_acc"]) == pytest.approx(recorder.epochs[1]["acc"])
    assert float(rows[0]["loss"]) == recorder.losses[5]  # the rewrite kept the first row


def test_csv_logger_appends_to_a_resumed_run_and_checks_the_header(tmp_path):
    path = tmp_path / "log.csv"
    train = data()[0]
    model().train(2, train, callbacks=[CSVLogger(path, separator=";")])
    recorder = Recorder()
    model().train(
        4, train, callbacks=[CSVLogger(path, ";", append=True), recorder], initial_epoch=2
    )
    text = path.read_text()
    assert text.count("epoch;step") == 1 and text.endswith("\n")
    header, rows = read_csv(path, ";")
    assert header == BASE
    assert [(int(r["epoch"]), int(r["step"])) for r in rows] == [(1, 5), (2, 10), (3, 15), (4, 20)]
    assert float(rows[3]["loss"]) == recorder.losses[20]

    model().train(1, train, callbacks=[CSVLogger(path, ";")])  # append=False: anew
    assert len(read_csv(path, ";")[1]) == 1

    with pytest.raises(ValueError, match=r"cannot append to '.*log\.csv': its header"):
        model().train(1, train, callbacks=[CSVLogger(path, ",", append=True)])  # wrong separator
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match=r"append to '.*other\.csv': its header \['a', 'b'\]"):
        model().train(1, train, callbacks=[CSVLogger(other, append=True)])
    assert other.read_text() == "a,b\n1,2\n"


def test_csv_logger_never_leaves_a_half_row(tmp_path):
    def crash_at_step_13(run_context):
        if run_context.original_args().cur_step_num == 13:
            raise RuntimeError("boom")

    path = tmp_path / "log.csv"
    crash = jisu.train.LambdaCallback(on_train_step_end=crash_at_step_13)
    with pytest.raises(RuntimeError, match="boom"):
        model().train(4, data()[0], callbacks=[CSVLogger(path), crash])
    text = path.read_text()
    assert text.endswith("\n") and len(text.splitlines()) == 3  # header and epochs 1, 2
    _, rows = read_csv(path)
    assert [r["epoch"] for r in rows] == ["1", "2"] and all(None not in r for r in rows)


def test_csv_logger_bad_arguments_fail_clearly(tmp_path):
    with pytest.raises(ValueError, match=r"separator must be one char.*Received separator=';;'"):
        CSVLogger(tmp_path / "log.csv", separator=";;")
    with pytest.raises(TypeError, match="filename must be a file path"):
        CSVLogger(3)
