"""MindSpore's module paths the model zoo imports resolve in jisu, with MindSpore's meaning.

Expected values come from MindSpore 2.10 (tests/fixtures/ms_paths/paths.json, recorded by
make_fixtures.py there), from Python/TensorBoard's own readers, or from the documented rule.
"""

from __future__ import annotations

import importlib
import json
import logging
import random
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu
import jisu.dataset as ds
from jisu import context
from jisu import log as mslog

FIXTURE = json.loads((Path(__file__).parent / "fixtures/ms_paths/paths.json").read_text())

PATHS = [
    "common.set_seed", "common.parameter.Parameter", "common.parameter.ParameterTuple",
    "common.Parameter", "common.Tensor", "common.RowTensor", "common.dtype", "common.initializer",
    "common.float32", "RowTensor", "log", "log.info", "log.warning", "log.error", "log.debug",
    "log.logging.info", "profiler.Profiler", "profiler.profiling.Profiler",
    "train.model.ParallelMode.DATA_PARALLEL", "train.callback._InternalCallbackParam",
    "train.callback._callback.Callback", "train.summary.SummaryRecord",
    "train.summary.summary_record.SummaryRecord", "SummaryRecord", "context.set_ps_context",
    "set_ps_context", "context.ParallelMode.MODE_LIST", "_extends.cell_attr_register",
    "DatasetHelper", "dataset.engine.ImageFolderDataset", "dataset.engine.GeneratorDataset",
    "dataset.engine.MindDataset", "dataset.engine.PaddedDataset",
    "dataset.engine.DistributedSampler", "dataset.engine.config.set_seed", "dataset.DatasetCache",
    "dataset.config.set_numa_enable", "dataset.context.set_context", "dataset.context.GRAPH_MODE",
    "common.initializer._calculate_gain", "common.initializer._calculate_correct_fan",
    "common.initializer._calculate_fan_in_and_fan_out", "common.initializer._assignment",
    "train.train_thor.ConvertModelUtils", "jit", "ms_function",
    "export", "train.export", "train.serialization.export",
]  # fmt: skip


def _resolve(path: str) -> object:
    """``mindspore.<path>`` as the zoo reaches it: the longest importable module, then
    attributes."""
    parts = ["jisu", *path.split(".")]
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise AssertionError(path)


@pytest.mark.parametrize("path", PATHS)
def test_the_path_resolves(path):
    assert _resolve(path) is not None


def test_from_imports_work_as_in_the_zoo():
    from jisu.common import Parameter, RowTensor, Tensor, set_seed  # noqa: F401
    from jisu.common.parameter import Parameter as P2
    from jisu.common.parameter import ParameterTuple  # noqa: F401
    from jisu.dataset.engine import ImageFolderDataset  # noqa: F401
    from jisu.train.callback import RunContext, _InternalCallbackParam  # noqa: F401
    from jisu.train.callback._callback import Callback
    from jisu.train.summary.summary_record import SummaryRecord  # noqa: F401

    assert Parameter is P2 is jisu.Parameter and Tensor is jisu.Tensor
    assert Callback is jisu.train.Callback
    assert jisu.train.model.ParallelMode is context.ParallelMode
    assert ds.context is context and ds.engine.config is ds.config


def test_common_set_seed_seeds_torch_numpy_and_python():
    jisu.common.set_seed(7)
    first = (torch.rand(3), np.random.rand(3), random.random())
    jisu.common.set_seed(7)
    second = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    assert first[2] == second[2] and jisu.common.get_seed() == 7


def test_common_parameter_makes_torch_parameters():
    weight = jisu.common.parameter.Parameter(np.ones((2, 2), np.float32), name="w")
    assert isinstance(weight, torch.nn.Parameter) and weight.requires_grad
    params = jisu.common.parameter.ParameterTuple([weight])
    assert isinstance(params, tuple) and params[0] is weight


def test_row_tensor_holds_what_mindspore_holds():
    want = FIXTURE["row_tensor"]
    rows = jisu.RowTensor(torch.tensor([0, 2]), torch.tensor([[1.0, 2.0], [3.0, 4.0]]), (4, 2))
    assert rows.indices.tolist() == want["indices"] and rows.values.tolist() == want["values"]
    assert list(rows.dense_shape) == want["dense_shape"]
    copy = jisu.common.RowTensor(row_tensor=rows)
    assert copy.dense_shape == (4, 2) and copy.values is rows.values
    dense = jisu.RowTensor(torch.tensor([1, 1]), torch.ones(2, 3), (3, 3)).to_dense()
    assert dense.tolist() == [[0, 0, 0], [2, 2, 2], [0, 0, 0]]  # repeated rows add up
    with pytest.raises(ValueError, match="RowTensor: values"):
        jisu.RowTensor(torch.tensor([0]), torch.ones(2, 3), (3, 3))


@pytest.fixture
def fresh_log(monkeypatch):
    monkeypatch.setattr(mslog, "_logger", None)
    logger = logging.getLogger("jisu.log")
    yield logger
    logger.handlers.clear()
    logger.setLevel(logging.NOTSET)
    logger.propagate = True


def test_log_writes_mindspore_lines_at_glog_level(fresh_log, monkeypatch, capsys):
    monkeypatch.delenv("GLOG_v", raising=False)
    assert mslog.get_level() == FIXTURE["log_level_default"]  # WARNING
    mslog.info("hidden %d", 1)
    mslog.warning("shown %s", "here")
    err = capsys.readouterr().err
    assert "hidden" not in err
    assert "[WARNING] ME(" in err and "shown here" in err and "test_mindspore_paths.py" in err


def test_log_level_follows_glog_v(fresh_log, monkeypatch, capsys):
    monkeypatch.setenv("GLOG_v", "1")
    mslog.info("now %s", "visible")
    mslog.debug("still hidden")
    err = capsys.readouterr().err
    assert "[INFO]" in err and "now visible" in err and "still hidden" not in err
    assert mslog.get_level() == "1" and mslog.logging is logging


def test_log_refuses_a_bad_glog_v(fresh_log, monkeypatch):
    monkeypatch.setenv("GLOG_v", "9")
    with pytest.raises(ValueError, match="GLOG_v"):
        mslog.error("x")


def test_profiler_writes_a_trace_and_an_op_table(tmp_path):
    profiler = jisu.profiler.Profiler(output_path=str(tmp_path))
    a = torch.rand(16, 16)
    for _ in range(3):
        a = a @ a
    profiler.analyse()
    folder = tmp_path / "profiler"
    trace = json.loads((folder / "trace_rank0.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert "aten::mm" in names or "aten::matmul" in names
    assert "aten::mm" in (folder / "op_statistic_rank0.txt").read_text()
    profiler.analyse()  # a second analyse does nothing


def test_profiler_records_between_start_and_stop(tmp_path):
    profiler = jisu.profiler.profiling.Profiler(output_path=str(tmp_path), start_profile=False)
    with pytest.raises(RuntimeError, match="not recording"):
        profiler.stop()
    profiler.start()
    torch.rand(4, 4).sigmoid()
    profiler.stop()
    torch.rand(4, 4).tanh()  # not recorded
    profiler.analyse()
    trace = json.loads((tmp_path / "profiler/trace_rank0.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert "aten::sigmoid" in names and "aten::tanh" not in names
    with pytest.raises(ValueError, match="unknown"):
        jisu.Profiler(output_path=str(tmp_path), bogus=1)


def test_profiler_as_a_context_manager_records_the_block(tmp_path):
    with jisu.Profiler(output_path=str(tmp_path), start_profile=False) as profiler:
        torch.rand(4, 4).exp()
    torch.rand(4, 4).log()  # after the block: not recorded
    profiler.analyse()
    trace = json.loads((tmp_path / "profiler/trace_rank0.json").read_text())
    names = {event.get("name") for event in trace["traceEvents"]}
    assert "aten::exp" in names and "aten::log" not in names


def test_summary_record_writes_events_tensorboard_reads(tmp_path):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    with jisu.SummaryRecord(str(tmp_path)) as record:
        record.add_value("scalar", "loss", torch.tensor(0.5))
        record.add_value("histogram", "weights", torch.arange(10.0))
        record.add_value("image", "images", torch.rand(2, 3, 4, 4))
        assert record.record(1)
        record.add_value("scalar", "loss", torch.tensor([0.25]))
        assert record.record(2)
        record.flush()
    assert not record.record(3)  # closed
    events = accumulator.EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(1, 0.5), (2, 0.25)]
    assert events.Histograms("weights")[0].histogram_value.num == 10
    assert len(events.Images("images")) >= 1
    assert jisu.SummaryRecord is jisu.train.SummaryRecord


def test_summary_record_checks_its_arguments(tmp_path):
    record = jisu.train.summary.SummaryRecord(str(tmp_path))
    with pytest.raises(TypeError, match="value must be a Tensor"):
        record.add_value("scalar", "loss", 0.5)
    with pytest.raises(ValueError, match="one element"):
        record.add_value("scalar", "loss", torch.ones(2))
    with pytest.raises(ValueError, match="not provided"):
        record.add_value("train_lineage", "x", torch.ones(1))
    with pytest.raises(ValueError, match="no such plugin"):
        record.add_value("audio", "x", torch.ones(1))
    with pytest.raises(TypeError, match="step must be an int"):
        record.record(1.0)
    record.close()


def test_set_ps_context_records_and_refuses_the_parameter_server():
    jisu.set_ps_context(enable_ps=False, enable_ssl=False)
    assert context.get_ps_context("enable_ps") is False
    with pytest.raises(ValueError, match="parameter server"):
        context.set_ps_context(enable_ps=True)
    with pytest.raises(ValueError, match="unknown"):
        context.set_ps_context(enable_pss=False)


def test_mode_list_is_mindspores():
    assert FIXTURE["mode_list"] == context.ParallelMode.MODE_LIST


def test_cell_attr_register_records_mindspores_key():
    from jisu._extends import cell_attr_register

    class Plain(jisu.nn.Cell):
        @cell_attr_register
        def __init__(self, a, b=3, *, c="x"):
            super().__init__()
            self.a = a

    class Listed(jisu.nn.Cell):
        @cell_attr_register(attrs=["has_bias", "activation", "missing"])
        def __init__(self, has_bias, activation):
            super().__init__()
            self.has_bias, self.activation = has_bias, activation

    want = FIXTURE["cell_init_args"]
    assert Plain(1, c="y").cell_init_args == want["plain"]
    assert Plain(2).cell_init_args == want["plain_default"]
    assert Listed(True, "relu").cell_init_args == want["listed"]


def test_dataset_helper_gives_mindspores_batches_per_epoch():
    data = ds.NumpySlicesDataset(
        {"x": np.arange(10, dtype=np.float32).reshape(5, 2), "y": np.arange(5, dtype=np.int32)},
        shuffle=False,
    ).batch(2)
    helper = jisu.DatasetHelper(data, dataset_sink_mode=False, epoch_num=2)
    epochs = [[[t.tolist() for t in row] for row in helper] for _ in range(2)]
    assert epochs == FIXTURE["dataset_helper"]["epochs"]
    helper.release()


def test_dataset_cache_and_numa_are_accepted():
    cache = ds.DatasetCache(session_id=1, size=0)
    assert cache.session_id == 1 and cache.get_stat()["mem_cached_cnt"] == 0
    with pytest.raises(TypeError, match="session_id"):
        ds.DatasetCache(session_id="1")
    ds.config.set_numa_enable(True)
    assert ds.config.get_numa_enable() is True
    ds.config.set_numa_enable(False)
    with pytest.raises(TypeError, match="set_numa_enable"):
        ds.config.set_numa_enable(1)


def test_initializer_private_helpers_give_mindspores_values():
    from jisu.common import initializer as init

    for name, value in FIXTURE["gain"].items():
        nonlinearity, _, slope = name.partition(":")
        param = None if not slope else (int(slope) if slope.isdigit() else float(slope))
        assert init._calculate_gain(nonlinearity, param) == pytest.approx(value)
    for bad in FIXTURE["gain_errors"]:
        with pytest.raises(ValueError):
            init._calculate_gain(bad)
    for shape, fans, correct in zip(
        FIXTURE["fan_shapes"], FIXTURE["fans"], FIXTURE["correct_fan"], strict=True
    ):
        assert list(init._calculate_fan_in_and_fan_out(shape)) == fans
        assert [init._calculate_correct_fan(shape, "fan_in"),
                init._calculate_correct_fan(shape, "FAN_OUT")] == correct  # fmt: skip
    with pytest.raises(ValueError):
        init._calculate_fan_in_and_fan_out([4])
    with pytest.raises(ValueError):
        init._calculate_correct_fan([3, 4], "fan_avg")
    want = FIXTURE["assignment"]
    assert init._assignment(np.zeros(()), 2.5).tolist() == want["scalar"]
    assert init._assignment(np.zeros((2, 3)), 7).tolist() == want["number"]
    arr = np.zeros((2, 2))
    assert init._assignment(arr, np.array([[1.0, 2.0], [3.0, 4.0]])) is arr
    assert arr.tolist() == want["array"]


def test_thor_is_refused_by_name():
    from jisu.train.train_thor import ConvertModelUtils

    with pytest.raises(NotImplementedError, match="THOR"):
        ConvertModelUtils().convert_to_thor_model(None)
    with pytest.raises(NotImplementedError, match="first-order"):
        ConvertModelUtils.convert_to_thor_model(None)


def test_internal_callback_param_drives_callbacks_by_hand():
    from jisu.train.callback import RunContext, _InternalCallbackParam

    params = _InternalCallbackParam()
    params.cur_epoch_num = 3
    assert params["cur_epoch_num"] == 3
    assert RunContext(params).original_args().cur_epoch_num == 3


def test_graph_seeds_follow_mindspores_counters(monkeypatch):
    from jisu.common import seed

    monkeypatch.setattr(seed, "_seed", None)
    monkeypatch.setattr(seed, "_kernel_seeds", {})
    want = FIXTURE["graph_seed"]
    calls = want["calls"]
    assert [list(seed._get_graph_seed(*c)) for c in calls] == want["unset"]
    for phase, value in (("seed1", 1), ("seed1_again", 1), ("seed0", 0)):
        jisu.set_seed(value)
        assert [list(seed._get_graph_seed(*c)) for c in calls] == want[phase], phase


def test_callback_manager_calls_every_callback_by_either_name():
    from jisu.train.callback import RunContext, _CallbackManager, _set_cur_net

    seen = []

    class Recorder(jisu.train.Callback):
        def __init__(self, tag):
            self.tag = tag

        def on_train_begin(self, run_context):
            seen.append((self.tag, "begin"))

        def on_train_step_end(self, run_context):
            seen.append((self.tag, "step_end"))

    with _CallbackManager([Recorder(1), Recorder(2)]) as manager:
        context_ = RunContext({})
        manager.begin(context_)
        manager.on_train_step_end(context_)
    assert seen == [(1, "begin"), (2, "begin"), (1, "step_end"), (2, "step_end")]
    assert _set_cur_net(object()) is None


def test_set_device_and_recursion_limit_set_the_context():
    before = context.stored_settings("device_target", "device_id", "max_call_depth")
    try:
        jisu.set_device("CPU")
        assert context.get_context("device_target") == "CPU"
        assert context.get_context("device_id") == 0
        jisu.set_recursion_limit(2000)
        assert context.get_context("max_call_depth") == 2000
        with pytest.raises(ValueError, match="recursion_limit"):
            jisu.set_recursion_limit(0)
        with pytest.raises(ValueError, match="device_target"):
            jisu.set_device("TPU")
    finally:
        context.set_context(**before)


def test_more_names_at_mindspores_paths():
    assert jisu.train.DynamicLossScaleManager is jisu.amp.DynamicLossScaleManager
    batched = ds.NumpySlicesDataset({"x": np.arange(4)}, shuffle=False).batch(2)
    assert isinstance(batched, ds.BatchDataset)
