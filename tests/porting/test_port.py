"""``jisu port``: a MindSpore project copied with its imports swapped runs on jisu, and the
report names what jisu refuses or lacks, where the project uses it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jisu.cli import main
from jisu.porting import port_project

TRAIN_PY = '''\
"""Train with mindspore (this docstring keeps its words)."""
import numpy as np
import mindspore as ms
import mindspore.nn as nn
from mindspore import context
from mindspore.train.callback import LossMonitor
import mindspore.dataset as ds
from src.config import config

context.set_context(mode=context.PYNATIVE_MODE, device_target=config["device_target"])
ms.set_seed(1)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3)

    def construct(self, x):
        return self.fc(x)


rng = np.random.default_rng(0)
data = ds.NumpySlicesDataset(
    {"x": rng.normal(size=(16, 4)).astype(np.float32),
     "y": rng.integers(0, 3, size=16).astype(np.int32)},
    shuffle=False,
).batch(4)
net = Net()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
model = ms.Model(net, loss, nn.Momentum(net.trainable_params(), 0.1, 0.9))
model.train(2, data, callbacks=[LossMonitor()])
print("TRAINED", config["device_target"])
'''

CONFIG_PY = 'config = {"device_target": "Ascend", "file_format": "MINDIR"}\n'
CONFIG_YAML = 'device_target: "GPU"\nfile_format: AIR\nother: "Ascend"\n'
EXPORT_PY = """\
import mindspore
from mindspore import nn, export
from mindspore.nn import GraphCell, NoSuchLayerAnywhere

if __name__ == "__main__":
    net = GraphCell(mindspore.load("net.mindir"))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "MyNet"
    (root / "src").mkdir(parents=True)
    (root / "src" / "__init__.py").write_text("")
    (root / "src" / "config.py").write_text(CONFIG_PY)
    (root / "train.py").write_text(TRAIN_PY)
    (root / "export.py").write_text(EXPORT_PY)
    (root / "default_config.yaml").write_text(CONFIG_YAML)
    (root / "README.md").write_text("import mindspore\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    return root


def test_the_ported_copy_runs_on_jisu_with_the_device_set(project, tmp_path):
    dst = tmp_path / "ported"
    report = port_project(project, dst, device="CPU")
    assert (dst / "README.md").read_text() == "import mindspore\n"  # not code: kept
    assert not (dst / ".git").exists()
    assert 'device_target: "CPU"' in (dst / "default_config.yaml").read_text()
    assert report.device_targets == 2  # the yaml's GPU and config.py's Ascend
    assert (
        '"""Train with mindspore (this docstring keeps its words)."""'
        in (dst / "train.py").read_text()
    )
    # the source is untouched
    assert (project / "train.py").read_text() == TRAIN_PY
    run = subprocess.run(
        [sys.executable, "train.py"], cwd=dst, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "TRAINED CPU" in run.stdout


def test_the_report_names_refused_and_missing_names_where_first_used(project):
    report = port_project(project)  # a check: nothing written
    statuses = {name: use.status for name, (use, _) in report.uses.items()}
    assert statuses["mindspore.nn.Dense"] == "provided"
    assert statuses["mindspore.train.callback.LossMonitor"] == "provided"
    assert statuses["mindspore.nn.GraphCell"] == "refused"
    assert statuses["mindspore.load"] == "refused"
    assert statuses["mindspore.nn.NoSuchLayerAnywhere"] == "missing"
    use, where = report.uses["mindspore.nn.GraphCell"]
    assert where == "export.py:3"
    assert "MindIR" in use.reason
    assert report.uses["mindspore.nn.NoSuchLayerAnywhere"][1] == "export.py:3"
    text = report.summary()
    assert "refused  mindspore.nn.GraphCell  (export.py:3)" in text
    assert "missing  mindspore.nn.NoSuchLayerAnywhere  (export.py:3)" in text
    # MINDIR/AIR defaults are listed with where they are
    assert sorted(report.runtime_formats) == ["default_config.yaml:2", "src/config.py:1"]
    assert report.files == 0


def test_export_formats_are_set_when_asked(project, tmp_path):
    dst = tmp_path / "ported"
    report = port_project(project, dst, export_format="ONNX")
    assert report.export_formats == 2 and report.runtime_formats == []
    assert "file_format: ONNX" in (dst / "default_config.yaml").read_text()
    assert '"file_format": "ONNX"' in (dst / "src" / "config.py").read_text()
    assert '"device_target": "Ascend"' in (dst / "src" / "config.py").read_text()  # no --device


def test_a_port_never_writes_over_files(project, tmp_path):
    dst = tmp_path / "taken"
    dst.mkdir()
    (dst / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="exists"):
        port_project(project, dst)
    assert [p.name for p in dst.iterdir()] == ["mine.txt"]
    with pytest.raises(FileNotFoundError, match="no such project"):
        port_project(tmp_path / "absent", tmp_path / "out")
    with pytest.raises(ValueError, match="device must be one of"):
        port_project(project, tmp_path / "out", device="Ascend")


def test_the_command_line(project, tmp_path, capsys):
    assert main(["port", str(project), str(tmp_path / "out"), "--device", "GPU"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"ported {project} -> {tmp_path / 'out'}")
    assert "missing  mindspore.nn.NoSuchLayerAnywhere" in out
    assert main(["port", str(project), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["names"]["mindspore.nn.GraphCell"]["status"] == "refused"
    assert report["names"]["mindspore.nn.GraphCell"]["first_use"] == "export.py:3"
    assert main(["port", str(project), str(tmp_path / "out")]) == 1  # exists: one line, status 1
    assert "exists" in capsys.readouterr().err


def test_a_single_file_is_ported(tmp_path):
    src = tmp_path / "script.py"
    src.write_text("import mindspore.nn as nn\nlayer = nn.Dense(2, 2)\n")
    report = port_project(src, tmp_path / "out" / "script.py")
    assert (tmp_path / "out" / "script.py").read_text() == (
        "import jisu.nn as nn\nlayer = nn.Dense(2, 2)\n"
    )
    assert report.names_swapped == 1
    assert report.uses["mindspore.nn.Dense"][0].status == "provided"
