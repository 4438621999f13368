"""Names, parameters and input checks MindSpore 2.10 has and jisu lacked (issue 51): each case
of ``tests/fixtures/ms_checks_names`` runs here on jisu and must give MindSpore's recorded
answer — its value, or an error that is an instance of the built-in classes MindSpore's was
(jisu's may come earlier, when the pipeline is built, and be of its own type as well)."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pytest

import jisu
import jisu.common.dtype as mstype
import jisu.dataset as ds
import jisu.dataset.transforms as transforms
import jisu.dataset.vision as vision
from jisu.dataset.core.error_types import PipelineTypeError, PipelineValueError

FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "ms_checks_names" / "expected.json").read_text()
)

#: cases jisu refuses when the pipeline is built (before any row), where MindSpore fails
#: while it runs: the class jisu raises there
AT_BUILD = {
    "DistributedSampler offset > num_shards": PipelineValueError,
    "shuffle after sync_wait": PipelineValueError,
    "sampler list of floats": TypeError,
    "sampler list of str": TypeError,
    "SubsetSampler of floats": TypeError,
}


def run_case(code: str) -> tuple[BaseException | None, object]:
    scope = {"ds": ds, "vision": vision, "transforms": transforms, "mstype": mstype}
    scope.update(np=np, json=json)
    exec(FIXTURE["setup"], scope)
    try:
        exec(code, scope)
    except Exception as exc:
        return exc, None
    return None, scope.get("result")


def comparable(value: object) -> object:
    """A result as the fixture holds it (JSON), objects by their class name."""
    try:
        return json.loads(json.dumps(value))
    except TypeError:
        return f"<{type(value).__name__}>"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(FIXTURE["cases"]))
def test_case_gives_mindspores_answer(name):
    case = FIXTURE["cases"][name]
    raised, result = run_case(case["code"])
    if "raises" in case:
        assert raised is not None, f"MindSpore raises {case['raises']}; jisu gave {result!r}"
        for type_name in case["raises"]:
            assert isinstance(raised, getattr(builtins, type_name)), (name, type(raised).__mro__)
        return
    assert raised is None, f"MindSpore runs {case['code']!r}; jisu raised {raised!r}"
    if isinstance(case["value"], str) and case["value"].startswith("<"):
        return  # an object: MindSpore's class is not jisu's
    assert comparable(result) == case["value"]


@pytest.mark.parametrize("name", sorted(AT_BUILD))
def test_refused_when_built(name):
    """The pipeline is refused before it yields a row: ``rows(...)`` never starts."""
    code = FIXTURE["cases"][name]["code"].replace("result = rows(", "result = (")
    raised, _ = run_case(code)
    assert isinstance(raised, AT_BUILD[name]), raised


def test_errors_name_the_op_and_argument():
    with pytest.raises(ValueError, match=r"DistributedSampler: offset .*Received: offset=5"):
        ds.DistributedSampler(num_shards=4, shard_id=0, offset=5)
    with pytest.raises(ValueError, match=r"map: operation 0 is a class, not an op"):
        ds.NumpySlicesDataset([1, 2]).map(vision.HWC2CHW)
    with pytest.raises(ValueError, match=r"Compose: transforms\[1\] is a class"):
        transforms.Compose([vision.HWC2CHW(), vision.RandomHorizontalFlip])
    with pytest.raises(PipelineTypeError, match=r"HorizontalFlip: expected an image of numbers"):
        vision.HorizontalFlip()(np.array([["a", "b"]]))
    with pytest.raises(PipelineTypeError, match=r"ToTensor: .*Received dtype int64"):
        vision.ToTensor()(np.ones((2, 2, 3), np.int64))
    with pytest.raises(TypeError, match=r"missing a required argument: 'data_type'; .*output_t"):
        transforms.TypeCast(output_type="float32")
    with pytest.raises(TypeError, match=r"sampler: every index must be an int.*indices\[0\]=1.5"):
        ds.NumpySlicesDataset(list(range(10)), sampler=[1.5, 7])
    with pytest.raises(TypeError, match=r"output_numpy must be a bool"):
        ds.NumpySlicesDataset([1, 2]).create_tuple_iterator(output_numpy=1)


def test_string_dtype_names():
    """``mindspore.string`` at MindSpore's paths, NumPy's ``str`` for the pipeline."""
    assert jisu.string is mstype.string is jisu.dtype.string
    assert np.dtype(mstype.string) == np.dtype(str)
    assert repr(mstype.string) == "String"


def test_text_typecast_stays_out_of_batch_assembly():
    """A cast to text has no fixed width: a batch of texts of several lengths keeps them
    whole (the batch is not assembled into a width fixed by the first)."""
    data = ds.NumpySlicesDataset([np.array("a"), np.array("abcdef")], ["t"], shuffle=False)
    data = data.map(transforms.TypeCast(mstype.string)).batch(2)
    (batch,) = next(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert batch.tolist() == ["a", "abcdef"]


def test_disable_sync_lets_rows_pass_in_later_epochs():
    data = ds.NumpySlicesDataset(np.arange(4), ["x"], shuffle=False)
    data = data.sync_wait(condition_name="c").batch(2)
    data.disable_sync()
    for _ in range(2):  # no sync_update at all: nothing waits
        got = [r[0].tolist() for r in data.create_tuple_iterator(num_epochs=1, output_numpy=True)]
        assert got == [[0, 1], [2, 3]]


def test_config_setters_name_the_setter_and_argument():
    with pytest.raises(ValueError, match=r"set_callback_timeout: timeout .*Received: timeout=0"):
        ds.config.set_callback_timeout(0)
    with pytest.raises(TypeError, match=r"set_autotune_interval: interval must be an int"):
        ds.config.set_autotune_interval(20.5)
    with pytest.raises(TypeError, match=r"set_sending_batches: batch_num .*batch_num=True"):
        ds.config.set_sending_batches(True)
    with pytest.raises(RuntimeError, match=r"set_enable_autotune: filepath is a directory"):
        ds.config.set_enable_autotune(True, ".")
    assert ds.config.get_enable_autotune() is False  # a refused file changes nothing
