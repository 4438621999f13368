"""``set_context(device_target=...)`` on a machine without the device (as MindSpore's CPU
package answers: tests/fixtures/ms_context/, recorded from MindSpore 2.10 and 2.0.0), with a
faked CUDA device, and the ``JISU_DEVICE_TARGET`` switch. No GPU is needed: CUDA's presence
is monkeypatched."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import torch

import jisu
from jisu import context

FIXTURES = Path(__file__).parent / "fixtures" / "ms_context"
RECORDS = [json.loads(path.read_text()) for path in sorted(FIXTURES.glob("mindspore_*.json"))]


@pytest.fixture(autouse=True)
def _clean_context(monkeypatch):
    """Each test starts with no device set, no switch in the environment, no warning given;
    the settings are put back afterwards."""
    saved = context.stored_settings("device_target", "device_id")
    monkeypatch.delenv(context.ENV_DEVICE_TARGET, raising=False)
    monkeypatch.setattr(context, "_forced_warned", [])
    context._context.update(device_target=None, device_id=0)
    yield
    context._context.update(saved)


@pytest.fixture
def no_cuda(monkeypatch):
    """A CPU-only torch build."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(torch.version, "hip", None)


@pytest.fixture
def fake_cuda(monkeypatch):
    """Two CUDA devices, as far as the context can tell (nothing runs on them)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.fixture
def no_torch_npu(monkeypatch):
    real = context.importlib.util.find_spec
    monkeypatch.setattr(
        context.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch_npu" else real(name, *a),
    )


def _outcome(function: str, kwargs: dict) -> list:
    """[error type name or "ok", the stored device_target], as the fixture records them."""
    call = getattr(jisu, function)
    try:
        call(**kwargs)
    except Exception as exc:
        return [type(exc).__name__, None]
    return ["ok", jisu.get_context("device_target")]


@pytest.mark.parametrize("record", RECORDS, ids=[r["version"] for r in RECORDS])
def test_device_requests_fail_or_pass_as_in_mindspore_cpu_package(record, no_cuda, no_torch_npu):
    assert jisu.get_context("device_target") == record["default_device_target"]
    assert jisu.get_context("device_id") == record["default_device_id"]
    for name, case in record["cases"].items():
        if case["outcome"] == "missing":  # set_device is MindSpore 2.5's: 2.0.0 lacks it
            continue
        context._context.update(device_target=None, device_id=0)
        got = _outcome(case["function"], case["kwargs"])
        assert got == [case["outcome"], case["stored"]], name


def test_gpu_without_cuda_is_one_line_saying_why_and_what_to_do(no_cuda):
    with pytest.raises(RuntimeError) as error:
        jisu.set_context(mode=jisu.GRAPH_MODE, device_target="GPU")
    message = str(error.value)
    assert "\n" not in message
    assert "device_target='GPU' but this torch has no CUDA device" in message
    assert "CPU-only build" in message
    assert "install a CUDA build of torch" in message
    assert "device_target='CPU'" in message and "JISU_DEVICE_TARGET=CPU" in message
    assert "jisu port --device CPU" in message
    assert jisu.get_context("device_target") == "CPU"  # nothing was set
    assert jisu.get_context("mode") == jisu.PYNATIVE_MODE  # not half-applied


def test_gpu_with_a_cuda_build_but_no_device_says_so(no_cuda, monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    with pytest.raises(
        RuntimeError, match=r"no CUDA device \(a CUDA build, but no GPU visible or no driver\)"
    ):
        jisu.set_device("GPU")


def test_gpu_with_cuda_present_is_the_cuda_device(fake_cuda):
    assert jisu.get_context("device_target") == "GPU"  # MindSpore's GPU package answers so
    assert context.context_device() is None  # unset: the network stays where it is
    jisu.set_context(device_target="GPU", device_id=1)
    assert jisu.get_context("device_target") == "GPU" and jisu.get_context("device_id") == 1
    assert context.context_device() == torch.device("cuda:1")
    with pytest.raises(RuntimeError, match=r"device_id=2 but only 2 CUDA device\(s\)"):
        jisu.set_context(device_id=2)
    assert jisu.get_context("device_id") == 1


def test_ascend_without_torch_npu_is_refused_by_name(no_cuda, no_torch_npu):
    for name in ("Ascend", "Davinci"):
        with pytest.raises(RuntimeError) as error:
            jisu.set_context(device_target=name)
        message = str(error.value)
        assert "device_target='Ascend' needs the torch_npu package" in message
        assert "pip install torch-npu" in message and "JISU_DEVICE_TARGET=CPU" in message
        assert "\n" not in message


def test_the_environment_switch_runs_a_gpu_script_on_the_cpu(no_cuda, monkeypatch):
    monkeypatch.setenv(context.ENV_DEVICE_TARGET, "cpu")  # any case
    assert jisu.get_context("device_target") == "CPU"
    with pytest.warns(UserWarning, match=r"device_target='GPU' replaced by JISU_DEVICE_TARGET=CPU"):
        jisu.set_context(mode=jisu.PYNATIVE_MODE, device_target="GPU", device_id=0)
    assert jisu.get_context("device_target") == "CPU"
    assert context.context_device() == torch.device("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process
        jisu.set_context(device_target="Ascend")
        jisu.set_device("GPU", 0)
    assert jisu.get_context("device_target") == "CPU"


def test_the_environment_switch_to_gpu_is_checked_too(no_cuda, monkeypatch):
    monkeypatch.setenv(context.ENV_DEVICE_TARGET, "GPU")
    assert jisu.get_context("device_target") == "GPU"
    with pytest.raises(RuntimeError, match="device_target='GPU' but this torch has no CUDA device"):
        context.context_device()  # what Model asks: the switch applies without set_context


def test_a_bad_environment_switch_names_the_variable(monkeypatch):
    monkeypatch.setenv(context.ENV_DEVICE_TARGET, "TPU")
    with pytest.raises(ValueError, match=r"JISU_DEVICE_TARGET must be one of .*'TPU'"):
        jisu.set_context(device_target="CPU")


def test_stored_settings_restore_an_unset_device(no_cuda):
    saved = context.stored_settings("mode", "device_target")
    assert saved["device_target"] is None
    jisu.set_context(device_target="CPU")
    jisu.set_context(**saved)
    assert context.stored_settings("device_target") == {"device_target": None}
    assert context.context_device() is None
    with pytest.raises(ValueError, match="unknown key"):
        context.stored_settings("device")


def test_device_id_is_checked_before_anything_is_set(no_cuda):
    for bad in (-1, 4096, True, "0"):
        with pytest.raises(ValueError, match=r"device_id must be an int in \[0, 4095\]"):
            jisu.set_context(device_target="CPU", device_id=bad)
    assert context.stored_settings("device_target", "device_id") == {
        "device_target": None,
        "device_id": 0,
    }


def test_a_gpu_script_trains_on_the_cpu_under_the_switch(no_cuda, monkeypatch):
    """What a ported zoo script does first (set_context with the config's "GPU"), then a
    Model step: with JISU_DEVICE_TARGET=CPU it trains on the CPU, unchanged."""
    from torch import nn

    monkeypatch.setenv(context.ENV_DEVICE_TARGET, "CPU")
    with pytest.warns(UserWarning, match="replaced by JISU_DEVICE_TARGET=CPU"):
        jisu.set_context(mode=jisu.PYNATIVE_MODE, device_target="GPU")
    torch.manual_seed(0)
    net = nn.Linear(3, 2)
    model = jisu.Model(net, nn.MSELoss(), torch.optim.SGD(net.parameters(), lr=0.1))
    model.train(1, [(torch.randn(4, 3), torch.randn(4, 2))])
    assert model.device == torch.device("cpu")


def test_jisu_train_on_a_missing_gpu_fails_in_one_line(no_cuda, capsys):
    """The CLI says what set_context says, before any data is written or read."""
    from jisu import cli

    assert cli.main(["train", "--device", "GPU", "--epochs", "1"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("jisu train: error: RuntimeError: set_context: device_target='GPU'")
    assert "JISU_DEVICE_TARGET=CPU" in err[0]
