"""The import rewrite of ``jisu port`` (and the zoo harness): ``mindspore`` becomes ``jisu``
where it starts a dotted path in code, and nowhere else; device targets become the one asked."""

import ast

from jisu.porting import rewrite

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


def test_imports_aliases_and_dotted_uses_are_rewritten_strings_and_comments_are_not():
    out, count = rewrite.rewrite_source(SOURCE)
    assert out == EXPECTED
    assert count == 12
    ast.parse(out)  # still Python


def test_text_without_mindspore_or_that_does_not_tokenize_is_left_alone():
    assert rewrite.rewrite_source("import torch\n") == ("import torch\n", 0)
    broken = 'import mindspore\nx = """never closed\n'
    assert rewrite.rewrite_source(broken) == (broken, 0)


def test_line_endings_and_columns_are_kept():
    out, count = rewrite.rewrite_source("import mindspore as ms\r\nms.x = mindspore.y\r\n")
    assert (out, count) == ("import jisu as ms\r\nms.x = jisu.y\r\n", 2)


def test_device_targets_in_yaml_and_python_become_cpu():
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


def test_a_tree_is_rewritten_in_place(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "net.py").write_text("import mindspore.nn as nn\n")
    (tmp_path / "config.yaml").write_text("device_target: 'GPU'\n")
    (tmp_path / "notes.txt").write_text("import mindspore\n")
    stats = rewrite.rewrite_tree(tmp_path)
    assert stats == {"files": 2, "names": 1, "device_targets": 1}
    assert (tmp_path / "src" / "net.py").read_text() == "import jisu.nn as nn\n"
    assert (tmp_path / "config.yaml").read_text() == "device_target: 'CPU'\n"
    assert (tmp_path / "notes.txt").read_text() == "import mindspore\n"
