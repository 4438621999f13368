"""The zoo harness's import rewriter (benchmarks/zoo/rewrite.py): ``mindspore`` becomes
``jisu`` where it starts a dotted path in code, and nowhere else; device targets become CPU.
Needs no zoo snapshot."""

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ZOO = Path(__file__).resolve().parents[1] / "benchmarks" / "zoo"


@pytest.fixture(scope="module")
def rewrite():
    spec = importlib.util.spec_from_file_location("zoo_rewrite", ZOO / "rewrite.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["zoo_rewrite"] = module
    spec.loader.exec_module(module)
    return module


SOURCE = '''\
"""Train with mindspore: `import mindspore` in a docstring stays."""
import mindspore
import mindspore as ms
import mindspore.nn as nn, numpy as np
import mindspore.ops.operations as P
from mindspore import Tensor, context  # a comment about mindspore stays
from mindspore.common import dtype as mstype
from mindspore.train.callback import (
    LossMonitor,
    TimeMonitor,
)
import mindspore_hub
from my_mindspore import helper

x = mindspore.common.dtype.float32
y = isinstance(t, mindspore.Tensor) and mindspore.__version__ >= "2.0"
name = "mindspore.nn.Dense"
path = f"{root}/mindspore/ckpt"
obj.mindspore = 1
value = config.mindspore
call(mindspore .ops . ReLU)
if True:
    import mindspore.dataset as ds
'''

EXPECTED = '''\
"""Train with mindspore: `import mindspore` in a docstring stays."""
import jisu
import jisu as ms
import jisu.nn as nn, numpy as np
import jisu.ops.operations as P
from jisu import Tensor, context  # a comment about mindspore stays
from jisu.common import dtype as mstype
from jisu.train.callback import (
    LossMonitor,
    TimeMonitor,
)
import mindspore_hub
from my_mindspore import helper

x = jisu.common.dtype.float32
y = isinstance(t, jisu.Tensor) and jisu.__version__ >= "2.0"
name = "mindspore.nn.Dense"
path = f"{root}/mindspore/ckpt"
obj.mindspore = 1
value = config.mindspore
call(jisu .ops . ReLU)
if True:
    import jisu.dataset as ds
'''


def test_imports_aliases_and_dotted_uses_are_rewritten_strings_and_comments_are_not(rewrite):
    out, count = rewrite.rewrite_source(SOURCE)
    assert out == EXPECTED
    assert count == 12
    ast.parse(out)  # still Python


def test_text_without_mindspore_or_that_does_not_tokenize_is_left_alone(rewrite):
    assert rewrite.rewrite_source("import torch\n") == ("import torch\n", 0)
    broken = 'import mindspore\nx = """never closed\n'
    assert rewrite.rewrite_source(broken) == (broken, 0)


def test_line_endings_and_columns_are_kept(rewrite):
    out, count = rewrite.rewrite_source("import mindspore as ms\r\nms.x = mindspore.y\r\n")
    assert (out, count) == ("import jisu as ms\r\nms.x = jisu.y\r\n", 2)


def test_device_targets_in_yaml_and_python_become_cpu(rewrite):
    yaml = 'device_target: "Ascend"\ndevice_id: 0\n  device_target: GPU\nother: "Ascend"\n'
    out, count = rewrite.force_cpu_config(yaml, yaml=True)
    assert out == 'device_target: "CPU"\ndevice_id: 0\n  device_target: CPU\nother: "Ascend"\n'
    assert count == 2
    py = (
        "parser.add_argument('--device_target', type=str, default='Ascend', help='x')\n"
        'cfg = {"device_target": "GPU", "name": "Ascend"}\n'
        'context.set_context(device_target="Ascend")\n'
    )
    out, count = rewrite.force_cpu_config(py, yaml=False)
    assert out == (
        "parser.add_argument('--device_target', type=str, default='CPU', help='x')\n"
        'cfg = {"device_target": "CPU", "name": "Ascend"}\n'
        'context.set_context(device_target="CPU")\n'
    )
    assert count == 3


def test_a_tree_is_rewritten_in_place(rewrite, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "net.py").write_text("import mindspore.nn as nn\n")
    (tmp_path / "config.yaml").write_text("device_target: 'GPU'\n")
    (tmp_path / "notes.txt").write_text("import mindspore\n")
    stats = rewrite.rewrite_tree(tmp_path)
    assert stats == {"files": 2, "names": 1, "device_targets": 1}
    assert (tmp_path / "src" / "net.py").read_text() == "import jisu.nn as nn\n"
    assert (tmp_path / "config.yaml").read_text() == "device_target: 'CPU'\n"
    assert (tmp_path / "notes.txt").read_text() == "import mindspore\n"


TINY_NET = """\
import mindspore.nn as nn
from mindspore import ops


class TinyNet(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 3)
        self.relu = ops.ReLU()

    def construct(self, x):
        return self.fc(self.relu(x) + x)
"""

TINY_DRIVER = """\
import synth

PROJECT = "official/cv/Tiny"
TRAIN_PY = False


def imports(p):
    from src import net

    with open("config.yaml") as f:
        assert f.read() == 'device_target: "CPU"\\n'
    p.net = net


def network(p):
    return p.net.TinyNet()


def inputs(p):
    return synth.tensors(synth.array((2, 4)))


def train(p, steps):
    import jisu as ms
    from jisu import nn

    net = network(p)
    opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = ms.Model(net, loss, opt)
    data = synth.dataset({"x": synth.array((2, 4)), "y": synth.array((2,), "int32", high=3)}, steps)
    p.trained, p.model = net, model
    return synth.model_train(model, data)
"""

BROKEN_DRIVER = """\
PROJECT = "official/cv/Tiny"
TRAIN_PY = False


def imports(p):
    pass


def network(p):
    import jisu.nn

    return jisu.nn.NoSuchLayerAnywhere(3)


def inputs(p):
    return ()
"""


def test_the_harness_runs_a_tiny_project_level_by_level(tmp_path):
    """End to end on a synthetic MindSpore-style project: rewritten, trained, reloaded; a
    driver that hits a missing name stops at forward with the name's area."""
    import json
    import subprocess

    project = tmp_path / "zoo" / "official" / "cv" / "Tiny"
    (project / "src").mkdir(parents=True)
    (project / "src" / "__init__.py").write_text("")
    (project / "src" / "net.py").write_text(TINY_NET)
    (project / "config.yaml").write_text('device_target: "Ascend"\n')
    drivers = tmp_path / "drivers"
    drivers.mkdir()
    (drivers / "tiny.py").write_text(TINY_DRIVER)
    (drivers / "broken.py").write_text(BROKEN_DRIVER)
    out = tmp_path / "results.json"
    cmd = [sys.executable, str(ZOO / "harness.py"), "--zoo", str(tmp_path / "zoo")]
    cmd += ["--drivers", str(drivers), "--all", "--steps", "4", "--json", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=150)
    results = {r["project"]: r for r in json.loads(out.read_text())}
    tiny = results["tiny"]
    assert tiny["reached"] == "reload" and tiny["blocker"] is None
    losses = tiny["levels"]["train"]["losses"]
    assert len(losses) == 4 and losses[-1] < losses[0]
    assert tiny["rewrite"]["names"] == 2 and tiny["rewrite"]["device_targets"] == 1
    broken = results["broken"]
    assert broken["reached"] == "imports"
    assert broken["blocker"]["level"] == "forward"
    assert "NoSuchLayerAnywhere" in broken["blocker"]["message"]
    assert broken["area"] == "nn layer"
