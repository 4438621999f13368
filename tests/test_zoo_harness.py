"""The zoo harness (benchmarks/zoo/harness.py) end to end on a synthetic project; needs no
zoo snapshot. Its import rewrite is jisu's (tests/porting/test_rewrite.py)."""

import sys
from pathlib import Path

ZOO = Path(__file__).resolve().parents[1] / "benchmarks" / "zoo"


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
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=540)  # hang guard
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
