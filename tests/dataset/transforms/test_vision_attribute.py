"""``jisu.dataset.transforms.vision`` as an attribute, as MindSpore 2.10 has it (issue 51, bug
5), against its answers recorded by tests/fixtures/ms_transforms_vision/make_fixtures.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import jisu.dataset.transforms as transforms
import jisu.dataset.vision as vision

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ms_transforms_vision"
MS = json.loads((FIXTURES / "attribute.json").read_text())

# asked in a fresh interpreter: in this one another test may have imported the subpackage,
# which sets the attribute whatever the package does
QUESTION = textwrap.dedent(
    """
    import json
    import jisu.dataset.transforms as t
    import jisu.dataset.vision as v
    print(json.dumps({
        "in dir": "vision" in dir(t),
        "same names": all(getattr(t.vision, n) is getattr(v, n) for n in v.__all__),
        "Decode is vision.Decode": t.vision.Decode is v.Decode,
    }))
    """
)


def test_mindspore_fixture():
    assert MS["mindspore"].startswith("2.10")
    # MindSpore 2.10: the attribute is there after importing transforms alone, but the
    # statement ``import mindspore.dataset.transforms.vision`` fails (jisu keeps that 0.x path)
    assert MS["in vars"] and MS["in dir"] and MS["is mindspore.dataset.vision"]
    assert MS["import statement"] == "ModuleNotFoundError"


@pytest.mark.timeout(120)
def test_transforms_vision_is_an_attribute_without_importing_it():
    """``import jisu.dataset.transforms as t; t.vision.Decode`` works as in MindSpore 2.10,
    with no import of the subpackage first, and holds jisu.dataset.vision's objects."""
    done = subprocess.run(
        [sys.executable, "-c", QUESTION], capture_output=True, text=True, timeout=110, check=False
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert answers == {
        "in dir": MS["in dir"],
        "same names": True,
        "Decode is vision.Decode": MS["Decode is vision.Decode"],
    }


def test_other_missing_attributes_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        transforms.no_such_name  # noqa: B018
    assert not hasattr(transforms, "text")  # as MindSpore 2.10's transforms
    assert transforms.vision.Decode is vision.Decode
