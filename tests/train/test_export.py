"""``export(net, *inputs, file_name, file_format)``: ONNX models run in onnxruntime, ``.pt2``
programs load back, MindSpore's runtime formats are refused by name, a failed export leaves no
file.

The expectation is the network's own eager output on the export inputs, computed here in eval
mode, and compared with onnxruntime's (an independent runtime: its own kernels) within the
tolerance export's docstring states (:data:`jisu.train.export_check.TOLERANCES`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import jisu as ms
import jisu.nn as nn
from tests.nn import model_zoo_resnet as zoo

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

RTOL, ATOL = 1e-4, 1e-5  # float32, as export's docstring states (atol times max(1, max|y|))


class CNN(nn.Cell):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, pad_mode="same", has_bias=True)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(8 * 4 * 4, 10)

    def construct(self, x):
        return self.fc(self.flatten(self.pool(self.relu(self.bn(self.conv(x))))))


class LSTMNet(nn.Cell):
    """As the zoo's LSTM projects call it: the initial states are inputs."""

    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2, batch_first=batch_first, bidirectional=True)
        self.fc = nn.Dense(12, 3)

    def construct(self, x, h, c):
        out, (hn, cn) = self.lstm(x, (h, c))
        return self.fc(out), hn, cn


class Branchy(nn.Cell):
    """A Python branch on a tensor's value: no graph can hold it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Dense(4, 4)

    def construct(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return -x


def _onnx_outputs(path: str, *inputs: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs)))


def _eager(net: nn.Cell, *inputs: np.ndarray) -> list[np.ndarray]:
    net.set_train(False)
    with torch.no_grad():
        out = net(*(torch.from_numpy(x) for x in inputs))
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


def _close(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        scale = max(1.0, float(np.abs(b).max()))
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL * scale)


def _trained_bn(net: nn.Cell) -> None:
    """Non-trivial BatchNorm statistics, so eval-mode export is visible in the outputs."""
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)


def test_cnn_onnx_runs_in_onnxruntime(tmp_path):
    torch.manual_seed(0)
    net = CNN()
    _trained_bn(net)
    net.set_train(True)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    path = ms.export(
        net, ms.Tensor(x, ms.float32), file_name=str(tmp_path / "cnn"), file_format="ONNX"
    )
    assert path == str(tmp_path / "cnn.onnx") and os.listdir(tmp_path) == ["cnn.onnx"]
    assert net.training and net.bn.training  # the mode is restored
    _close(_onnx_outputs(path, x), _eager(net, x))


@pytest.mark.parametrize("batch_first", [True, False])
def test_lstm_onnx_with_initial_states(tmp_path, batch_first):
    torch.manual_seed(0)
    net = LSTMNet(batch_first)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 4) if batch_first else (5, 2, 4)).astype(np.float32)
    h = rng.standard_normal((4, 2, 6)).astype(np.float32)
    c = rng.standard_normal((4, 2, 6)).astype(np.float32)
    path = ms.export(net, x, h, c, file_name=str(tmp_path / "lstm.onnx"), file_format="ONNX")
    assert path.endswith("lstm.onnx")
    _close(_onnx_outputs(path, x, h, c), _eager(net, x, h, c))


def test_zoo_resnet_onnx(tmp_path):
    torch.manual_seed(0)
    net = zoo.resnet18(class_num=10)
    _trained_bn(net)
    x = np.random.default_rng(2).random((1, 3, 32, 32), dtype=np.float32)
    path = ms.export(net, ms.Tensor(x), file_name=str(tmp_path / "resnet"), file_format="ONNX")
    _close(_onnx_outputs(path, x), _eager(net, x))


def test_torch_export_round_trip(tmp_path):
    torch.manual_seed(0)
    net = CNN()
    _trained_bn(net)
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    path = ms.export(net, x, file_name=str(tmp_path / "cnn"), file_format="TORCH_EXPORT")
    assert path == str(tmp_path / "cnn.pt2")
    loaded = torch.export.load(path).module()
    with torch.no_grad():
        got = loaded(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, _eager(net, x)[0], rtol=1e-6, atol=1e-6)  # same kernels


@pytest.mark.parametrize("fmt", ["MINDIR", "AIR"])
def test_mindspore_runtime_formats_refused(tmp_path, fmt):
    with pytest.raises(NotImplementedError) as info:
        ms.export(CNN(), np.zeros((1, 3, 8, 8), np.float32), file_name="x", file_format=fmt)
    message = str(info.value)
    assert "\n" not in message
    assert f"file_format='{fmt}'" in message and "MindSpore runtime format" in message
    assert "'ONNX'" in message and "'TORCH_EXPORT'" in message


def test_unknown_format_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"\['ONNX', 'TORCH_EXPORT', 'MINDIR', 'AIR'\]"):
        ms.export(CNN(), np.zeros((1, 3, 8, 8), np.float32), file_name="x", file_format="onnx")


def test_data_dependent_branch_fails_clearly_and_writes_nothing(tmp_path):
    with pytest.raises(RuntimeError) as info:
        ms.export(Branchy(), torch.ones(2, 4), file_name=str(tmp_path / "b"), file_format="ONNX")
    message = str(info.value)
    assert message.startswith("export: Branchy cannot be exported")
    assert "if x.sum() > 0" in message and "data-dependent" in message
    assert os.listdir(tmp_path) == []


def test_failed_check_writes_nothing(tmp_path, monkeypatch):
    """A model whose onnxruntime output disagrees with the network is not kept."""
    from jisu.train import exporting

    def wrong(path, args):
        return [torch.zeros(2, 10)]

    monkeypatch.setattr(exporting, "run_onnx", wrong)
    with pytest.raises(RuntimeError, match="max abs error"):
        ms.export(CNN(), torch.randn(2, 3, 8, 8), file_name=str(tmp_path / "m"), file_format="ONNX")
    assert os.listdir(tmp_path) == []


def test_a_wrong_model_from_the_exporter_is_caught(tmp_path):
    """torch 2.13's dynamo ONNX exporter writes a batch-statistics BatchNorm (MindSpore's
    use_batch_statistics=True, DeepLabV3's) with the running statistics: the check catches the
    wrong outputs and nothing is written; ``exporter="auto"`` then uses the TorchScript
    exporter, whose model passes the check. (Should a later torch export it right, the dynamo
    model must then match.)"""
    torch.manual_seed(0)
    net = nn.SequentialCell([nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, use_batch_statistics=True)])
    x = (np.random.default_rng(6).random((2, 3, 6, 6), dtype=np.float32) * 3 + 1).astype("f4")
    name = str(tmp_path / "bs")
    try:
        path = ms.export(net, x, file_name=name, file_format="ONNX", exporter="dynamo")
    except RuntimeError as exc:
        assert "max abs error" in str(exc) and "use_batch_statistics=True" in str(exc)
        assert os.listdir(tmp_path) == []
        with pytest.warns(UserWarning, match="TorchScript exporter .* max abs error"):
            path = ms.export(net, x, file_name=name, file_format="ONNX")
    _close(_onnx_outputs(path, x), _eager(net, x))


def test_half_precision_inside_gets_the_half_tolerance(tmp_path):
    """A zoo Dense computing in float16 (``to_float``) with float32 outputs: onnxruntime's
    float16 rounding differs from torch's, and the check allows float16's tolerance."""
    torch.manual_seed(0)
    net = nn.SequentialCell([nn.Dense(64, 64), nn.ReLU(), nn.Dense(64, 8)])
    net.to_float(ms.float16)
    x = np.random.default_rng(4).standard_normal((4, 64)).astype(np.float32)
    path = ms.export(net, x, file_name=str(tmp_path / "half"), file_format="ONNX")
    got, want = _onnx_outputs(path, x)[0].astype(np.float32), _eager(net, x)[0].astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3 * max(1.0, np.abs(want).max()))


def test_torchscript_exporter_and_unchecked_write(tmp_path):
    torch.manual_seed(0)
    net = CNN()
    x = np.random.default_rng(5).standard_normal((2, 3, 8, 8)).astype(np.float32)
    path = ms.export(
        net, x, file_name=str(tmp_path / "ts"), file_format="ONNX", exporter="torchscript"
    )
    _close(_onnx_outputs(path, x), _eager(net, x))
    path = ms.export(net, x, file_name=str(tmp_path / "raw"), file_format="ONNX", verify=False)
    assert sorted(os.listdir(tmp_path)) == ["raw.onnx", "ts.onnx"]


def test_missing_onnxruntime_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"pip install 'jisu\[export\]'.*verify=False"):
        ms.export(CNN(), torch.randn(1, 3, 8, 8), file_name=str(tmp_path / "m"), file_format="ONNX")
    assert os.listdir(tmp_path) == []


def test_customized_encryption_as_mindspore(tmp_path):
    """MindSpore's ONNX encryption: the file holds ``enc_mode(model_bytes, enc_key)``, after
    the check ran on the plain model; missing folders are made."""
    torch.manual_seed(0)
    net = CNN()
    x = np.random.default_rng(7).standard_normal((1, 3, 8, 8)).astype(np.float32)
    key = b"k" * 16
    path = ms.export(
        net, x, file_name=str(tmp_path / "sub" / "enc.onnx"), file_format="ONNX",
        enc_key=key, enc_mode=lambda data, k: k + data[::-1],
    )  # fmt: skip
    data = Path(path).read_bytes()
    assert data.startswith(key)
    plain = tmp_path / "plain.onnx"
    plain.write_bytes(data[len(key) :][::-1])
    _close(_onnx_outputs(str(plain), x), _eager(net, x))


def test_mindspore_keywords():
    x = np.zeros((1, 3, 8, 8), np.float32)
    with pytest.raises(TypeError, match="unknown keyword"):
        ms.export(CNN(), x, file_name="m", file_format="ONNX", file_fromat="ONNX")
    with pytest.raises(ValueError, match="custom_func is for MINDIR only"):
        ms.export(CNN(), x, file_name="m", file_format="ONNX", custom_func=print)
    with pytest.raises(ValueError, match="only support customized encryption"):
        ms.export(CNN(), x, file_name="m", file_format="ONNX", enc_key=b"0" * 16)


def test_mindspore_paths():
    import jisu.train
    import jisu.train.serialization

    assert ms.export is jisu.train.export is jisu.train.serialization.export
